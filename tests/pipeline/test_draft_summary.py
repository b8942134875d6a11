"""The evidence-only summary and the draft Composition bundle built from it."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from functools import cache
from pathlib import Path

import pytest
from fhir.resources.R4B import get_fhir_model_class
from fhir.resources.R4B.bundle import Bundle

from fhir_mapping.composition import SENTENCE_PROVENANCE, TARGET_ELEMENT, draft_bundle
from fhir_mapping.json_values import as_json
from pipeline.checking.checker import numeric_metrics
from pipeline.evidence.model import EvidenceState
from pipeline.evidence.summary import Summary
from pipeline.settings import PipelineSettings
from pipeline.summarizing.evidence_summary import summarize_evidence
from pipeline.summarizing.summary_text import render_markdown
from smartapp.jobs.evidence import evidence_from_fhir
from tests import fhir_fixtures as fx
from tests.conftest import ROOT, synthea_bundles
from tests.pipeline.conftest import default_draft

WHEN = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


XHTML = "{http://www.w3.org/1999/xhtml}"


@cache
def drafted(path: Path) -> tuple[EvidenceState, Summary, dict]:
    state, summary = default_draft(path)
    return state, summary, as_json(draft_bundle(summary, state, WHEN))


def drafted_note(note: str) -> tuple[EvidenceState, Summary]:
    """A stay whose one note is ``note``, drafted keeping every sentence of it (ratio 1): so
    whatever the note holds reaches the draft."""
    state = evidence_from_fhir(
        fx.stay(fx.document_reference("d1", fx.attachment(note))), settings=PipelineSettings()
    )
    return state, summarize_evidence(state, ratio=1.0, settings=PipelineSettings())


def resources_of(bundle: dict, kind: str) -> list[dict]:
    return [e["resource"] for e in bundle["entry"] if e["resource"]["resourceType"] == kind]


@pytest.mark.shared_data
@pytest.mark.parametrize("path", synthea_bundles(), ids=lambda path: path.name[:8])
def test_every_synthea_stay_drafts_a_valid_fully_cited_checked_bundle(path: Path) -> None:
    state, summary, bundle = drafted(path)
    Bundle.model_validate(bundle)
    assert bundle["type"] == "transaction"
    assert all(
        e["fullUrl"].startswith("urn:uuid:") and e["request"]["method"] == "POST"
        for e in bundle["entry"]
    )
    sentences = summary.sentences()
    assert sentences
    fact_ids = {fact.id for fact in state.all_facts()}
    assert all(s.citations and set(s.citations) <= fact_ids for s in sentences)
    precision, rate = numeric_metrics([s.text for s in sentences], [s.checks for s in sentences])
    assert (precision, rate) == (1.0, 0.0)
    assert all(s.verdict == "supported" for s in sentences), [
        (s.text, s.review_reasons()) for s in sentences if s.verdict != "supported"
    ]
    (composition,) = resources_of(bundle, "Composition")
    assert all(
        section["code"]["coding"][0]["system"] == "http://loinc.org"
        for section in composition["section"]
    )


@pytest.mark.shared_data
def test_every_sentence_has_its_provenance_extension_and_each_section_a_provenance() -> None:
    _state, summary, bundle = drafted(synthea_bundles()[7])
    (composition,) = resources_of(bundle, "Composition")
    assert composition["status"] == "preliminary"
    assert composition["type"]["coding"][0]["code"] == "18842-5"
    assert composition["meta"]["security"][0]["code"] == "AIAST"
    assert "AI DRAFT" in composition["title"]
    (device,) = resources_of(bundle, "Device")
    device_urn = next(e["fullUrl"] for e in bundle["entry"] if e["resource"] is device)
    assert composition["author"] == [{"reference": device_urn}]
    provenances = resources_of(bundle, "Provenance")
    assert len(provenances) == len(composition["section"])
    for section, provenance in zip(composition["section"], provenances, strict=True):
        target = provenance["target"][0]["extension"][0]
        assert target == {"url": TARGET_ELEMENT, "valueUri": section["id"]}
        assert provenance["agent"][0]["who"]["reference"] == device_urn
        model = summary.section(section["id"].removeprefix("section-").replace("-", "_"))
        if not model.sentences:
            assert section["emptyReason"]["text"] == model.empty_reason
            assert model.empty_reason is not None
            assert model.empty_reason.startswith(("Not documented", "None recorded in this stay"))
            continue
        extensions = [x for x in section["extension"] if x["url"] == SENTENCE_PROVENANCE]
        assert [x["extension"][0]["valueString"] for x in extensions] == [
            s.id for s in model.sentences
        ]
        for extension in extensions:
            parts = {part["url"] for part in extension["extension"]}
            assert {"sentence", "text", "source", "verdict"} <= parts
        div = ET.fromstring(section["text"]["div"])
        span_ids = [span.get("id") for span in div.iter(f"{XHTML}span")]
        assert span_ids == [s.id for s in model.sentences]
        assert all(e["role"] == "source" for e in provenance["entity"])
        assert all(e["what"]["extension"][0]["valueString"] for e in provenance["entity"])


def test_flagged_sentences_are_marked_in_the_narrative_and_the_extension() -> None:
    state = evidence_from_fhir(
        fx.stay(
            fx.medication_request("a", "warfarin 5 MG", encounter_id=fx.ENCOUNTER_ID),
            fx.medication_request("b", "warfarin 2 MG", encounter_id=fx.ENCOUNTER_ID),
        ),
        settings=PipelineSettings(),
    )
    summary = summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())
    bundle = as_json(draft_bundle(summary, state, WHEN))
    (composition,) = resources_of(bundle, "Composition")
    review = next(s for s in composition["section"] if s["id"] == "section-needs-review")
    div = ET.fromstring(review["text"]["div"])
    flagged = [span for span in div.iter(f"{XHTML}span") if "flagged" in span.get("class", "")]
    assert any("The same drug twice" in (span.text or "") for span in flagged)
    codes = {
        part["valueCoding"]["code"]
        for extension in review["extension"]
        for part in extension["extension"]
        if part["url"] == "flag"
    }
    assert {"therapeutic_duplication", "incomplete_medication"} <= codes


def test_two_orders_of_one_drug_are_one_doubt_on_one_line() -> None:
    """Two active warfarin orders are a conflict of the record and a duplication at
    discharge: Needs review says it once, on the duplication's line, which names both orders;
    the conflict stays in the evidence for the review workspace."""
    state = evidence_from_fhir(
        fx.stay(
            fx.medication_request("a", "warfarin 5 MG", encounter_id=fx.ENCOUNTER_ID),
            fx.medication_request("b", "warfarin 2 MG", encounter_id=fx.ENCOUNTER_ID),
        ),
        settings=PipelineSettings(),
    )
    assert [c.kind for c in state.conflicts] == ["duplicate_active_medication"]
    summary = summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())
    review = [s.text for s in summary.section("needs_review").sentences if "warfarin" in s.text]
    assert [line for line in review if "two active orders" in line] == []
    (twice,) = [line for line in review if "The same drug twice" in line]
    assert "warfarin 5 MG" in twice and "warfarin 2 MG" in twice


def test_trends_are_computed_in_code() -> None:
    state = evidence_from_fhir(
        fx.stay(
            fx.observation("g1", "Glucose", 182, "mg/dL", when="2024-03-02T08:00:00+00:00"),
            fx.observation("g2", "Glucose", 95, "mg/dL", when="2024-03-04T08:00:00+00:00"),
            fx.observation("g3", "Glucose", 140, "mg/dL", when="2024-03-03T08:00:00+00:00"),
        ),
        settings=PipelineSettings(),
    )
    summary = summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())
    (sentence,) = summary.section("results").sentences
    assert sentence.text == (
        "Glucose (H): 182 → 95 mg/dL (2024-03-02 to 2024-03-04); reference 70 to 100."
    )
    assert len(sentence.citations) == 3 and sentence.verdict == "supported"


def test_medication_changes_are_labelled_and_empty_sections_say_not_documented() -> None:
    """Each change by its kind; a line with a doubt on it (lisinopril raised with no renal
    function on record) never reads as settled: its status asks for the confirmation."""
    state = evidence_from_fhir(
        fx.stay(
            fx.medication_request("a", "lisinopril 10 MG", authored="2023-01-01T00:00:00+00:00"),
            fx.medication_request(
                "b", "lisinopril 20 MG", encounter_id=fx.ENCOUNTER_ID, reason="BP above target"
            ),
            fx.medication_request("c", "atorvastatin 40 MG", encounter_id=fx.ENCOUNTER_ID),
        ),
        settings=PipelineSettings(),
    )
    summary = summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())
    texts = [s.text for s in summary.section("medications").sentences]
    assert texts[0] == (
        "CHANGED, TO CONFIRM: lisinopril 20 MG (strength: 10 MG → 20 MG). Documented reason: BP "
        "above target."
    )
    assert (
        summary.section("medications")
        .sentences[0]
        .review_reasons()
        .startswith("changed in this stay, with no recent renal function")
    )
    assert texts[1].startswith("NEW: atorvastatin 40 MG (")
    assert summary.section("procedures").empty_reason == "Not documented"
    assert summary.section("procedures").sentences == []


def test_empty_sections_fold_into_one_needs_review_line_and_keep_their_fhir_reason() -> None:
    """Each empty section once: named on Needs review's "Not documented" line (every one, not
    only the required), never again as a heading over "Not documented" in the draft's text; a
    section whose emptiness the record explains (it starts after discharge) keeps its heading
    and its reason, and is not on the line; the FHIR sections keep every emptyReason."""
    later = fx.procedure("later", "Appendectomy", encounter_id="other", when="2025-05-02")
    state = evidence_from_fhir(fx.stay(later), settings=PipelineSettings())
    summary = summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())
    (line,) = [
        s.text for s in summary.section("needs_review").sentences if s.text.startswith("Not doc")
    ]
    folded = [s.spec.title for s in summary.sections if s.named_in_needs_review]
    assert line == f"Not documented: {', '.join(folded)}."
    assert {"Condition at discharge", "Follow-up"} <= set(folded)
    # Neither is Pending results: the record's reports and orders say none is awaited.
    assert "Procedures" not in folded and "Pending results" not in folded
    markdown = render_markdown(summary, state)
    for title in folded:
        assert f"## {title}\n" not in markdown
    assert "## Procedures\n\nNone recorded in this stay" in markdown
    (composition,) = resources_of(as_json(draft_bundle(summary, state, WHEN)), "Composition")
    reasons = {s["title"]: s.get("emptyReason", {}).get("text") for s in composition["section"]}
    assert all(reasons[title] == "Not documented" for title in folded)


def test_the_sentence_provenance_structure_definition_is_valid_fhir() -> None:
    path = ROOT / "fhir_mapping" / "profiles" / "sentence-provenance.json"
    definition = get_fhir_model_class("StructureDefinition").model_validate_json(path.read_bytes())
    assert definition.url == SENTENCE_PROVENANCE


def test_every_section_key_has_one_spec_and_every_summary_holds_them_all_in_order() -> None:
    """SectionKey (the type) and SECTIONS (titles, LOINC codes, order) name the same sections;
    the summary builds each of them, in that order, whether or not it has sentences."""
    from typing import get_args

    from pipeline.evidence.summary import SECTIONS, SectionKey

    keys = [spec.key for spec in SECTIONS]
    assert sorted(keys) == sorted(get_args(SectionKey))
    state = evidence_from_fhir(fx.stay(), settings=PipelineSettings())
    summary = summarize_evidence(state, settings=PipelineSettings())
    assert [section.key for section in summary.sections] == keys
