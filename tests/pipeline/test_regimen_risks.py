"""The discharge regimen's risks, each a Needs review line a physician checks before signing."""

from __future__ import annotations

from pipeline.evidence.model import EvidenceState
from pipeline.evidence.summary import Sentence
from pipeline.settings import PipelineSettings
from pipeline.summarizing.evidence_summary import summarize_evidence
from smartapp.jobs.evidence import evidence_from_fhir
from tests import fhir_fixtures as fx

FULL = {"dose": "1 tablet", "frequency": (1, 1, "d"), "route": "oral"}


def going_home(request_id: str, name: str, **kwargs: object) -> dict:
    options = FULL | kwargs
    return fx.medication_request(request_id, name, encounter_id=fx.ENCOUNTER_ID, **options)  # type: ignore[arg-type]


def creatinine(when: str = "2024-03-04T08:00:00+00:00") -> dict:
    """A creatinine in its range: the renal function a stay that starts a drug measures."""
    range_ = {"referenceRange": [{"low": {"value": 0.6}, "high": {"value": 1.2}}]}
    return fx.observation("cr", "Creatinine", 0.9, "mg/dL", loinc="2160-0", when=when) | range_


def risks(state: EvidenceState) -> list[str]:
    return [
        flag.reason
        for flag in state.flags_for_review
        if flag.code in ("regimen_risk", "stop_proposed")
    ]


def stay_evidence(*resources: dict) -> EvidenceState:
    """The evidence of a stay holding ``resources``, under the default settings."""
    return evidence_from_fhir(fx.stay(*resources), settings=PipelineSettings())


def risks_in(record: dict) -> list[str]:
    """The regimen risks of a hand-built record's evidence, for the tests that read no more."""
    return risks(evidence_from_fhir(record, settings=PipelineSettings()))


def needs_review_sentences(state: EvidenceState) -> list[Sentence]:
    summary = summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())
    return summary.section("needs_review").sentences


def needs_review(state: EvidenceState) -> list[str]:
    return [sentence.text for sentence in needs_review_sentences(state)]


def assert_supported_by_the_checker(starts: tuple[str, ...], *resources: dict) -> None:
    """The stay's Needs review holds one line opening with each of ``starts``, and the checker
    supports every one: a risk line states only what its evidence holds."""
    state = stay_evidence(*resources)
    lines = [s for s in needs_review_sentences(state) if s.text.startswith(starts)]
    assert len(lines) == len(starts)
    assert all(s.verdict == "supported" for s in lines), [
        (s.text, s.review_reasons()) for s in lines
    ]


def inr(obs_id: str, value: float, when: str) -> dict:
    return fx.observation(obs_id, "INR", value, "{INR}", loinc="6301-6", when=when)


def test_an_anticoagulant_with_an_antiplatelet_or_nsaid_is_a_bleeding_risk() -> None:
    state = stay_evidence(
        going_home("w", "warfarin sodium 5 MG Oral Tablet"),
        going_home("c", "clopidogrel 75 MG Oral Tablet"),
        going_home("n", "naproxen 250 MG Oral Tablet"),
        inr("i", 2.4, "2024-03-05T08:00:00+00:00"),
    )
    assert risks(state) == [
        "Bleeding risk at discharge, an anticoagulant with an antiplatelet or NSAID: warfarin "
        "sodium 5 MG Oral Tablet; clopidogrel 75 MG Oral Tablet; naproxen 250 MG Oral Tablet: "
        "confirm the combination is intended, and for how long"
    ]
    assert any(line.startswith("Bleeding risk at discharge") for line in needs_review(state))


def test_warfarin_with_no_recent_inr_asks_for_one_and_names_what_sets_the_goal() -> None:
    valve = fx.condition("valve", "Mechanical heart valve prosthesis present")
    old_inr = inr("old", 2.1, "2024-02-01T08:00:00+00:00")  # before the stay: not recent
    state = stay_evidence(going_home("w", "warfarin sodium 5 MG Oral Tablet"), valve, old_inr)
    (reason,) = risks(state)
    assert reason.startswith(
        "warfarin sodium 5 MG Oral Tablet at discharge with no recent INR in the stay: check the "
        "INR and state the INR goal (the record names what sets its goal: Mechanical heart valve"
    )
    with_inr = stay_evidence(
        going_home("w", "warfarin sodium 5 MG Oral Tablet"),
        inr("i", 2.8, "2024-03-04T08:00:00+00:00"),
    )
    assert risks(with_inr) == []


