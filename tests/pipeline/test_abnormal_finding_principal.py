"""An abnormal test finding as the stay's reason is what a test showed, not the disease
(ICD-10-CM Official Guidelines, section II.A): the related problem on the list leads the
diagnoses, flagged as taken from it; with none, the principal diagnosis is not documented."""

from __future__ import annotations

from typing import Any

from pipeline.evidence.summary import Summary
from pipeline.settings import PipelineSettings
from pipeline.summarizing.evidence_summary import summarize_evidence
from smartapp.jobs.evidence import evidence_from_fhir
from tests import fhir_fixtures as fx

FINDING = "Abnormal findings diagnostic imaging heart+coronary circulat (finding)"


def summary_of(*resources: dict[str, Any]) -> Summary:
    stay = fx.encounter() | {"reasonCode": [{"text": FINDING}]}
    state = evidence_from_fhir(
        fx.bundle(fx.patient(), stay, *resources), settings=PipelineSettings()
    )
    return summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())


def finding() -> dict[str, Any]:
    """The finding as the earlier visit recorded it, still active."""
    return fx.condition("f", FINDING, encounter_id=None, onset="2024-02-20T10:00:00Z")


def ischaemic_heart_disease() -> dict[str, Any]:
    return fx.condition(
        "ihd", "Ischemic heart disease (disorder)", encounter_id=None, onset="2024-02-01"
    )


def test_the_heart_disease_the_imaging_finding_is_about_leads_what_was_done_for_it() -> None:
    """Imaging of the coronary circulation, ischaemic heart disease on the list and a "History
    of coronary artery bypass grafting" recorded on day one: the disease leads, then the bypass
    the record implies, then what the stay was coded as; an osteoporosis is not named."""
    bypass = fx.condition(
        "h", "History of coronary artery bypass grafting (situation)", onset="2024-03-01T12:00:00Z"
    )
    bones = fx.condition("op", "Osteoporosis (disorder)", encounter_id=None, onset="2024-02-01")
    summary = summary_of(finding(), ischaemic_heart_disease(), bones, bypass)
    first = summary.section("diagnoses").sentences[0]
    assert first.text == (
        "Ischemic heart disease (on the problem list since 2024-02-01): coronary artery bypass "
        "grafting on 2024-03-01, as the record implies it (see Procedures). The stay is coded "
        "only as Abnormal findings diagnostic imaging heart+coronary circulat."
    )
    assert [flag.code for flag in first.flags] == ["principal_from_problem_list"]
    principal = [s.text for s in summary.section("diagnoses").sentences if "principal" in s.text]
    assert principal == []
    (admitted, *_) = summary.section("hospital_course").sentences
    assert admitted.text.startswith(
        "Admitted on 2024-03-01 (coded as Abnormal findings diagnostic imaging heart+coronary "
        "circulat): coronary artery bypass grafting on 2024-03-01"
    )


def test_an_abnormal_finding_with_no_related_problem_leaves_the_diagnosis_undocumented() -> None:
    """No problem of the heart on the list: the finding is not promoted to a diagnosis; the
    line says what the stay was coded as and is flagged."""
    bones = fx.condition("op", "Osteoporosis (disorder)", encounter_id=None, onset="2024-02-01")
    summary = summary_of(finding(), bones)
    first = summary.section("diagnoses").sentences[0]
    assert first.text.startswith(
        "Principal diagnosis not documented: the stay is coded only as Abnormal findings "
        "diagnostic imaging heart+coronary circulat"
    )
    assert [flag.code for flag in first.flags] == ["principal_not_documented"]


def test_the_finding_itself_is_never_the_problem_it_is_about() -> None:
    """The finding is on the list too, and shares every word of its subject: it is not a
    second candidate that would leave the physician two to choose from."""
    summary = summary_of(finding(), ischaemic_heart_disease())
    first = summary.section("diagnoses").sentences[0]
    assert first.text.startswith("Ischemic heart disease (on the problem list since 2024-02-01)")
