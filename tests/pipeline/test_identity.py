"""Two identifiers on every document: the rules, OCR noise, several names, and a note about
another patient that never becomes evidence."""

from __future__ import annotations

from typing import Any

import pytest
from fhir.resources.R4B.patient import Patient

from fhir_mapping.demographics import chart_identity_of
from launch.identity_patients import DOCUMENT_PATIENTS, OTHER_PATIENT, patient
from pipeline.evidence.model import Page
from pipeline.ingestion.identity import ChartIdentity, check_identity
from pipeline.ingestion.page_identifiers import find_identifiers
from pipeline.settings import PipelineSettings
from pipeline.summarizing.evidence_summary import summarize_evidence
from smartapp.jobs.evidence import evidence_from_fhir
from tests import fhir_fixtures as fx
from tests.chat_doubles import ScriptedChat
from tests.conftest import PDFS


def chart_of(patient: dict[str, Any]) -> ChartIdentity:
    """The chart identity of a Patient given as JSON."""
    return chart_identity_of(Patient.model_validate(patient))


JUSTIN = chart_of(OTHER_PATIENT)  # Justin Norman, 1965-12-28, MRN-00417, male


def pages(*texts: str) -> list[Page]:
    return [Page(number=i, text=t, has_text=True) for i, t in enumerate(texts, start=1)]


def verdict(text: str, chart=JUSTIN) -> str:
    return check_identity(pages(text), chart).verdict


@pytest.mark.parametrize(
    "written",
    ["28/12/1965", "12/28/1965", "1965-12-28", "Dec 28, 1965", "December 28 1965", "28 Dec 1965"],
)
def test_a_date_of_birth_is_read_in_any_common_format(written: str) -> None:
    (found,) = [f for f in find_identifiers(pages(f"DOB: {written}")) if f.kind == "birth_date"]
    assert "1965-12-28" in found.values
    assert verdict(f"Patient Name: Justin Norman\nDOB: {written}") == "match"


@pytest.mark.parametrize(
    "text",
    [
        "Patient Name: Justn Norrnan\nDOB: 28/l2/l965",  # a dropped letter, rn for m, l for 1
        "Patient Name: Justin Norman\nDate of Birth: 28/12/19 65",  # a stray space
        "Name: JUSTIN NORMAN MRN: MRN-0O4l7",  # O for 0 and l for 1 in the record number
    ],
)
def test_ocr_noise_in_identifiers_is_tolerated(text: str) -> None:
    assert verdict(text) == "match"


def test_two_agreeing_identifiers_match_and_one_is_unverified() -> None:
    assert verdict("Justin Norman, born on 28/12/1965, was seen today.") == "match"
    assert verdict("Patient Name: Justin Norman") == "unverified"
    assert verdict("The patient was seen today.") == "unverified"
    check = check_identity(pages("The patient was seen today."), JUSTIN)
    assert check.reason == "no patient identifier found" and check.found == []


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("Patient Name: Justin Norman\nDOB: 03/04/1971", "birth date"),
        ("Patient Name: Justin Norman\nMRN: 5551234", "identifier"),
        ("Patient Name: Martha Collins\nDOB: 28/12/1965", "name"),
        ("Patient Name: Justin Norman\nDOB: 28/12/1965\nSex: Female", "sex"),
    ],
)
def test_one_identifier_naming_someone_else_is_a_mismatch(text: str, kind: str) -> None:
    check = check_identity(pages(text), JUSTIN)
    assert check.verdict == "mismatch"
    assert check.reason.startswith("document may belong to another patient")
    assert kind in check.reason and "(page 1)" in check.reason


def test_where_each_identifier_was_found_is_kept() -> None:
    text = "Referral\nPatient Name: Martha Collins\nDOB: 03/04/1971"
    check = check_identity(pages("cover page", text), JUSTIN)
    by_kind = {found.kind: found for found in check.found}
    name = by_kind["name"]
    assert (name.page, text[name.start : name.end], name.agrees) == (2, "Martha Collins", False)
    birth = by_kind["birth_date"]
    assert text[birth.start : birth.end] == "DOB: 03/04/1971" and birth.agrees is False


def test_a_relatives_or_doctors_name_is_not_the_patients() -> None:
    text = "Patient Name: Justin Norman\nDOB: 28/12/1965\nDoctor Name: Samantha Reyes"
    assert verdict(text) == "match"


def test_the_charts_own_date_among_others_is_not_someone_elses() -> None:
    # A document that contradicts itself (a typo, a relative's date) is not another patient's.
    text = "Patient Name: Justin Norman DOB: 28/12/1965\nJustin Norman, born on 09/03/1966, …"
    assert verdict(text) == "match"


def test_every_name_of_the_chart_counts_maiden_names_and_nicknames() -> None:
    chart = chart_of(
        {
            "resourceType": "Patient",
            "name": [
                {"use": "official", "given": ["Elizabeth", "Beth"], "family": "Smith"},
                {"use": "maiden", "given": ["Elizabeth"], "family": "Jones"},
            ],
            "birthDate": "1950-01-02",
        }
    )
    for name in ("Beth Smith", "Elizabeth Jones", "Smith, Elizabeth"):
        assert verdict(f"Patient Name: {name}\nDOB: 1950-01-02", chart) == "match", name
    assert verdict("Patient Name: Martha Collins\nDOB: 1950-01-02", chart) == "mismatch"