def test_an_antithrombotic_after_a_fall_in_old_age_is_flagged_and_not_in_younger_patients() -> None:
    def record(birth: str) -> dict:
        patient = fx.patient() | {"birthDate": birth}
        stay = fx.encounter() | {"reasonCode": [{"text": "Fall from bed"}]}
        apixaban = going_home("a", "apixaban 5 MG Oral Tablet")
        return fx.bundle(patient, stay, apixaban)

    old = evidence_from_fhir(record("1927-01-01"), settings=PipelineSettings())
    assert risks(old) == [
        "apixaban 5 MG Oral Tablet at discharge for a 97-year-old admitted after a fall: weigh "
        "the bleeding risk"
    ]
    assert risks_in(record("1960-01-01")) == []


def test_an_opioid_without_a_duration_and_a_cardiovascular_drug_as_needed_are_flagged() -> None:
    state = stay_evidence(
        going_home("o", "oxycodone hydrochloride 5 MG Oral Tablet"),
        going_home("m", "metoprolol tartrate 25 MG Oral Tablet")
        | {
            "dosageInstruction": [
                {
                    "asNeededBoolean": True,
                    "route": {"text": "oral"},
                    "doseAndRate": [{"doseQuantity": {"value": 1, "unit": "tablet"}}],
                }
            ]
        },
    )
    assert risks(state) == [
        "oxycodone hydrochloride 5 MG Oral Tablet at discharge with no duration: state how long "
        "it is to be taken",
    ]
    (doubt,) = [f.reason for f in state.flags_for_review if f.code == "schedule_in_doubt"]
    assert doubt == (
        "metoprolol tartrate 25 MG Oral Tablet at discharge as needed, though a cardiovascular "
        "drug is taken on a schedule: confirm the instruction"
    )


def test_a_cardiovascular_drugs_line_asks_for_its_schedule_and_never_reads_as_needed() -> None:
    as_needed = {"dosageInstruction": [{"asNeededBoolean": True, "text": "Take as needed."}]}
    state = stay_evidence(
        going_home("m", "metoprolol tartrate 25 MG Oral Tablet") | as_needed,
        going_home("o", "oxycodone hydrochloride 5 MG Oral Tablet") | as_needed,
    )
    summary = summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())
    lines = {s.text.split(" (")[0]: s for s in summary.section("medications").sentences}
    heart = lines["NEW, TO CONFIRM: metoprolol tartrate 25 MG Oral Tablet"]
    assert 'schedule to confirm (ordered "as needed")' in heart.text
    assert "Take as needed" not in heart.text and "(as needed" not in heart.text
    assert [flag.code for flag in heart.flags] == ["schedule_in_doubt"]
    (opioid,) = [line for name, line in lines.items() if "oxycodone" in name]
    assert "(as needed" in opioid.text


def test_a_loop_diuretic_as_needed_is_a_heart_drug_whose_schedule_is_asked() -> None:
    """ESC 2021: a loop diuretic's dose is set and adjusted to congestion; "as needed" with no
    trigger or dose is not an instruction."""
    as_needed = {"dosageInstruction": [{"asNeededBoolean": True, "text": "Take as needed."}]}
    state = stay_evidence(going_home("f", "Furosemide 40 MG Oral Tablet") | as_needed)
    assert [f.reason for f in state.flags_for_review if f.code == "schedule_in_doubt"] == [
        "Furosemide 40 MG Oral Tablet at discharge as needed, though a cardiovascular drug is "
        "taken on a schedule: confirm the instruction"
    ]


