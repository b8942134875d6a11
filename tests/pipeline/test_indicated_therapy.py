"""What a stay's conditions call for at discharge, and what they rule out, on hand-built records:
each rule fires where its indication is, and stays silent where it is not."""

from __future__ import annotations

from typing import Any

import pytest

from pipeline.evidence.model import EvidenceState
from pipeline.settings import PipelineSettings
from pipeline.summarizing.evidence_summary import summarize_evidence
from smartapp.jobs.evidence import evidence_from_fhir
from tests import fhir_fixtures as fx

FULL = {"dose": "1 tablet", "frequency": (1, 1, "d"), "route": "oral"}


def going_home(request_id: str, name: str) -> dict[str, Any]:
    return fx.medication_request(request_id, name, encounter_id=fx.ENCOUNTER_ID, **FULL)  # type: ignore[arg-type]


def state_of(*resources: dict[str, Any], born: str = "1950-06-15") -> EvidenceState:
    record = fx.bundle(fx.patient() | {"birthDate": born}, fx.encounter(), *resources)
    return evidence_from_fhir(record, settings=PipelineSettings())


RISKS = frozenset({"regimen_risk", "expected_drug_missing", "stop_proposed"})


def risks(state: EvidenceState) -> list[str]:
    return [flag.reason for flag in state.flags_for_review if flag.code in RISKS]


@pytest.mark.parametrize(
    ("condition", "flag", "treating"),
    [
        (
            fx.condition("t", "History of renal transplant (situation)"),
            "No immunosuppressant at discharge after solid-organ transplant (History of renal "
            "transplant): confirm it was considered, or why it is not given",
            "tacrolimus 1 MG Oral Capsule",
        ),
        (
            # Coded decades ago and still active: an epilepsy until resolved (ILAE 2014).
            fx.condition("e", "Epilepsy (disorder)", encounter_id=None, onset="1986-05-20"),
            "No antiseizure drug at discharge after a diagnosis of epilepsy (Epilepsy): confirm it "
            "was considered, or why it is not given",
            "levetiracetam 500 MG Oral Tablet",
        ),
    ],
    ids=["transplant", "epilepsy"],
)
def test_a_lifelong_condition_going_home_without_its_maintenance_drug_is_flagged(
    condition: dict[str, Any], flag: str, treating: str
) -> None:
    """A transplant recipient with no immunosuppressant, an active epilepsy with no antiseizure
    drug: the draft asks; a drug of the group answers it."""
    flagged = risks(state_of(condition, going_home("a", "amlodipine 5 MG Oral Tablet")))
    assert flagged == [flag]
    assert risks(state_of(condition, going_home("k", treating))) == []


def test_a_history_of_seizure_a_febrile_seizure_or_a_resolved_epilepsy_asks_nothing() -> None:
    old = {"encounter_id": None, "onset": "1986-05-20T10:00:00+00:00"}
    history = fx.condition("h", "History of seizure (situation)", **old)
    febrile = fx.condition("f", "Febrile seizure (finding)", **old)
    resolved = fx.condition(
        "r", "Epilepsy (disorder)", clinical="resolved", abatement="1999-01-01", **old
    )
    assert risks(state_of(history, febrile, resolved)) == []


