"""What a drug use admission and a sterilization call for at discharge, and what they rule out,
on hand-built records: naloxone and opioid use disorder medication asked for, opioids and
hormonal contraception proposed stopped, and nothing asked where the admission was not for
them."""

from __future__ import annotations

from typing import Any

import pytest

from pipeline.settings import PipelineSettings
from pipeline.summarizing.evidence_summary import summarize_evidence
from smartapp.jobs.evidence import evidence_from_fhir
from tests import fhir_fixtures as fx
from tests.pipeline.diagnoses_support import sections
from tests.pipeline.test_indicated_therapy import going_home, risks, state_of


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


def contraception_visit(visit_id: str, when: str) -> dict[str, Any]:
    """An office visit for contraception care (a quarterly injection, with no drug order)."""
    return fx.encounter(visit_id, start=when, end=when, class_code="AMB") | {
        "reasonCode": [{"text": "Contraception care (regime/therapy)"}]
    }


def test_what_the_last_contraception_care_visit_did_is_said() -> None:
    """ "Contraception care visits" alone read to two readers as hiding the quarterly injection
    given at them: the line names what the last visit did."""
    stay = fx.encounter() | {"reasonCode": [{"text": "Sterilization requested (situation)"}]}
    visit = contraception_visit("v2", "2024-01-15T09:00:00+00:00")
    injection = fx.procedure(
        "im", "Intramuscular injection (procedure)", encounter_id="v2", when="2024-01-15T09:05:00Z"
    )
    state = evidence_from_fhir(
        fx.bundle(fx.patient(), stay, LIGATION, visit, injection), settings=PipelineSettings()
    )
    (line,) = [r for r in risks(state) if "contracept" in r]
    said = (
        "Contraception care visits before the stay (the last on 2024-01-15: intramuscular "
        "injection): no longer needed"
    )
    assert said in line
    assert "Intramuscular" not in " ".join(sections(state)["procedures"])


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
    from fhir_mapping.pull_plan import Search, earlier_record_searches, stay_window

    stay = {
        "reasonCode": [{"text": "Sterilization requested (situation)"}],
        "period": {"start": "2024-03-01T10:00:00+00:00", "end": "2024-03-02T10:00:00+00:00"},
    }
    window = stay_window(stay, 48, 365)
    assert window is not None
    # What the visits did (a quarterly injection) is a procedure of the look-back.
    assert earlier_record_searches("p", stay, window) == [
        Search("Encounter", {"patient": "Patient/p"}),
        Search("Procedure", {"patient": "Patient/p", "date": ["ge2023-03-02", "le2024-03-03"]}),
    ]