def test_cardiovascular_drugs_as_needed_are_one_line_and_a_doubt_on_each_drug() -> None:
    """One cause, one line: three drugs ordered "as needed" are one Needs review line naming
    each, carrying each drug's flag, and supported by the checker; each drug's own line in the
    list still says its doubt."""
    as_needed = {"dosageInstruction": [{"asNeededBoolean": True, "text": "Take as needed."}]}
    names = ["atenolol 25 MG Oral Tablet", "atorvastatin 40 MG Oral Tablet"]
    state = stay_evidence(*(going_home(f"d{i}", name) | as_needed for i, name in enumerate(names)))
    (line,) = [s for s in needs_review_sentences(state) if "as needed" in s.text]
    assert line.text == (
        "Cardiovascular drugs at discharge as needed, though a cardiovascular drug is taken on a "
        "schedule: atenolol 25 MG Oral Tablet; atorvastatin 40 MG Oral Tablet: confirm the "
        "instruction for each."
    )
    assert [f.code for f in line.flags] == ["schedule_in_doubt"] * 2
    # The line states each drug's flag, so the draft does not print them again beside it.
    assert line.review_reasons() == ""
    assert line.verdict == "supported"
    summary = summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())
    listed = [s for s in summary.section("medications").sentences if "as needed" in s.text]
    assert len(listed) == 2 and all(s.flags for s in listed)


def test_old_orders_to_confirm_as_needed_share_a_line_that_says_if_continued() -> None:
    """Orders last written years before the stay are to confirm, not discharge drugs: their
    shared line says "if continued", as each of their flags does; the drug ordered in the stay
    keeps its own "at discharge" line."""
    as_needed = {"dosageInstruction": [{"asNeededBoolean": True, "text": "Take as needed."}]}
    old = [
        fx.medication_request(f"o{i}", name, authored="2001-01-31T10:00:00Z") | as_needed
        for i, name in enumerate(
            ["propranolol hydrochloride 40 MG Oral Tablet", "digoxin 0.125 MG Oral Tablet"]
        )
    ]
    state = stay_evidence(*old, going_home("n", "atorvastatin 40 MG Oral Tablet") | as_needed)
    lines = [s.text for s in needs_review_sentences(state) if " as needed" in s.text]
    assert lines == [
        "Cardiovascular drugs if continued as needed, though a cardiovascular drug is taken on a "
        "schedule: propranolol hydrochloride 40 MG Oral Tablet; digoxin 0.125 MG Oral Tablet: "
        "confirm the instruction for each.",
        "atorvastatin 40 MG Oral Tablet at discharge as needed, though a cardiovascular drug is "
        "taken on a schedule: confirm the instruction.",
    ]


def test_drugs_to_dose_for_the_kidneys_are_flagged_at_a_low_egfr_only() -> None:
    def record(egfr: float) -> dict:
        return fx.stay(
            going_home("m", "metformin hydrochloride 500 MG Oral Tablet"),
            going_home("s", "simvastatin 20 MG Oral Tablet"),
            fx.observation(
                "e", "eGFR", egfr, "mL/min", loinc="33914-3", when="2024-03-04T08:00:00+00:00"
            ),
        )

    assert risks_in(record(13)) == [
        "eGFR 13 mL/min on 2024-03-04: review the dose of metformin hydrochloride 500 MG Oral "
        "Tablet for kidney function"
    ]
    assert risks_in(record(62)) == []


def test_every_risk_line_is_supported_by_the_checker() -> None:
    """Flags are sentences of the draft too: each number they state is in their evidence."""
    assert_supported_by_the_checker(
        ("Bleeding", "warfarin", "eGFR"),
        going_home("w", "warfarin sodium 5 MG Oral Tablet"),
        going_home("c", "clopidogrel 75 MG Oral Tablet"),
        going_home("m", "metformin hydrochloride 500 MG Oral Tablet"),
        fx.observation(
            "e", "eGFR", 13, "mL/min", loinc="33914-3", when="2024-03-04T08:00:00+00:00"
        ),
    )