def test_an_ace_inhibitor_or_arb_is_expected_after_an_infarction_with_hypertension_only() -> None:
    """An ACE inhibitor, or an ARB, is started after an acute coronary syndrome in a patient with
    hypertension, diabetes, heart failure or kidney disease (NSTE-ACS and STEMI guidelines,
    class I): with none going home the line names both conditions; an ARB answers it; without
    such a condition on the list nothing is asked."""
    infarct = fx.condition("mi", "Acute non-ST segment elevation myocardial infarction (disorder)")
    pressure = fx.condition("htn", "Essential hypertension (disorder)", encounter_id=None)
    secondary = [
        going_home("a", "aspirin 81 MG Oral Tablet"),
        going_home("s", "atorvastatin 80 MG Oral Tablet"),
        going_home("b", "metoprolol succinate 50 MG Extended Release Oral Tablet"),
        going_home("n", "Nitroglycerin 0.4 MG Sublingual Tablet"),
    ]

    def renin_angiotensin(*resources: dict[str, Any]) -> list[str]:
        return [reason for reason in risks(state_of(*resources)) if "ARB" in reason]

    assert renin_angiotensin(infarct, pressure, *secondary) == [
        "No ACE inhibitor or ARB at discharge after an acute coronary syndrome with "
        "hypertension, diabetes, heart failure or kidney disease (Acute non-ST segment elevation "
        "myocardial infarction; Essential hypertension): confirm it was considered, or why it is "
        "not given"
    ]
    valsartan = going_home("v", "valsartan 80 MG Oral Tablet")
    assert renin_angiotensin(infarct, pressure, *secondary, valsartan) == []
    assert renin_angiotensin(infarct, *secondary) == []


def test_a_drug_the_record_calls_for_is_said_missing_in_the_list_itself() -> None:
    """The list is what is copied: the missing immunosuppressant is said there too, after the
    drugs going home, not only in Needs review; a list that has one says nothing."""
    recipient = fx.condition("t", "History of renal transplant (situation)")

    def medications(*resources: dict[str, Any]) -> list[str]:
        state = state_of(recipient, *resources)
        summary = summarize_evidence(
            state, salience=lambda t: ([], []), settings=PipelineSettings()
        )
        return [s.text for s in summary.section("medications").sentences]

    assert medications(going_home("a", "amlodipine 5 MG Oral Tablet"))[1:] == [
        "For this list, from Needs review: no immunosuppressant at discharge after solid-organ "
        "transplant (History of renal transplant); confirm before signing."
    ]
    assert not any(
        "immunosuppressant" in line
        for line in medications(going_home("k", "tacrolimus 1 MG Oral Capsule"))
    )


def test_awaiting_a_transplant_is_not_having_one() -> None:
    waiting = fx.condition("w", "Awaiting transplantation of kidney (situation)")
    assert risks(state_of(waiting, going_home("a", "amlodipine 5 MG Oral Tablet"))) == []


def test_secondary_prevention_after_an_infarction_names_each_missing_class() -> None:
    infarction = fx.condition("mi", "Acute ST segment elevation myocardial infarction (disorder)")
    treated = fx.procedure("angio", "Coronary angiography (procedure)")
    assessed = fx.procedure("ecg", "Electrocardiographic procedure (procedure)")
    only_aspirin = state_of(
        infarction, treated, assessed, going_home("a", "aspirin 81 MG Oral Tablet")
    )
    assert risks(only_aspirin) == [
        "No statin and no beta blocker at discharge after myocardial infarction or coronary "
        "revascularization (Acute ST segment elevation myocardial infarction): confirm it was "
        "considered, or why it is not given",
        "No short-acting nitrate at discharge after an acute coronary syndrome (Acute ST segment "
        "elevation myocardial infarction): confirm it was considered, or why it is not given",
    ]
    complete = state_of(
        infarction,
        treated,
        assessed,
        going_home("a", "aspirin 81 MG Oral Tablet"),
        going_home("s", "atorvastatin 80 MG Oral Tablet"),
        going_home("b", "metoprolol tartrate 25 MG Oral Tablet"),
        going_home("n", "Nitroglycerin 0.4 MG/ACTUAT Mucosal Spray"),
    )
    assert risks(complete) == []


def test_an_old_infarction_on_the_problem_list_asks_for_nothing() -> None:
    """Coded years before the stay: a past event. (Coded during the stay, a "History of" is
    what the stay did as the record implies it: see the bypass below.)"""
    old = fx.condition(
        "old",
        "History of myocardial infarction (situation)",
        encounter_id=None,
        onset="2015-04-02T09:00:00+00:00",
    )
    assert risks(state_of(old, going_home("a", "amlodipine 5 MG Oral Tablet"))) == []


