"""Review rules without a server: what acknowledges a flag, what an edit is checked against, how a
signature and the served resources look, which scopes and styles are accepted."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime

import pytest
from fhir.resources.R4B.bundle import Bundle

from fhir_mapping.composition import SENTENCE_PROVENANCE, draft_bundle
from fhir_mapping.draft_resources import draft_resources
from fhir_mapping.hosted import device_id, document_bundle, hosted_draft, instant
from fhir_mapping.json_values import as_json
from fhir_mapping.signoff import signed_bundle
from fhir_mapping.smart_scopes import granted, only_restricted
from pipeline.checking.review import (
    REMOVED_AT_REVIEW,
    ReviewError,
    accept,
    awaiting_review,
    delete,
    edit,
    review_items,
)
from pipeline.evidence.summary import CheckResult, Sentence, SentenceFlag, Summary
from pipeline.settings import PipelineSettings
from pipeline.summarizing.evidence_summary import summarize_evidence
from pipeline.text.rendering import render
from smartapp.access.sessions import LaunchContext
from smartapp.core.csrf import csrf_token, csrf_valid
from smartapp.jobs.evidence import evidence_from_fhir
from smartapp.launch.roles import practitioner_reference
from smartapp.launch.style import safe_style
from tests.conftest import ROOT

SAMPLE = ROOT / "launch" / "samples"
MANY_FLAGS = "97da660e-b895-3740-a6fc-f8cb48dcf20c"
WHEN = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def record() -> dict:
    return json.loads((SAMPLE / f"{MANY_FLAGS}.json").read_text())


@pytest.fixture(scope="module")
def drafted(record: dict):
    stays = [
        e["resource"]
        for e in record["entry"]
        if e["resource"]["resourceType"] == "Encounter"
        and e["resource"].get("class", {}).get("code") == "IMP"
    ]
    stay = max(stays, key=lambda encounter: encounter["period"]["start"])
    state = evidence_from_fhir(record, f"Encounter/{stay['id']}", settings=PipelineSettings())
    return summarize_evidence(state, settings=PipelineSettings()), state


def _sentence(summary: Summary, *, flagged: bool):
    return next(s for s in summary.sentences() if s.flagged is flagged)


def test_flags_wait_until_accepted_edited_clean_or_deleted(drafted) -> None:
    summary, state = drafted
    waiting = awaiting_review(summary)
    # Incomplete orders in one line; the H&P lists no medication; old orders to confirm; the
    # cardiovascular drugs ordered "as needed" (three), on one Needs review line and each on its own
    # line in the list; the line of a drug in a duplication carries it too, and so does the old
    # clopidogrel order proposed stopped; prasugrel with no PCI, a nitroglycerin spray that is
    # only an old order to confirm, the infarction with no record of how it was treated nor of
    # its troponin, ECG or ejection fraction, and lisinopril started with no recent renal
    # function or electrolytes on record.
    assert len(waiting) == 19
    kinds = {item.kind for sentence in waiting for item in review_items(sentence)}
    assert {"Conflict", "Unexplained medication change", "Therapeutic duplication"} <= kinds
    third, second, first = (s.id for s in waiting[:3])  # most severe first: conflicts
    summary, accepted = accept(summary, first)
    assert accepted.review == "accepted" and accepted.flags  # kept for the record
    summary, _ = delete(summary, second)
    summary, edited = edit(summary, third, "Simvastatin was continued at discharge.", state)
    assert edited.review == "edited" and edited.verdict == "supported" and not edited.flags
    assert edited.revisions == [waiting[0].text]
    assert [s.id for s in awaiting_review(summary)] == [s.id for s in waiting[3:]]


def test_an_edit_the_checker_cannot_support_must_itself_be_accepted(drafted) -> None:
    summary, state = drafted
    plain = _sentence(summary, flagged=False)
    summary, edited = edit(summary, plain.id, "Discharged on metformin 850 mg twice daily.", state)
    assert edited.verdict == "unsupported"
    assert {c.check for c in edited.checks if not c.passed} >= {"numbers", "drugs"}
    assert edited in awaiting_review(summary)
    summary, accepted = accept(summary, plain.id)
    assert accepted not in awaiting_review(summary) and accepted.text.startswith("Discharged on")


def test_edits_are_refused_when_empty_oversized_or_aimed_at_nothing(drafted) -> None:
    summary, state = drafted
    plain = _sentence(summary, flagged=False)
    with pytest.raises(ReviewError, match="empty"):
        edit(summary, plain.id, "   ", state)
    with pytest.raises(ReviewError, match="limited"):
        edit(summary, plain.id, "word " * 600, state)
    with pytest.raises(ReviewError, match="no sentence"):
        accept(summary, "s-nope")


def test_a_section_emptied_at_review_says_so(drafted) -> None:
    summary, _ = drafted
    section = next(s for s in summary.sections if len(s.sentences) == 1)
    summary, _ = delete(summary, section.sentences[0].id)
    assert summary.section(section.key).empty_reason == REMOVED_AT_REVIEW


def test_the_composition_records_review_and_the_signature(drafted) -> None:
    summary, state = drafted
    flagged = awaiting_review(summary)[0]
    summary, _ = accept(summary, flagged.id)
    bundle = draft_bundle(summary, state, WHEN)
    composition = as_json(draft_resources(bundle).composition)
    parts = [
        part
        for section in composition["section"]
        for extension in section.get("extension", [])
        if extension["url"] == SENTENCE_PROVENANCE
        and {"url": "sentence", "valueString": flagged.id} in extension["extension"]
        for part in extension["extension"]
    ]
    assert {"url": "review", "valueCode": "accepted"} in parts
    signed = draft_resources(signed_bundle(bundle, "Practitioner/dr-a", WHEN))
    final = signed.composition
    assert final.status == "final"
    assert final.attester[0].mode == "legal"
    assert final.attester[0].party.reference == "Practitioner/dr-a"
    verifier = signed.provenances[-1]
    assert [c.code for a in verifier.agent for c in a.type.coding] == ["verifier"]
    with pytest.raises(ValueError, match="time zone"):
        signed_bundle(bundle, "Practitioner/dr-a", datetime(2026, 11, 30))


def test_served_resources_have_ids_and_the_document_resolves_on_its_own(
    drafted, record: dict
) -> None:
    summary, state = drafted
    bundle = as_json(draft_bundle(summary, state, WHEN))
    hosted = hosted_draft(bundle, "draft-1", 3, datetime(2026, 11, 30, 13, 0))
    composition = hosted.composition
    assert composition["id"] == "draft-1" and composition["meta"]["versionId"] == "3"
    assert composition["meta"]["lastUpdated"].endswith("+00:00")  # naive means UTC
    assert composition["author"] == [{"reference": f"Device/{device_id(hosted.device)}"}]
    assert all(p["target"][0]["reference"] == "Composition/draft-1" for p in hosted.provenances)
    assert "urn:uuid" not in json.dumps(composition)
    document = document_bundle(
        hosted,
        record,
        api_base="https://p.example/fhir",
        ehr_base="https://ehr/fhir",
        timestamp=WHEN,
    )
    Bundle.model_validate(document)
    urls = {entry["fullUrl"] for entry in document["entry"]}
    served = json.dumps(document["entry"][0]["resource"])
    assert f"https://ehr/fhir/Patient/{MANY_FLAGS}" in urls
    assert f'"reference": "https://ehr/fhir/Patient/{MANY_FLAGS}"' in served
    assert instant(WHEN) == "2026-11-30T12:00:00+00:00"
    with pytest.raises(ValueError, match="identified"):
        device_id({"resourceType": "Device", "identifier": [{"system": "s"}]})


@pytest.mark.parametrize(
    ("scope", "resource_type", "action", "levels", "expected"),
    [
        ("system/Composition.rs", "Composition", "s", ("system",), True),
        ("system/Composition.r", "Composition", "s", ("system",), False),
        ("system/*.read", "Provenance", "s", ("system",), True),
        ("system/Composition.read", "Composition", "c", ("system",), False),
        ("patient/Composition.rs", "Composition", "r", ("system",), False),
        ("patient/Composition.cu", "Composition", "u", ("patient", "user", "system"), True),
        ("user/Composition.write", "Composition", "c", ("patient", "user", "system"), True),
        # Granular: only part of the type, so never read as the whole permission.
        ("system/Composition.rs?status=final", "Composition", "r", ("system",), False),
    ],
)
def test_scopes_v1_and_v2(scope, resource_type, action, levels, expected) -> None:
    assert granted(scope, resource_type, action, levels) is expected


def test_a_granular_scope_counts_only_where_the_ehr_enforces_it() -> None:
    scope = "patient/DocumentReference.cu?category=clinical-note"
    assert not granted(scope, "DocumentReference", "c")
    assert granted(scope, "DocumentReference", "c", restricted_ok=True)
    assert only_restricted(scope, "DocumentReference", "c")
    assert not only_restricted(f"{scope} patient/DocumentReference.c", "DocumentReference", "c")


def test_only_safe_style_values_reach_the_page() -> None:
    style = safe_style(
        {
            "color_highlight": "#0b5cad",
            "color_background": "red; } body { display: none",
            "dim_border_radius": "4px",
            "font_family_body": "</style><script>alert(1)</script>",
            "font_family_heading": "Georgia, serif",
            "color_text": 12,
            "unknown": "#fff",
        }
    )
    assert style == {
        "--smart-color-highlight": "#0b5cad",
        "--smart-dim-border-radius": "4px",
        "--smart-font-family-heading": "Georgia, serif",
    }
    assert safe_style(["not", "a", "style"]) == {}


def test_style_values_copied_with_their_semicolon_are_accepted() -> None:
    style = safe_style({"font_family_heading": "Georgia, serif;", "color_text": "#123456 ;"})
    assert style == {
        "--smart-font-family-heading": "Georgia, serif",
        "--smart-color-text": "#123456",
    }
    assert safe_style({"color_text": "#123456; color: red;"}) == {}


def test_csrf_tokens_are_bound_to_the_session_and_the_secret() -> None:
    token = csrf_token(b"secret", "session-a")
    assert csrf_valid(b"secret", "session-a", token)
    assert not csrf_valid(b"secret", "session-b", token)
    assert not csrf_valid(b"other", "session-a", token)
    assert not csrf_valid(b"secret", "session-a", None)
    assert not csrf_valid(b"secret", None, token)


@pytest.mark.parametrize(
    ("fhir_user", "expected"),
    [
        ("https://ehr.example/fhir/Practitioner/123", "Practitioner/123"),
        ("Practitioner/abc", "Practitioner/abc"),
        ("https://ehr.example/fhir/Patient/123", None),
        ("https://ehr.example/fhir/RelatedPerson/9", None),
        ("https://ehr.example/fhir/Practitioner/", None),
        (None, None),
    ],
)
def test_only_a_practitioner_fhir_user_can_sign(fhir_user, expected) -> None:
    assert practitioner_reference(fhir_user) == expected


@pytest.mark.parametrize(("need_banner", "shown"), [(None, True), (True, True), (False, False)])
def test_the_patient_banner_shows_unless_the_launch_says_the_ehr_has_one(
    need_banner: bool | None, shown: bool
) -> None:
    context = LaunchContext(
        iss="https://ehr.example/fhir", patient="p-1", need_patient_banner=need_banner
    )
    page = render(
        "app/landing.html.j2",
        context=context,
        job=None,
        draft=None,
        write_back=None,
        write_back_words={},
        smart_style={},
        csrf="",
    )
    assert ('id="patient-banner"' in page) is shown


def test_model_flags_are_named_for_the_physician() -> None:
    sentence = Sentence(
        id="s-1",
        section="hospital_course",
        text="Stable.",
        citations=["f-1"],
        flags=[
            SentenceFlag(code="entailment", reason="stable"),
            SentenceFlag(code="low_grounding", reason="AURA 0.10 < 0.35"),
            SentenceFlag(code="conflict", reason="two doses"),
        ],
        checks=[CheckResult(check="numbers", passed=False, spans=["10 mg"], detail="not found")],
    )
    assert [(item.kind, item.reason) for item in review_items(sentence)] == [
        ("Unsupported", "stable"),
        ("Weak grounding", "AURA 0.10 < 0.35"),
        ("Conflict", "two doses"),
        ("Failed check", "numbers: not found: 10 mg"),
    ]


def test_page_images_are_rendered_once_and_a_few_at_a_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import threading
    import time

    from smartapp.drafts import page_images

    running, most, calls = 0, 0, []
    lock = threading.Lock()

    def render(data: bytes, content_type: str | None, number: int) -> bytes:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
            calls.append(number)
        time.sleep(0.05)
        with lock:
            running -= 1
        return f"page {number}".encode()

    monkeypatch.setattr(page_images, "page_image", render)
    images = page_images.PageImages(concurrent=2, cached=4)

    async def ask() -> list[bytes | None]:
        pages = [images.get(("d", "doc", n), b"%PDF", None, n) for n in (1, 2, 3, 4, 1)]
        return await asyncio.gather(*pages)

    answers = asyncio.run(ask())
    assert answers == [b"page 1", b"page 2", b"page 3", b"page 4", b"page 1"]
    assert most == 2
    assert sorted(calls) == [1, 2, 3, 4]  # page 1 asked twice, rendered once
    asyncio.run(images.get(("d", "doc", 5), b"%PDF", None, 5))
    assert not images.cached(("d", "doc", 2)) and images.cached(("d", "doc", 5))  # bounded