def test_an_nsaid_with_an_antiplatelet_is_flagged_unless_the_stomach_is_protected() -> None:
    aspirin = going_home("a", "aspirin 81 MG Oral Tablet")
    naproxen = going_home("n", "Naproxen sodium 220 MG Oral Tablet")
    state = stay_evidence(aspirin, naproxen)
    assert risks(state) == [
        "Bleeding risk at discharge, an NSAID with an antiplatelet and no proton pump inhibitor: "
        "Naproxen sodium 220 MG Oral Tablet; aspirin 81 MG Oral Tablet: confirm the NSAID is "
        "needed, and protect the stomach if it is"
    ]
    protected = going_home("p", "pantoprazole 40 MG Delayed Release Oral Tablet")
    protected_state = stay_evidence(aspirin, naproxen, protected)
    assert risks(protected_state) == []
    alone = stay_evidence(naproxen)
    assert risks(alone) == []


def test_an_ace_inhibitor_beside_an_arb_carries_the_duplication_on_both_lines() -> None:
    """Neither line reads as settled: each status asks for the confirmation its flag names."""
    state = stay_evidence(
        going_home("a", "lisinopril 20 MG Oral Tablet"),
        going_home("b", "losartan potassium 50 MG Oral Tablet"),
        going_home("c", "amlodipine 5 MG Oral Tablet"),
    )
    summary = summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())
    flagged = {
        s.text.split(" (")[0]: [f.code for f in s.flags]
        for s in summary.section("medications").sentences
    }
    assert flagged["NEW, TO CONFIRM: lisinopril 20 MG Oral Tablet"] == ["therapeutic_duplication"]
    assert flagged["NEW, TO CONFIRM: losartan potassium 50 MG Oral Tablet"] == [
        "therapeutic_duplication"
    ]
    assert flagged["NEW: amlodipine 5 MG Oral Tablet"] == []


def test_a_potassium_raising_drug_is_flagged_at_a_high_potassium_only() -> None:
    """ACE inhibitors, ARBs and potassium-sparing diuretics are reviewed when the stay's latest
    potassium is above 5.0 mmol/L (ACC/AHA/HFSA 2022, KDIGO 2024); the flag names the value."""

    def record(potassium: float) -> dict:
        return fx.stay(
            going_home("l", "lisinopril 10 MG Oral Tablet"),
            going_home("s", "spironolactone 25 MG Oral Tablet"),
            going_home("a", "amlodipine 5 MG Oral Tablet"),
            fx.observation(
                "k0", "Potassium", 4.2, "mmol/L", loinc="2823-3", when="2024-03-02T08:00:00+00:00"
            ),
            fx.observation(
                "k1", "Potassium", potassium, "mmol/L", loinc="2823-3",
                when="2024-03-04T08:00:00+00:00",
            ),
            creatinine(),
        )  # fmt: skip

    assert risks_in(record(5.4)) == [
        "Potassium 5.4 mmol/L on 2024-03-04 is above the level at which drugs that raise "
        "potassium are reviewed: review lisinopril 10 MG Oral Tablet; spironolactone 25 MG Oral "
        "Tablet"
    ]
    assert risks_in(record(4.8)) == []