@pytest.mark.parametrize(
    ("reason", "about", "flagged", "flag", "answered"),
    [
        pytest.param(
            "Dependent drug abuse (disorder)",
            "substance use",
            "tramadol hydrochloride 50 MG Oral Tablet",
            "An opioid or benzodiazepine after an admission for substance use (Dependent drug "
            "abuse): tramadol hydrochloride 50 MG Oral Tablet: proposed stop, unless it is needed: "
            "confirm the indication, the supply and an overdose plan",
            "buprenorphine 2 MG Sublingual Tablet",
            id="opioids after a substance use admission are flagged but treatment is not",
        ),
        # CDC 2022 recommendation 8: naloxone is offered to a patient with a history of overdose
        # or of a substance use disorder.
        pytest.param(
            "Overdose (disorder)",
            "overdose",
            "amlodipine 5 MG Oral Tablet",
            "No naloxone or other opioid overdose rescue drug at discharge after an overdose or a "
            "drug use disorder (Overdose): confirm it was considered, or why it is not given",
            "naloxone hydrochloride 4 MG/ACTUAT Nasal Spray",
            id="naloxone is asked for after an overdose and its order answers it",
        ),
    ],
)
def test_a_drug_use_admission_flags_the_discharge_until_its_treatment_is_ordered(
    reason: str, about: str, flagged: str, flag: str, answered: str
) -> None:
    stay_for = fx.condition("reason", reason)
    asked = state_of(stay_for, going_home("flagged", flagged))
    assert [r for r in risks(asked) if about in r] == [flag]
    treated = state_of(stay_for, going_home("answered", answered))
    assert [r for r in risks(treated) if about in r] == []


def test_prasugrel_past_the_labels_age_limit_is_flagged_with_the_patients_age() -> None:
    prasugrel = going_home("p", "prasugrel 10 MG Oral Tablet")
    old = risks(state_of(prasugrel, born="1940-01-01"))
    assert [r for r in old if "year-old" in r] == [
        "prasugrel 10 MG Oral Tablet at discharge for a 84-year-old: past the label's age limit, "
        "where it is generally not recommended (bleeding risk): confirm the indication or "
        "consider another P2Y12 inhibitor"
    ]
    assert [r for r in risks(state_of(prasugrel)) if "year-old" in r] == []


def test_prasugrel_for_a_patient_who_reaches_the_age_limit_within_its_course_is_flagged() -> None:
    """Discharged 2024-03-02 at 74, 75 on 2024-05-01: the twelve months of dual antiplatelet
    therapy are mostly taken past the label's limit. A 75th birthday beyond the course (the
    default patient's, 2025-06-15) asks nothing."""
    prasugrel = going_home("p", "prasugrel 10 MG Oral Tablet")
    (line,) = [r for r in risks(state_of(prasugrel, born="1949-05-01")) if "year-old" in r]
    assert line.startswith(
        "prasugrel 10 MG Oral Tablet at discharge for a 74-year-old (born 1949-05-01), whose year "
        "of dual antiplatelet therapy after an acute coronary syndrome runs past the label's age "
        "limit"
    )
    assert [r for r in risks(state_of(prasugrel, born="1950-06-15")) if "year-old" in r] == []


def test_a_home_opioid_held_or_stopped_after_a_substance_use_admission_is_flagged() -> None:
    reason = fx.condition("d", "Dependent drug abuse (disorder)")
    home = fx.medication_statement("s", "tramadol hydrochloride 50 MG Oral Tablet")
    flagged = [r for r in risks(state_of(reason, home)) if "substance use" in r]
    assert flagged == [
        "An opioid or benzodiazepine after an admission for substance use (Dependent drug abuse): "
        "tramadol hydrochloride 50 MG Oral Tablet (at home, held or stopped?): proposed stop, "
        "unless it is needed: confirm the indication, the supply and an overdose plan"
    ]


def home_list(*drugs: str) -> dict[str, Any]:
    """The H&P of the stay, its medication list naming ``drugs``."""
    return fx.document_reference("hp", fx.attachment("# Medications\n" + "; ".join(drugs) + "\n"))


