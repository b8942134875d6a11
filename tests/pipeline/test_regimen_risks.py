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


def test_drugs_the_kidneys_rule_out_or_dose_are_flagged_at_a_low_egfr_only() -> None:
    """Below the limit, a drug to avoid (metformin: contraindicated below an eGFR of 30) is
    asked to be held or stopped, and a drug whose dose is reduced (gabapentin) has its dose
    reviewed: "review the dose" of a drug no dose of which suits the kidney is the wrong ask."""

    def record(egfr: float) -> dict:
        return fx.stay(
            going_home("m", "metformin hydrochloride 500 MG Oral Tablet"),
            going_home("g", "gabapentin 300 MG Oral Capsule"),
            going_home("s", "simvastatin 20 MG Oral Tablet"),
            fx.observation(
                "e", "eGFR", egfr, "mL/min", loinc="33914-3", when="2024-03-04T08:00:00+00:00"
            ),
        )

    assert risks_in(record(13)) == [
        "eGFR 13 mL/min on 2024-03-04: metformin hydrochloride 500 MG Oral Tablet, avoided at "
        "this kidney function: hold or stop it, or say why it continues; review the dose of "
        "gabapentin 300 MG Oral Capsule for kidney function"
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


def test_an_ace_inhibitor_beside_an_arb_is_one_choice_that_carries_the_duplication() -> None:
    """Neither drug reads as settled: the list offers one of the two, to confirm, with the
    duplication's flag; a drug beside them keeps its own line."""
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
    assert flagged["ONE OF THESE, TO CONFIRM"] == ["therapeutic_duplication"]
    assert flagged["NEW: amlodipine 5 MG Oral Tablet"] == []
    assert not any(text.startswith("NEW, TO CONFIRM: lisinopril") for text in flagged)