def test_insulin_or_a_secretagogue_is_flagged_at_a_low_hba1c_or_a_low_glucose() -> None:
    """A glucose below 70 mg/dL in the stay, or an HbA1c below 6.5 % in the six months before
    discharge (ADA Standards of Care 2024), with a drug that can cause hypoglycaemia."""

    def record(
        *results: dict, drug: str = "insulin glargine 100 UNT/ML Injectable Solution"
    ) -> dict:
        return fx.stay(
            going_home("i", drug), going_home("m", "metformin 500 MG Oral Tablet"), *results
        )

    low_hba1c = fx.observation(
        "h", "Hemoglobin A1c", 5.9, "%", loinc="4548-4", when="2024-01-20T08:00:00+00:00"
    )
    low_glucose = fx.observation(
        "g", "Glucose", 62, "mg/dL", loinc="2345-7", when="2024-03-03T06:00:00+00:00"
    )
    assert risks_in(record(low_hba1c)) == [
        "insulin glargine 100 UNT/ML Injectable Solution at discharge with HbA1c 5.9 % on "
        "2024-01-20, below the level at which such drugs are reduced: a risk of hypoglycaemia; "
        "review the dose"
    ]
    both = risks_in(record(low_hba1c, low_glucose, drug="glipizide 5 MG Oral Tablet"))
    # A sulfonylurea at 73 is a Beers line of its own (test_inappropriate_drugs).
    assert [reason for reason in both if not reason.startswith("Potentially")] == [
        "glipizide 5 MG Oral Tablet at discharge with HbA1c 5.9 % on 2024-01-20, below the level "
        "at which such drugs are reduced and glucose 62 mg/dL on 2024-03-03 in the stay: a risk "
        "of hypoglycaemia; review the dose"
    ]
    normal = fx.observation(
        "h", "Hemoglobin A1c", 7.4, "%", loinc="4548-4", when="2024-01-20T08:00:00+00:00"
    )
    assert risks_in(record(normal)) == []
    metformin_only = fx.stay(
        going_home("m", "metformin 500 MG Oral Tablet"), low_hba1c, low_glucose
    )
    assert risks_in(metformin_only) == []


def test_the_laboratory_risk_lines_are_supported_by_the_checker() -> None:
    """They state only the record's numbers (the value and its date), never the table's limit."""
    assert_supported_by_the_checker(
        ("Potassium", "insulin", "Systolic"),
        going_home("l", "lisinopril 10 MG Oral Tablet"),
        going_home("i", "insulin glargine 100 UNT/ML Injectable Solution"),
        fx.observation(
            "k", "Potassium", 5.4, "mmol/L", loinc="2823-3", when="2024-03-04T08:00:00+00:00"
        ),
        fx.observation(
            "g", "Glucose", 62, "mg/dL", loinc="2345-7", when="2024-03-03T06:00:00+00:00"
        ),
        fx.observation(
            "bp", "Systolic blood pressure", 84, "mm[Hg]", loinc="8480-6",
            when="2024-03-04T06:00:00+00:00", category="vital-signs",
        ),
    )  # fmt: skip


def test_drugs_that_lower_blood_pressure_are_flagged_at_a_low_systolic_pressure() -> None:
    """The latest systolic pressure of the stay or of the 30 days before discharge, below
    90 mmHg (ACC/AHA/HFSA 2022, ESC 2021), with drugs that lower blood pressure going home; one
    taken before the stay counts (it may be the last the record holds)."""

    def record(systolic: float, when: str = "2024-02-27T10:00:00+00:00") -> dict:
        return fx.stay(
            going_home("c", "carvedilol 25 MG Oral Tablet"),
            going_home("f", "Furosemide 40 MG Oral Tablet"),
            going_home("s", "simvastatin 20 MG Oral Tablet"),
            fx.observation(
                "bp", "Systolic blood pressure", systolic, "mm[Hg]", loinc="8480-6", when=when,
                category="vital-signs",
            ),
        )  # fmt: skip

    assert risks_in(record(77)) == [
        "Systolic blood pressure 77 mm[Hg] on 2024-02-27 is below the level at which drugs that "
        "lower blood pressure are reviewed: review carvedilol 25 MG Oral Tablet; Furosemide 40 "
        "MG Oral Tablet"
    ]
    assert risks_in(record(118)) == []
    long_ago = record(77, when="2023-06-01T10:00:00+00:00")
    assert risks_in(long_ago) == []


def test_an_opioid_with_a_benzodiazepine_is_flagged() -> None:
    state = stay_evidence(
        going_home("o", "oxycodone hydrochloride 5 MG Oral Tablet"),
        going_home("l", "lorazepam 1 MG Oral Tablet"),
    )
    assert (
        "An opioid with a benzodiazepine: oxycodone hydrochloride 5 MG Oral Tablet; lorazepam 1 MG "
        "Oral Tablet: a risk of respiratory depression; confirm both are needed"
    ) in risks(state)