LIGATION = fx.procedure("p", "Ligation of bilateral fallopian tubes (procedure)")


@pytest.mark.parametrize(
    ("drug", "where"),
    [
        ("levora 0.15/30 28 day pack", "at home, held or stopped?"),
        ("kyleena 19.5 mg intrauterine system", "in place from before the stay"),
    ],
)
def test_a_hormonal_contraceptive_after_a_tubal_ligation_is_proposed_stopped(
    drug: str, where: str
) -> None:
    """ACOG 2019: a tubal ligation is contraception; the pill, or the device in place, is kept
    only for another reason, which the physician confirms."""
    (line,) = [r for r in risks(state_of(LIGATION, home_list(drug))) if "contraceptive" in r]
    assert line == (
        "A hormonal contraceptive after an admission for sterilization (Ligation of bilateral "
        f"fallopian tubes): {drug} ({where}): no longer needed for contraception once the tubes "
        "are ligated: proposed stop (or removal), unless it is kept for another reason such as "
        "heavy menstrual bleeding or cycle control: confirm"
    )


def test_a_sterilization_requested_and_not_done_asks_nothing_of_the_contraceptive() -> None:
    requested = fx.condition("r", "Sterilization requested (situation)")
    state = state_of(requested, home_list("levora 0.15/30 28 day pack"))
    assert not any("contraceptive" in r for r in risks(state))


def test_assessing_substance_use_is_not_an_admission_for_it() -> None:
    """A routine screening procedure names substance use without being the stay's problem."""
    assessed = fx.procedure("as", "Assessment of substance use (procedure)")
    state = state_of(assessed, going_home("o", "tramadol hydrochloride 50 MG Oral Tablet"))
    assert [r for r in risks(state) if "substance use" in r or "overdose" in r] == []


def test_an_expected_drug_that_is_only_an_old_order_to_confirm_is_asked_about() -> None:
    """After an infarction, sublingual nitroglycerin is prescribed at discharge; a 1997 order
    not renewed since is no answer until someone confirms it continues."""
    infarction = fx.condition("mi", "Acute non-ST segment elevation myocardial infarction")
    old = fx.medication_request(
        "n",
        "Nitroglycerin 0.4 MG/ACTUAT Mucosal Spray",
        authored="1997-12-09",
        **FULL,  # type: ignore[arg-type]
    )
    asked = [r for r in risks(state_of(infarction, old)) if "nitrate" in r]
    assert asked == [
        "The only short-acting nitrate after an acute coronary syndrome (Acute non-ST segment "
        "elevation myocardial infarction) is an old order to confirm: Nitroglycerin 0.4 "
        "MG/ACTUAT Mucosal Spray: confirm that it continues, or why not"
    ]
    renewed = going_home("n", "Nitroglycerin 0.4 MG/ACTUAT Mucosal Spray")
    assert [r for r in risks(state_of(infarction, renewed)) if "nitrate" in r] == []


def test_prasugrel_without_a_pci_in_the_episode_asks_for_the_procedure() -> None:
    """Prasugrel's indication is an acute coronary syndrome managed with PCI."""
    prasugrel = going_home("p", "prasugrel 10 MG Oral Tablet")
    without = [r for r in risks(state_of(prasugrel)) if "PCI" in r]
    assert without == [
        "prasugrel 10 MG Oral Tablet at discharge with no PCI recorded in this episode: its "
        "indication is an acute coronary syndrome managed with PCI: confirm the procedure, or "
        "the choice of P2Y12 inhibitor"
    ]
    stented = fx.procedure("pci", "Percutaneous coronary intervention (procedure)")
    assert [r for r in risks(state_of(prasugrel, stented)) if "PCI" in r] == []


