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
from decimal import Decimal

from fhir.resources.R4B.bundle import Bundle, BundleEntry, BundleEntryRequest
from fhir.resources.R4B.codeableconcept import CodeableConcept
from fhir.resources.R4B.coding import Coding
from fhir.resources.R4B.composition import Composition, CompositionSection
from fhir.resources.R4B.device import Device, DeviceDeviceName, DeviceProperty, DeviceVersion
from fhir.resources.R4B.domainresource import DomainResource
from fhir.resources.R4B.extension import Extension
from fhir.resources.R4B.identifier import Identifier
from fhir.resources.R4B.meta import Meta
from fhir.resources.R4B.narrative import Narrative
from fhir.resources.R4B.provenance import Provenance, ProvenanceAgent, ProvenanceEntity
from fhir.resources.R4B.quantity import Quantity
from fhir.resources.R4B.reference import Reference

from pipeline.evidence.model import EvidenceState, SourceRef
from pipeline.evidence.summary import Sentence, Summary, SummarySection, cited_sources
from pipeline.text.rendering import render

CANONICAL = "https://provenote.dev/fhir"
SENTENCE_PROVENANCE = f"{CANONICAL}/StructureDefinition/sentence-provenance"
REVIEW_FLAG_SYSTEM = f"{CANONICAL}/CodeSystem/review-flag"
TARGET_ELEMENT = "http://hl7.org/fhir/StructureDefinition/targetElement"
TARGET_PATH = "http://hl7.org/fhir/StructureDefinition/targetPath"
LOINC = "http://loinc.org"
AI_ASSERTED = Coding(
    system="http://terminology.hl7.org/CodeSystem/v3-ObservationValue",
    code="AIAST",
    display="Artificial Intelligence asserted",
)
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


def _ai_asserted() -> Meta:
    return Meta(security=[AI_ASSERTED.model_copy()])


def _source_reference(ref: SourceRef) -> Reference:
    return Reference(
        reference=ref.resource, extension=[Extension(url=TARGET_PATH, valueString=ref.path)]
    )


def _flag(code: str, reason: str) -> Extension:
    return Extension(
        url="flag", valueCoding=Coding(system=REVIEW_FLAG_SYSTEM, code=code, display=reason)
    )


def sentence_extension(sentence: Sentence, state: EvidenceState) -> Extension:
    parts = [
        Extension(url="sentence", valueString=sentence.id),
        Extension(url="text", valueString=sentence.text),
    ]
    for ref in cited_sources(sentence, state):
        parts.append(Extension(url="source", valueReference=_source_reference(ref)))
        if ref.quote is not None:
            where = f"page {ref.page} [{ref.start}:{ref.end}]"
            quote = f"{ref.resource} {where}: {ref.quote}"
            parts.append(Extension(url="quote", valueString=quote))
    if sentence.grounding is not None:
        grounding = Decimal(str(round(sentence.grounding, 4)))
        parts.append(Extension(url="grounding", valueDecimal=grounding))
    parts.append(Extension(url="verdict", valueCode=sentence.verdict))
    if sentence.review is not None:
        parts.append(Extension(url="review", valueCode=sentence.review))
    if sentence.entailment is not None:
        parts.append(Extension(url="entailment", valueCode=sentence.entailment))
    for check in sentence.checks:
        if not check.passed:
            reason = f"{check.detail}: {', '.join(check.spans)}".strip(": ")
            parts.append(_flag(f"check-{check.check}", reason))
    parts.extend(_flag(flag.code, flag.reason) for flag in sentence.flags)
    return Extension(url=SENTENCE_PROVENANCE, extension=parts)


_NOT_DOCUMENTED = Coding(
    system="http://terminology.hl7.org/CodeSystem/list-empty-reason",
    code="unavailable",
    display="Unavailable",
)


def _section(section: SummarySection, state: EvidenceState) -> CompositionSection:
    spec = section.spec
    entries = list(
        dict.fromkeys(
            ref.resource for sentence in section.sentences for ref in cited_sources(sentence, state)
        )
    )
    narrative = render("summary/narrative.xhtml.j2", section=section)
    built = CompositionSection(
        id=section_id(section),
        title=spec.title,
        code=CodeableConcept(
            coding=[Coding(system=LOINC, code=spec.loinc, display=spec.loinc_display)]
        ),
        text=Narrative(status="generated", div=narrative),
    )
    if section.sentences:
        built.extension = [sentence_extension(s, state) for s in section.sentences]
        built.entry = [Reference(reference=resource) for resource in entries]
    else:
        built.emptyReason = CodeableConcept(
            coding=[_NOT_DOCUMENTED.model_copy()], text=section.empty_reason or "Not documented"
        )
    return built