def test_a_potassium_of_the_week_before_a_stay_that_measured_none_is_the_current_one() -> None:
    """No potassium in the stay; one of 5.4 mmol/L five days before admission (another
    encounter's) still decides; one of a month before does not."""

    def record(when: str) -> dict:
        before = fx.observation("k", "Potassium", 5.4, "mmol/L", loinc="2823-3", when=when) | {
            "encounter": {"reference": "Encounter/clinic"},
            "referenceRange": [],
        }
        renal = creatinine(when) | {"encounter": {"reference": "Encounter/clinic"}}
        return fx.stay(going_home("l", "lisinopril 10 MG Oral Tablet"), before, renal)

    week = evidence_from_fhir(record("2024-02-25T08:00:00+00:00"), settings=PipelineSettings())
    assert risks(week) == [
        "Potassium 5.4 mmol/L on 2024-02-25 is above the level at which drugs that raise "
        "potassium are reviewed: review lisinopril 10 MG Oral Tablet"
    ]
    # A month before is no current value, nor a recent one for the drug started now.
    month = evidence_from_fhir(record("2024-01-25T08:00:00+00:00"), settings=PipelineSettings())
    assert risks(month) == [
        "lisinopril 10 MG Oral Tablet started in this stay, with no recent renal function and no "
        "recent electrolytes on record: check renal function and electrolytes within one to two "
        "weeks of the start"
    ]


def test_a_value_in_range_that_a_safety_rule_cites_is_never_listed_as_normal() -> None:
    """A potassium of 5.05 mmol/L is within 3.5 to 5.1 and above the 5.0 at which lisinopril is
    reviewed: Key results give it a line of its own, never the normal list its flag contradicts."""
    potassium = fx.observation(
        "k", "Potassium", 5.05, "mmol/L", loinc="2823-3", when="2024-03-04T08:00:00+00:00"
    ) | {"referenceRange": [{"low": {"value": 3.5}, "high": {"value": 5.1}}]}
    sodium = fx.observation(
        "na", "Sodium", 140, "mmol/L", loinc="2951-2", when="2024-03-04T08:00:00+00:00"
    ) | {"referenceRange": [{"low": {"value": 135}, "high": {"value": 145}}]}
    state = stay_evidence(
        going_home("l", "lisinopril 10 MG Oral Tablet"), potassium, sodium, creatinine()
    )
    assert len(risks(state)) == 1
    summary = summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())
    lines = [s.text for s in summary.section("results").sentences]
    (normal,) = [line for line in lines if line.startswith("Other results within")]
    assert "Sodium" in normal and "Potassium" not in normal
    assert "Potassium: 5.1 mmol/L on 2024-03-04 (reference 3.5 to 5.1)." in lines


def test_a_potassium_raising_drug_started_with_no_recent_renal_function_asks_for_a_check() -> None:
    """ACC/AHA/HFSA 2022 and KDIGO 2021: renal function and potassium are checked within one to
    two weeks of starting an ACE inhibitor, an ARB or a potassium-sparing diuretic. Started in
    the stay with neither measured, the draft asks for both, as it asks for an INR with
    warfarin; with one measured, it names the other; a drug continued from home asks nothing.
    The line is supported by the checker."""
    started = going_home("l", "lisinopril 10 MG Oral Tablet")
    assert risks(stay_evidence(started)) == [
        "lisinopril 10 MG Oral Tablet started in this stay, with no recent renal function and no "
        "recent electrolytes on record: check renal function and electrolytes within one to two "
        "weeks of the start"
    ]
    assert_supported_by_the_checker(("lisinopril 10 MG Oral Tablet started",), started)
    potassium = fx.observation(
        "k", "Potassium", 4.2, "mmol/L", loinc="2823-3", when="2024-03-04T08:00:00+00:00"
    )
    (one_missing,) = risks(stay_evidence(started, potassium))
    assert "with no recent renal function on record" in one_missing
    assert risks(stay_evidence(started, potassium, creatinine())) == []
    home = fx.medication_statement("h", "lisinopril 10 MG Oral Tablet")
    assert risks(stay_evidence(home, started)) == []