def test_a_doubt_on_a_drugs_own_line_is_its_headline_without_the_drugs_name() -> None:
    """On prasugrel's line the flag says what is in doubt, not "prasugrel 10 MG Oral Tablet"
    again (a flag's reason never repeats its sentence); Needs review keeps the whole question,
    with the drug it names."""
    prasugrel = going_home("p", "prasugrel 10 MG Oral Tablet")
    summary = summarize_evidence(
        state_of(prasugrel), salience=lambda text: ([], []), settings=PipelineSettings()
    )
    (line,) = [s for s in summary.section("medications").sentences if "prasugrel" in s.text]
    assert line.review_reasons() == "at discharge with no PCI recorded in this episode"
    (review,) = [s for s in summary.section("needs_review").sentences if "PCI" in s.text]
    assert review.text.startswith("prasugrel 10 MG Oral Tablet at discharge with no PCI recorded")


@pytest.mark.parametrize(
    ("procedure", "asked"),
    [
        (None, True),
        ("Percutaneous coronary intervention (procedure)", False),
        ("Coronary angiography (procedure)", False),
        ("Thrombolysis of coronary artery (procedure)", False),
        ("Plain X-ray of chest (procedure)", True),
    ],
    ids=["nothing recorded", "a PCI", "angiography", "fibrinolysis", "a chest X-ray only"],
)
def test_an_acute_infarction_with_no_record_of_its_treatment_asks_how_it_was_treated(
    procedure: str | None, asked: bool
) -> None:
    """A STEMI discharged with nothing of its reperfusion on record: how it was treated is asked,
    since the drugs at discharge depend on it; an old infarction on the problem list is not."""
    infarction = fx.condition("mi", "Acute ST segment elevation myocardial infarction (disorder)")
    done = [fx.procedure("p", procedure)] if procedure else []
    found = [r for r in risks(state_of(infarction, *done)) if "how it was treated" in r]
    assert found == (
        [
            "An acute myocardial infarction (Acute ST segment elevation myocardial infarction) "
            "with no coronary angiography, PCI, bypass or fibrinolysis recorded in this episode: "
            "state how it was treated (reperfusion, or an invasive or medical strategy) and what "
            "the drugs at discharge are for"
        ]
        if asked
        else []
    )
    old = fx.condition("old", "History of myocardial infarction (situation)")
    assert not [r for r in risks(state_of(old)) if "how it was treated" in r]


@pytest.mark.parametrize(
    ("recorded", "asked"),
    [
        ([], True),
        ([fx.procedure("ecg", "Electrocardiographic procedure (procedure)")], False),
        (
            [
                fx.observation(
                    "tn",
                    "Troponin I.cardiac [Mass/volume] in Serum or Plasma",
                    3.2,
                    "ng/L",
                    loinc="89579-7",
                    when="2024-03-02T08:00:00+00:00",
                )
            ],
            False,
        ),
    ],
    ids=["nothing recorded", "an ECG", "a troponin"],
)
def test_an_acute_infarction_with_no_troponin_ecg_or_ejection_fraction_asks_for_them(
    recorded: list[dict[str, Any]], asked: bool
) -> None:
    """The Fourth Universal Definition (2018) diagnoses an infarction by its troponin, with an
    ECG at first contact; its ejection fraction is measured before discharge (ACC/AHA, class
    I). Readers of three infarction drafts found none of them and said so: the draft says it
    first. A result of the episode answers the rule as a procedure does."""
    infarction = fx.condition("mi", "Acute ST segment elevation myocardial infarction (disorder)")
    found = [r for r in risks(state_of(infarction, *recorded)) if "troponin" in r]
    assert found == [MARKERS_ASKED] * asked


MARKERS_ASKED = (
    "An acute myocardial infarction (Acute ST segment elevation myocardial infarction) with no "
    "troponin, ECG or ejection fraction recorded in this episode: how the infarction was "
    "diagnosed and the heart's function at discharge are not documented: add them, or say "
    "where they are"
)


def social_history(text: str) -> dict[str, Any]:
    return fx.document_reference("n", fx.attachment(f"# Social History\n{text}\n"))


