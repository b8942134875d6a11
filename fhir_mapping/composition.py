"""Summary to a draft FHIR R4 Composition, with per-sentence provenance, Provenance and Device.

The result is a **transaction Bundle** ready to POST: the AI Device, the preliminary Composition
and one Provenance per section, linked by ``urn:uuid`` references, every source by its
``Type/id``. It follows the HL7 AI Transparency on FHIR pattern: ``meta.security`` AIAST on the
draft, the Device as author, Provenance per section with ``targetElement`` (the section id) and
entities with role ``source`` whose references carry ``targetPath``. Sentence by sentence the
extension ``sentence-provenance`` (``fhir_mapping/profiles/sentence-provenance.json``) names the
sources, the checker's verdict, the grounding score when known, and the review flags.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from fhir.resources.R4B.bundle import Bundle

from pipeline.evidence.model import EvidenceState, SourceRef
from pipeline.evidence.summary import Sentence, Summary, SummarySection, cited_sources
from pipeline.text.rendering import render

CANONICAL = "https://provenote.dev/fhir"
SENTENCE_PROVENANCE = f"{CANONICAL}/StructureDefinition/sentence-provenance"
REVIEW_FLAG_SYSTEM = f"{CANONICAL}/CodeSystem/review-flag"
TARGET_ELEMENT = "http://hl7.org/fhir/StructureDefinition/targetElement"
TARGET_PATH = "http://hl7.org/fhir/StructureDefinition/targetPath"
LOINC = "http://loinc.org"
AI_ASSERTED = {
    "system": "http://terminology.hl7.org/CodeSystem/v3-ObservationValue",
    "code": "AIAST",
    "display": "Artificial Intelligence asserted",
}
# The identifier system of every note Provenote writes to an EHR (its idempotency key).
DRAFT_KEY_SYSTEM = f"{CANONICAL}/draft-key"
DRAFT_TITLE = "AI DRAFT discharge summary: not reviewed, needs physician review and signature"
# Said in the title of a draft whose configured model could not be used.
MODEL_UNAVAILABLE = "model unavailable: evidence-only draft"
DRAFTING_NOTE = f"{CANONICAL}/StructureDefinition/drafting-note"
_NAMESPACE = uuid.UUID("5f0c6b8e-4f7a-4c59-9d8a-2f7e8c1d3b10")


def _urn(*parts: str) -> str:
    """A urn:uuid derived from content, so the same draft always gets the same bundle."""
    return f"urn:uuid:{uuid.uuid5(_NAMESPACE, '|'.join(parts))}"


def section_id(section: SummarySection) -> str:
    return f"section-{section.key.replace('_', '-')}"


def _source_reference(ref: SourceRef) -> dict[str, Any]:
    return {
        "reference": ref.resource,
        "extension": [{"url": TARGET_PATH, "valueString": ref.path}],
    }


def sentence_extension(sentence: Sentence, state: EvidenceState) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [
        {"url": "sentence", "valueString": sentence.id},
        {"url": "text", "valueString": sentence.text},
    ]
    for ref in cited_sources(sentence, state):
        parts.append({"url": "source", "valueReference": _source_reference(ref)})
        if ref.quote is not None:
            where = f"page {ref.page} [{ref.start}:{ref.end}]"
            parts.append({"url": "quote", "valueString": f"{ref.resource} {where}: {ref.quote}"})
    if sentence.grounding is not None:
        parts.append({"url": "grounding", "valueDecimal": round(sentence.grounding, 4)})
    parts.append({"url": "verdict", "valueCode": sentence.verdict})
    if sentence.review is not None:
        parts.append({"url": "review", "valueCode": sentence.review})
    if sentence.entailment is not None:
        parts.append({"url": "entailment", "valueCode": sentence.entailment})
    flags = list(sentence.flags)
    for check in sentence.checks:
        if not check.passed:
            flags_reason = f"{check.detail}: {', '.join(check.spans)}".strip(": ")
            parts.append(
                {
                    "url": "flag",
                    "valueCoding": {
                        "system": REVIEW_FLAG_SYSTEM,
                        "code": f"check-{check.check}",
                        "display": flags_reason,
                    },
                }
            )
    for flag in flags:
        parts.append(
            {
                "url": "flag",
                "valueCoding": {
                    "system": REVIEW_FLAG_SYSTEM,
                    "code": flag.code,
                    "display": flag.reason,
                },
            }
        )
    return {"url": SENTENCE_PROVENANCE, "extension": parts}


def _section(section: SummarySection, state: EvidenceState) -> dict[str, Any]:
    spec = section.spec
    entries = list(
        dict.fromkeys(
            ref.resource for sentence in section.sentences for ref in cited_sources(sentence, state)
        )
    )
    narrative = render("summary/narrative.xhtml.j2", section=section)
    built: dict[str, Any] = {
        "id": section_id(section),
        "title": spec.title,
        "code": {"coding": [{"system": LOINC, "code": spec.loinc, "display": spec.loinc_display}]},
        "text": {"status": "generated", "div": narrative},
    }
    if section.sentences:
        built["extension"] = [sentence_extension(s, state) for s in section.sentences]
        built["entry"] = [{"reference": resource} for resource in entries]
    else:
        built["emptyReason"] = {
            "coding": [
                {
                    "system": "http://terminology.hl7.org/CodeSystem/list-empty-reason",
                    "code": "unavailable",
                    "display": "Unavailable",
                }
            ],
            "text": section.empty_reason or "Not documented",
        }
    return built


def _provenance(
    section: SummarySection,
    state: EvidenceState,
    composition_urn: str,
    device_urn: str,
    recorded: str,
) -> dict[str, Any]:
    refs = {
        (ref.resource, ref.path): ref
        for sentence in section.sentences
        for ref in cited_sources(sentence, state)
    }
    provenance: dict[str, Any] = {
        "resourceType": "Provenance",
        "meta": {"security": [AI_ASSERTED]},
        "target": [
            {
                "reference": composition_urn,
                "extension": [{"url": TARGET_ELEMENT, "valueUri": section_id(section)}],
            }
        ],
        "recorded": recorded,
        "agent": [
            {
                "type": {
                    "coding": [
                        {
                            "system": "http://terminology.hl7.org/CodeSystem/provenance-participant-type",
                            "code": "author",
                            "display": "Author",
                        }
                    ]
                },
                "who": {"reference": device_urn},
            }
        ],
    }
    if refs:
        provenance["entity"] = [
            {"role": "source", "what": _source_reference(ref)} for ref in refs.values()
        ]
    return provenance


def _model_properties(summary: Summary) -> list[dict[str, Any]]:
    """What drafting asked of the model, on its Device: calls, tokens, passes, why it stopped."""
    usage = summary.model_usage
    assert usage is not None
    counts = {
        "model-calls": usage.calls,
        "prompt-tokens": usage.prompt_tokens,
        "completion-tokens": usage.completion_tokens,
        "passes": summary.iterations,
    }
    properties: list[dict[str, Any]] = [
        {"type": {"text": name}, "valueQuantity": [{"value": value}]}
        for name, value in counts.items()
    ]
    properties.append(
        {"type": {"text": "stop-reason"}, "valueCode": [{"text": summary.stop_reason}]}
    )
    return properties


def _device(summary: Summary) -> dict[str, Any]:
    """The drafting software (and model) as the author of the draft."""
    device: dict[str, Any] = {
        "resourceType": "Device",
        "identifier": [
            {
                "system": f"{CANONICAL}/device",
                "value": f"{summary.backend}-{summary.backend_version}",
            }
        ],
        "deviceName": [{"name": summary.backend, "type": "model-name"}],
        "version": [{"value": summary.backend_version}],
        "type": {"text": "AI software drafting discharge summaries from the record"},
    }
    if summary.model_usage is not None:
        device["property"] = _model_properties(summary)
    return device


def _composition(
    summary: Summary, state: EvidenceState, recorded: str, device_urn: str
) -> dict[str, Any]:
    """The preliminary Composition, AI-asserted, saying when the model could not be used."""
    composition: dict[str, Any] = {
        "resourceType": "Composition",
        "meta": {"security": [AI_ASSERTED]},
        "status": "preliminary",
        "type": {"coding": [{"system": LOINC, "code": "18842-5", "display": "Discharge summary"}]},
        "subject": {"reference": summary.patient},
        "date": recorded,
        "author": [{"reference": device_urn}],
        "title": DRAFT_TITLE,
        "section": [_section(section, state) for section in summary.sections],
    }
    if summary.model_unavailable is not None:
        composition["title"] = f"{DRAFT_TITLE} ({MODEL_UNAVAILABLE})"
        composition["extension"] = [
            {
                "url": DRAFTING_NOTE,
                "valueString": f"{MODEL_UNAVAILABLE}: {summary.model_unavailable}",
            }
        ]
    if summary.encounter:
        composition["encounter"] = {"reference": summary.encounter}
    return composition


def draft_bundle(summary: Summary, state: EvidenceState, generated_at: datetime) -> dict[str, Any]:
    """The transaction Bundle of the draft; validated with ``fhir.resources.R4B`` before return."""
    if generated_at.tzinfo is None:
        raise ValueError("generated_at needs a time zone: FHIR instants carry one")
    recorded = generated_at.isoformat()
    key = f"{summary.patient}|{summary.encounter}|{summary.backend}|{recorded}"
    device_urn, composition_urn = _urn(key, "device"), _urn(key, "composition")
    device = _device(summary)
    composition = _composition(summary, state, recorded, device_urn)
    entries = [
        (device_urn, device),
        (composition_urn, composition),
        *(
            (
                _urn(key, "provenance", section.key),
                _provenance(section, state, composition_urn, device_urn, recorded),
            )
            for section in summary.sections
        ),
    ]
    bundle = {
        "resourceType": "Bundle",
        "type": "transaction",
        "entry": [
            {
                "fullUrl": full_url,
                "resource": resource,
                "request": {"method": "POST", "url": resource["resourceType"]},
            }
            for full_url, resource in entries
        ],
    }
    Bundle.model_validate(bundle)
    return bundle