_AUTHOR = Coding(
    system="http://terminology.hl7.org/CodeSystem/provenance-participant-type",
    code="author",
    display="Author",
)


def _provenance(
    section: SummarySection,
    state: EvidenceState,
    composition_urn: str,
    device_urn: str,
    recorded: datetime,
) -> Provenance:
    refs = {
        (ref.resource, ref.path): ref
        for sentence in section.sentences
        for ref in cited_sources(sentence, state)
    }
    target = Reference(
        reference=composition_urn,
        extension=[Extension(url=TARGET_ELEMENT, valueUri=section_id(section))],
    )
    author = ProvenanceAgent(
        type=CodeableConcept(coding=[_AUTHOR.model_copy()]), who=Reference(reference=device_urn)
    )
    return Provenance(
        meta=_ai_asserted(),
        target=[target],
        recorded=recorded,
        agent=[author],
        entity=[
            ProvenanceEntity(role="source", what=_source_reference(ref)) for ref in refs.values()
        ]
        or None,
    )


def _model_properties(summary: Summary) -> list[DeviceProperty]:
    """What drafting asked of the model, on its Device: calls, tokens, passes, why it stopped."""
    usage = summary.model_usage
    assert usage is not None
    counts = {
        "model-calls": usage.calls,
        "prompt-tokens": usage.prompt_tokens,
        "completion-tokens": usage.completion_tokens,
        "passes": summary.iterations,
    }
    properties = [
        DeviceProperty(
            type=CodeableConcept(text=name), valueQuantity=[Quantity(value=Decimal(value))]
        )
        for name, value in counts.items()
    ]
    properties.append(
        DeviceProperty(
            type=CodeableConcept(text="stop-reason"),
            valueCode=[CodeableConcept(text=summary.stop_reason)],
        )
    )
    return properties


def _device(summary: Summary) -> Device:
    """The drafting software (and model) as the author of the draft."""
    return Device(
        identifier=[
            Identifier(
                system=f"{CANONICAL}/device", value=f"{summary.backend}-{summary.backend_version}"
            )
        ],
        deviceName=[DeviceDeviceName(name=summary.backend, type="model-name")],
        version=[DeviceVersion(value=summary.backend_version)],
        type=CodeableConcept(text="AI software drafting discharge summaries from the record"),
        property=_model_properties(summary) if summary.model_usage is not None else None,
    )


def _composition(
    summary: Summary, state: EvidenceState, recorded: datetime, device_urn: str
) -> Composition:
    """The preliminary Composition, AI-asserted, saying when the model could not be used."""
    composition = Composition(
        meta=_ai_asserted(),
        status="preliminary",
        type=CodeableConcept(
            coding=[Coding(system=LOINC, code="18842-5", display="Discharge summary")]
        ),
        subject=Reference(reference=summary.patient),
        date=recorded,
        author=[Reference(reference=device_urn)],
        title=DRAFT_TITLE,
        section=[_section(section, state) for section in summary.sections],
    )
    if summary.model_unavailable is not None:
        composition.title = f"{DRAFT_TITLE} ({MODEL_UNAVAILABLE})"
        note = f"{MODEL_UNAVAILABLE}: {summary.model_unavailable}"
        composition.extension = [Extension(url=DRAFTING_NOTE, valueString=note)]
    if summary.encounter:
        composition.encounter = Reference(reference=summary.encounter)
    return composition


def transaction_entry(full_url: str, resource: DomainResource) -> BundleEntry:
    """An entry that creates ``resource``, referenced in its bundle by ``full_url``."""
    return BundleEntry(
        fullUrl=full_url,
        resource=resource,
        request=BundleEntryRequest(method="POST", url=resource.get_resource_type()),
    )


def draft_bundle(summary: Summary, state: EvidenceState, generated_at: datetime) -> Bundle:
    """The transaction Bundle of the draft."""
    if generated_at.tzinfo is None:
        raise ValueError("generated_at needs a time zone: FHIR instants carry one")
    key = f"{summary.patient}|{summary.encounter}|{summary.backend}|{generated_at.isoformat()}"
    device_urn, composition_urn = _urn(key, "device"), _urn(key, "composition")
    entries = [
        transaction_entry(device_urn, _device(summary)),
        transaction_entry(composition_urn, _composition(summary, state, generated_at, device_urn)),
        *(
            transaction_entry(
                _urn(key, "provenance", section.key),
                _provenance(section, state, composition_urn, device_urn, generated_at),
            )
            for section in summary.sections
        ),
    ]
    return Bundle(type="transaction", entry=entries)