@pytest.mark.parametrize(
    ("social", "named"),
    [
        ("Patient has a documented history of opioid addiction.", "opioid"),
        ("Patient uses heroin daily.", "heroin"),
        # A denial, or a relative's addiction, is not the patient's opioid use.
        ("Patient denies opioid use.", None),
        ("Patient's brother has a history of opioid addiction.", None),
        ("Patient drinks alcohol daily.", None),
    ],
)
def test_a_drug_use_admission_with_opioids_named_asks_for_opioid_use_disorder_medication(
    social: str, named: str | None
) -> None:
    """ASAM 2020 and SAMHSA TIP 63: medication for opioid use disorder (buprenorphine, methadone
    or naltrexone) is offered to every patient with the disorder; withdrawal management alone
    is not treatment. Synthea's codes say only "Dependent drug abuse"; the notes name the
    opioid, so the rule reads them beside the codes."""
    reason = fx.condition("reason", "Dependent drug abuse (disorder)")
    noted = state_of(reason, social_history(social))
    untreated = [r for r in risks(noted) if "disorder medication" in r]
    expected = (
        "No opioid use disorder medication at discharge after an admission for opioid use "
        f"disorder (Dependent drug abuse; {named} named in the notes): confirm it was considered, "
        "or why it is not given"
    )
    assert untreated == ([expected] if named else [])
    treated = state_of(
        reason,
        social_history(social),
        going_home("b", "buprenorphine 8 MG / naloxone 2 MG Sublingual Tablet"),
    )
    assert [r for r in risks(treated) if "disorder medication" in r] == []


def test_opioids_named_in_the_notes_without_a_drug_use_admission_ask_nothing() -> None:
    noted = state_of(
        fx.condition("reason", "Acute bronchitis (disorder)"),
        social_history("Patient has a documented history of opioid addiction."),
    )
    assert [r for r in risks(noted) if "disorder medication" in r] == []


def bypass_history(onset: str) -> dict[str, Any]:
    return fx.condition("h", "History of coronary artery bypass grafting (situation)", onset=onset)


def test_a_bypass_the_record_implies_calls_for_secondary_prevention_as_a_recorded_one() -> None:
    """ "History of coronary artery bypass grafting" recorded on the day of admission, with no
    procedure: the draft says the stay did the bypass as the record implies it, so the
    antiplatelet, statin and beta blocker after a bypass are asked about as after a recorded
    one. A history coded years before the stay is a past event, and asks nothing."""
    home = going_home("a", "aspirin 81 MG Oral Tablet")
    during = risks(state_of(bypass_history("2024-03-01T12:00:00+00:00"), home))
    assert during == [
        "No statin and no beta blocker at discharge after myocardial infarction or coronary "
        "revascularization (coronary artery bypass grafting): confirm it was considered, or why "
        "it is not given"
    ]
    assert risks(state_of(bypass_history("2012-05-01T12:00:00+00:00"), home)) == []


def test_the_history_of_the_stays_own_infarction_adds_no_second_indication() -> None:
    """ "History of myocardial infarction" coded the day of the infarction is its aftermath: the
    lines name the infarction once."""
    infarction = fx.condition("mi", "Acute non-ST segment elevation myocardial infarction")
    aftermath = fx.condition(
        "h", "History of myocardial infarction (situation)", onset="2024-03-01T12:00:00+00:00"
    )
    for line in risks(state_of(infarction, aftermath)):
        assert "(Acute non-ST segment elevation myocardial infarction)" in line, line


def test_expected_groups_that_are_only_orders_to_confirm_share_one_line() -> None:
    """After the bypass, aspirin and a statin ordered three weeks before admission that the
    H&P's list (none) leaves out: one line asks about both, and calls them orders, not old
    ones; the beta blocker that none of them is, is its own question."""
    hp = fx.document_reference("hp", fx.attachment("# Medications\nNo Active Medications.\n"))
    weeks_before = [
        fx.medication_request(i, name, authored="2024-02-09", **FULL)  # type: ignore[arg-type]
        for i, name in (
            ("a", "aspirin 81 MG Oral Tablet"),
            ("s", "Simvastatin 20 MG Oral Tablet"),
        )
    ]
    flagged = risks(state_of(bypass_history("2024-03-01T12:00:00+00:00"), hp, *weeks_before))
    assert [r for r in flagged if "orders to confirm" in r] == [
        "The only aspirin and statin after myocardial infarction or coronary revascularization "
        "(coronary artery bypass grafting) are orders to confirm: aspirin 81 MG Oral Tablet; "
        "Simvastatin 20 MG Oral Tablet: confirm that each continues, or why not"
    ]
    assert any(r.startswith("No beta blocker at discharge") for r in flagged)


