"""What the notes name that the principal diagnosis's coded term leaves unsaid is said on its
line: the opioid of a stay coded "Dependent drug abuse" (ICD-10-CM classifies substance use by
substance; five readers asked that the diagnosis name it). A denial or a relative's use names
nothing, and a term that names its substance already asks nothing."""

from __future__ import annotations

from typing import Any

import pytest

from pipeline.settings import PipelineSettings
from pipeline.summarizing.evidence_summary import summarize_evidence
from smartapp.jobs.evidence import evidence_from_fhir
from tests import fhir_fixtures as fx

DRUG_ABUSE = "Dependent drug abuse (disorder)"


def social_history(text: str) -> dict[str, Any]:
    return fx.document_reference("n", fx.attachment(f"# Social History\n{text}\n"))


def principal_line(reason: str, *resources: dict[str, Any]) -> tuple[str, set[str]]:
    stay = fx.encounter() | {"reasonReference": [{"reference": "Condition/reason"}]}
    record = fx.bundle(fx.patient(), stay, fx.condition("reason", reason), *resources)
    state = evidence_from_fhir(record, settings=PipelineSettings())
    summary = summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())
    line = summary.section("diagnoses").sentences[0]
    cited = {ref.resource for i in line.citations for ref in state.fact(i).sources}
    return line.text, cited


def test_the_opioid_the_notes_name_is_said_on_the_drug_abuse_line_quoting_them() -> None:
    text, cited = principal_line(
        DRUG_ABUSE, social_history("Patient has a documented history of opioid addiction.")
    )
    assert text == (
        "Dependent drug abuse: principal diagnosis, the reason for the stay, onset 2024-03-01, "
        'active; the notes name the substance: opioid ("Patient has a documented history of '
        'opioid addiction").'
    )
    assert "DocumentReference/n" in cited


@pytest.mark.parametrize(
    ("reason", "social"),
    [
        (DRUG_ABUSE, "Patient denies opioid use."),
        (DRUG_ABUSE, "Patient's brother has a history of opioid addiction."),
        (DRUG_ABUSE, "Patient drinks alcohol daily."),
        ("Opioid dependence (disorder)", "Patient has a documented history of opioid addiction."),
        ("Essential hypertension (disorder)", "Patient uses heroin daily."),
    ],
    ids=["a denial", "a relative", "no drug named", "named already", "another diagnosis"],
)
def test_nothing_is_added_where_the_notes_name_nothing_or_the_term_says_it(
    reason: str, social: str
) -> None:
    text, _ = principal_line(reason, social_history(social))
    assert "the notes name" not in text