def test_synthea_names_with_digits_are_the_patients_own() -> None:
    chart = chart_of(
        patient(["Susana117", "Guillermina633"], "Espino352", "1991-02-02", gender="female")
    )
    text = "Susana117 Guillermina633 is a 30 year-old hispanic white female."
    assert check_identity(pages(text), chart).found[0].agrees is True
    assert verdict(text, chart) == "unverified"  # a name alone is one identifier


def test_a_note_about_another_patient_is_never_evidence_and_is_reviewed_first() -> None:
    note = (
        "Patient Name: Justin Norman\nDOB: 12/28/1965\n"
        "# Hospital Course\nStarted on warfarin 5 mg daily. Pathology is pending at discharge.\n"
    )
    state = evidence_from_fhir(
        fx.stay(fx.document_reference("d1", fx.attachment(note))), settings=PipelineSettings()
    )
    (document,) = state.documents
    assert document.identity is not None and document.identity.verdict == "mismatch"
    assert not [
        fact for fact in state.all_facts() for ref in fact.sources if ref.document == document.id
    ]
    summary = summarize_evidence(state, settings=PipelineSettings())
    first = summary.section("needs_review").sentences[0]
    assert first.flags[0].code == "wrong_patient_document"
    assert "document may belong to another patient" in first.text
    cited = {ref.document for s in summary.sentences() for c in s.citations
             for ref in state.fact(c).sources}  # fmt: skip
    assert document.id not in cited
    assert "warfarin" not in " ".join(
        s.text for s in summary.sentences() if s.section != "needs_review"
    )


def test_a_note_about_the_chart_patient_is_evidence() -> None:
    note = "Patient Name: Ada Lovelace\nDOB: 06/15/1950\n# Hospital Course\nPathology is pending.\n"
    state = evidence_from_fhir(
        fx.stay(fx.document_reference("d1", fx.attachment(note))), settings=PipelineSettings()
    )
    assert state.documents[0].identity.verdict == "match"
    assert any(
        ref.document == state.documents[0].id for f in state.all_facts() for ref in f.sources
    )


@pytest.mark.shared_data
def test_every_shared_pdf_matches_its_own_chart_and_no_other() -> None:
    from pipeline.ingestion.pdf import read_pdf
    from pipeline.settings import PipelineSettings

    for name, own in DOCUMENT_PATIENTS.items():
        read, _ = read_pdf((PDFS / name).read_bytes(), PipelineSettings())
        readable = [page for page in read if page.has_text]
        assert check_identity(readable, chart_of(own)).verdict != "mismatch", name
        assert check_identity(readable, JUSTIN).verdict == "mismatch", name


def test_the_review_page_shows_each_documents_verdict_and_where_its_identifiers_are() -> None:
    from types import SimpleNamespace

    from pipeline.text.rendering import render
    from smartapp.drafts.pages import workspace_values

    note = "Patient Name: Justin <b>Norman</b>\nDOB: 12/28/1965\n# Hospital Course\nStable.\n"
    state = evidence_from_fhir(
        fx.stay(fx.document_reference("d1", fx.attachment(note))), settings=PipelineSettings()
    )
    summary = summarize_evidence(state, settings=PipelineSettings())
    page = render(
        "app/_review.html.j2",
        draft=SimpleNamespace(id="x", version=1, revision=1, status="preliminary"),
        **workspace_values(summary, state, {}),
        documents=state.documents,
        editable=False,
        edits=[],
        write_back=None,
        message=None,
    )
    row = page.split('id="document-1"', 1)[1].split("</tr>", 1)[0]
    assert 'data-identity="mismatch"' in row and "document may belong to another patient" in row
    assert "page 1, characters" in row and "differs from the chart" in row
    assert "<b>" not in page  # nothing of the note reaches the page as markup
    first_flag = page.split('id="needs-review"', 1)[1].split("</li>", 1)[0]
    assert "document may belong to another patient" in first_flag


def test_a_model_is_never_asked_to_extract_from_another_patients_document() -> None:
    from pipeline.summarizing.extraction import extract_from_notes

    theirs = "Patient Name: Justin Norman\nDOB: 12/28/1965\nStarted on warfarin 5 mg daily.\n"
    ours = "Patient Name: Ada Lovelace\nDOB: 06/15/1950\nPathology is pending.\n"
    state = evidence_from_fhir(
        fx.stay(
            fx.document_reference("theirs", fx.attachment(theirs)),
            fx.document_reference("ours", fx.attachment(ours)),
        ),
        settings=PipelineSettings(),
    )
    backend = ScriptedChat(lambda messages: '{"items": []}')
    extract_from_notes(state, backend)
    assert len(backend.prompts) == 1
    asked = backend.prompts[0][-1]["content"]
    assert "Ada Lovelace" in asked and "Justin" not in asked