def test_a_p2y12_inhibitor_alone_after_a_bypass_asks_for_aspirin_by_name() -> None:
    """Aspirin is the antiplatelet after coronary revascularization or an infarction (ACC/AHA
    2011 CABG, 2021 revascularization and 2025 ACS guidelines); clopidogrel alone is the
    alternative for a patient who cannot take it, which the physician says. A reader found a
    draft that never said aspirin was missing. The line names the drug it finds absent, which
    the checker lets pass in a sentence a rule wrote."""
    clopidogrel = going_home("c", "Clopidogrel 75 MG Oral Tablet")
    statin = going_home("s", "atorvastatin 80 MG Oral Tablet")
    beta = going_home("b", "metoprolol succinate 50 MG Extended Release Oral Tablet")
    state = state_of(bypass_history("2024-03-01T12:00:00+00:00"), clopidogrel, statin, beta)
    assert [r for r in risks(state) if r.startswith("No ")] == [
        "No aspirin at discharge after myocardial infarction or coronary revascularization "
        "(coronary artery bypass grafting): confirm it was considered, or why it is not given"
    ]
    summary = summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())
    (line,) = [s for s in summary.section("needs_review").sentences if "No aspirin" in s.text]
    assert line.verdict == "supported"
    aspirin = going_home("a", "aspirin 81 MG Oral Tablet")
    answered = state_of(bypass_history("2024-03-01T12:00:00+00:00"), clopidogrel, aspirin)
    assert not any("aspirin" in r for r in risks(answered))


def contraception_visit(visit_id: str, when: str) -> dict[str, Any]:
    """An office visit for contraception care (a quarterly injection, with no drug order)."""
    return fx.encounter(visit_id, start=when, end=when, class_code="AMB") | {
        "reasonCode": [{"text": "Contraception care (regime/therapy)"}]
    }


def test_contraception_care_visits_of_the_year_before_a_sterilization_are_asked_about() -> None:
    """A stay coded as a sterilization ends the contraception care of earlier visits too (ACOG
    2019): the line names the visits with the last one's date, beside any contraceptive drug.
    A visit more than a year before the stay is not care still given."""
    stay = fx.encounter() | {"reasonCode": [{"text": "Sterilization requested (situation)"}]}
    recent = contraception_visit("v2", "2024-01-15T09:00:00+00:00")
    older = contraception_visit("v1", "2022-01-10T09:00:00+00:00")
    record = fx.bundle(fx.patient(), stay, LIGATION, recent, older)
    state = evidence_from_fhir(record, settings=PipelineSettings())
    (line,) = [r for r in risks(state) if "contracept" in r]
    assert line.startswith(
        "A hormonal contraceptive after an admission for sterilization (Ligation of bilateral "
        "fallopian tubes): Contraception care visits before the stay (the last on 2024-01-15): "
        "no longer needed for contraception once the tubes are ligated"
    )
    summary = summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())
    (review,) = [s for s in summary.section("needs_review").sentences if "Contraception" in s.text]
    assert review.verdict == "supported"
    record = fx.bundle(fx.patient(), stay, LIGATION, older)
    state = evidence_from_fhir(record, settings=PipelineSettings())
    assert not any("contracept" in r for r in risks(state))


def test_the_pull_reads_the_earlier_visits_of_a_sterilization_stay() -> None:
    from fhir_mapping.pull_plan import Search, earlier_record_searches

    stay = {"reasonCode": [{"text": "Sterilization requested (situation)"}]}
    assert earlier_record_searches("p", stay) == [Search("Encounter", {"patient": "Patient/p"})]
