"""What a stay's conditions call for at discharge, and what they rule out, on hand-built records:
each rule fires where its indication is, and stays silent where it is not."""

from __future__ import annotations

from typing import Any

import pytest

from pipeline.evidence.model import EvidenceState
from pipeline.evidence.summary import Summary
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


# A "History of renal transplant" recorded years before the stay, at no encounter of it.
RECIPIENT_SINCE: dict[str, Any] = {"encounter_id": None, "onset": "2010-05-01T10:00:00+00:00"}
RISKS = frozenset({"regimen_risk", "expected_drug_missing", "stop_proposed"})


def risks(state: EvidenceState) -> list[str]:
    return [flag.reason for flag in state.flags_for_review if flag.code in RISKS]


@pytest.mark.parametrize(
    ("condition", "flag", "treating"),
    [
        (
            # A recipient of years ago: maintenance immunosuppression, for life.
            fx.condition("t", "History of renal transplant (situation)", **RECIPIENT_SINCE),
            "No immunosuppressant at discharge after solid-organ transplant (History of renal "
            "transplant): confirm it was considered, or why it is not given",
            "tacrolimus 1 MG Oral Capsule",
        ),
        (
            # Coded decades ago and still active: an epilepsy until resolved (ILAE 2014).
            fx.condition("e", "Epilepsy (disorder)", encounter_id=None, onset="1986-05-20"),
            # "With": a lifelong condition's line never reads as a new diagnosis.
            "No antiseizure drug at discharge with an active epilepsy on the problem list "
            "(Epilepsy): confirm it was considered, or why it is not given",
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
    drugs going home, its flag asking for the decision, so that the line reads whole once Needs
    review (which says it first) is cleared at signing; a list that has one says nothing."""
    recipient = fx.condition("t", "History of renal transplant (situation)", **RECIPIENT_SINCE)

    def medications(*resources: dict[str, Any]) -> list[str]:
        return [s.text for s in drafted(*resources).section("medications").sentences]

    def drafted(*resources: dict[str, Any]) -> Summary:
        state = state_of(recipient, *resources)
        return summarize_evidence(state, salience=lambda t: ([], []), settings=PipelineSettings())

    summary = drafted(going_home("a", "amlodipine 5 MG Oral Tablet"))
    missing = summary.section("medications").sentences[1:]
    assert [(line.text, line.review_reasons()) for line in missing] == [
        (
            "No immunosuppressant at discharge after solid-organ transplant (History of renal "
            "transplant).",
            "confirm it was considered, or why it is not given",
        )
    ]
    assert [line.text for line in summary.section("needs_review").sentences][:1] == [
        "No immunosuppressant at discharge after solid-organ transplant (History of renal "
        "transplant): confirm it was considered, or why it is not given."
    ]
    assert not any(
        "immunosuppressant" in line
        for line in medications(going_home("k", "tacrolimus 1 MG Oral Capsule"))
    )


def test_a_transplant_in_this_stay_asks_for_infection_prophylaxis_beside_immunosuppression() -> (
    None
):
    """KDIGO 2009 (13.3.1, 13.2.1): after a kidney transplant, Pneumocystis prophylaxis for three
    to six months and cytomegalovirus prophylaxis unless donor and recipient are seronegative.
    A transplant recorded in the stay asks for both on the immunosuppressant's line; the three
    drugs answer it; a recipient of years ago is asked for immunosuppression only."""
    in_stay = fx.condition("t", "History of renal transplant (situation)")
    assert risks(state_of(in_stay, going_home("a", "amlodipine 5 MG Oral Tablet"))) == [
        "No immunosuppressant, no Pneumocystis prophylaxis and no cytomegalovirus prophylaxis at "
        "discharge after solid-organ transplant (History of renal transplant): confirm each was "
        "considered, or why it is not given"
    ]
    treated = [
        going_home("k", "tacrolimus 1 MG Oral Capsule"),
        going_home("s", "sulfamethoxazole 400 MG / trimethoprim 80 MG Oral Tablet"),
        going_home("v", "valganciclovir 450 MG Oral Tablet"),
    ]
    assert risks(state_of(in_stay, *treated)) == []
    assert risks(state_of(in_stay, *treated[:2])) == [
        "No cytomegalovirus prophylaxis at discharge after solid-organ transplant (History of "
        "renal transplant): confirm it was considered, or why it is not given"
    ]
    years_ago = fx.condition("t", "History of renal transplant (situation)", **RECIPIENT_SINCE)
    assert risks(state_of(years_ago, treated[0])) == []


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
        "revascularization (Acute ST segment elevation myocardial infarction): confirm each was "
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


def test_an_old_infarction_on_the_problem_list_asks_only_what_coronary_disease_needs() -> None:
    """Coded years before the stay: a past event, so nothing of the months after an infarction
    (a beta blocker, a nitrate, aspirin by name); what chronic coronary disease needs for life,
    a statin and an antithrombotic, is asked. (Coded during the stay, a "History of" is what the
    stay did as the record implies it: see the bypass below.)"""
    old = fx.condition(
        "old",
        "History of myocardial infarction (situation)",
        encounter_id=None,
        onset="2015-04-02T09:00:00+00:00",
    )
    assert risks(state_of(old, going_home("a", "amlodipine 5 MG Oral Tablet"))) == [
        "No statin at discharge with chronic coronary disease on the problem list (History of "
        "myocardial infarction): confirm it was considered, or why it is not given",
        "No antiplatelet at discharge with a myocardial infarction or a coronary "
        "revascularization on the problem list (History of myocardial infarction): confirm it "
        "was considered, or why it is not given",
    ]


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
