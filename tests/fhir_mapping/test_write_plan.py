"""The write plan: what a draft becomes in an EHR, decided without one (fhir_mapping is pure)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from functools import cache

import pytest
from fhir.resources.R4B.bundle import Bundle, BundleEntry
from fhir.resources.R4B.patient import Patient

from fhir_mapping.composition import DRAFT_KEY_SYSTEM, draft_bundle
from fhir_mapping.draft_resources import DraftResources, draft_resources, stored_draft
from fhir_mapping.json_values import as_json
from fhir_mapping.signoff import signed_bundle
from fhir_mapping.write_plan import (
    COMPOSITION_REFUSED,
    DEVICE,
    NOTE,
    AddProvenances,
    CreateDevice,
    DraftNote,
    WriteNote,
    WrittenCopy,
    provenance_key,
    write_plan,
)
from fhir_mapping.write_strategy import ACCEPTED_STATUS, Capability, choose_strategy
from pipeline.settings import PipelineSettings
from pipeline.summarizing.evidence_summary import summarize_evidence
from smartapp.jobs.evidence import evidence_from_fhir
from tests.conftest import ROOT

WHEN = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
SIGNED_AT = datetime(2026, 11, 30, 15, 0, tzinfo=UTC)
SAMPLE = ROOT / "launch" / "samples" / "97da660e-b895-3740-a6fc-f8cb48dcf20c.json"
WRITE_ALL = (
    "patient/Composition.cu patient/DocumentReference.cu patient/Provenance.c patient/Device.c"
)
NOTE_TEXT = DraftNote(markdown="Discharge summary", patient="p1", encounter="e1")


def statement(*types: str, final_only: bool = False) -> dict:
    resources = []
    for kind in types:
        entry: dict = {"type": kind, "interaction": [{"code": "create"}]}
        if final_only and kind == "DocumentReference":
            entry["extension"] = [{"url": ACCEPTED_STATUS, "valueCode": "final"}]
        resources.append(entry)
    return {"rest": [{"resource": resources}]}


EVERYTHING = Capability.from_statement(
    statement("Composition", "DocumentReference", "Provenance", "Device")
)


@cache
def bundle() -> Bundle:
    state = evidence_from_fhir(json.loads(SAMPLE.read_bytes()), settings=PipelineSettings())
    return draft_bundle(summarize_evidence(state, settings=PipelineSettings()), state, WHEN)


def resources() -> DraftResources:
    return draft_resources(bundle())


def test_a_stored_draft_becomes_typed_r4b_resources() -> None:
    typed = resources()
    assert typed.composition.status == "preliminary"
    assert typed.generated_at == WHEN
    assert typed.device.identifier and typed.provenances
    assert all(p.target for p in typed.provenances)


def test_a_bundle_that_is_not_a_draft_is_refused() -> None:
    with pytest.raises(ValueError, match="one Composition"):
        draft_resources(Bundle(type="transaction"))
    patient = BundleEntry(fullUrl="urn:uuid:1", resource=Patient())
    with pytest.raises(ValueError, match="no Patient"):
        draft_resources(Bundle(type="transaction", entry=[patient]))
    with pytest.raises(ValueError, match="entry"):
        stored_draft({"resourceType": "Bundle", "type": "transaction", "entry": "not a list"})


def test_a_stored_draft_reads_back_as_the_same_resources() -> None:
    assert draft_resources(stored_draft(as_json(bundle()))) == resources()


def test_a_capability_statement_is_read_even_where_it_is_malformed() -> None:
    statement = {
        "rest": [
            {"resource": "not a list"},
            {
                "resource": [
                    {"type": "Composition", "interaction": [{"code": "create"}, "junk"]},
                    {"type": 7, "interaction": [{"code": "create"}]},
                    {"type": "Provenance", "interaction": {"code": "read"}},
                    {
                        "type": "DocumentReference",
                        "interaction": [{"code": "create"}],
                        "extension": [{"url": ACCEPTED_STATUS, "valueCode": "final"}, None],
                    },
                ]
            },
        ]
    }
    capability = Capability.from_statement(statement)
    assert capability.creatable == {"Composition", "DocumentReference"}
    assert capability.document_statuses == {"final"}


def test_strategy_follows_the_capability_statement_scopes_and_overrides() -> None:
    both = Capability.from_statement(statement("Composition", "DocumentReference"))
    write_all = "patient/Composition.cu patient/DocumentReference.cu"
    assert choose_strategy(both, write_all) == "composition"
    assert choose_strategy(both, "patient/DocumentReference.cu") == "document-reference"
    assert choose_strategy(both, "patient/*.write") == "composition"
    documents = Capability.from_statement(statement("DocumentReference"))
    assert choose_strategy(documents, write_all) == "document-reference"
    final_only = Capability.from_statement(statement("DocumentReference", final_only=True))
    assert choose_strategy(final_only, write_all) == "final-only"
    assert choose_strategy(Capability.from_statement(statement("Observation")), write_all) == "none"
    assert choose_strategy(both, write_all, forced="document-reference") == "document-reference"


def test_a_composition_is_written_first_then_its_device_then_provenance_naming_both() -> None:
    plan = write_plan(resources(), NOTE_TEXT, EVERYTHING, WRITE_ALL, key="k1", at=WHEN)
    assert plan.strategy == "composition"
    note, device, provenances = plan.steps
    assert isinstance(note, WriteNote) and note.resource_type == "Composition"
    assert note.condition == f"identifier={DRAFT_KEY_SYSTEM}|k1"
    assert as_json(note.resource)["identifier"] == {"system": DRAFT_KEY_SYSTEM, "value": "k1"}
    # The Device travels inside the note, so the note stands alone if nothing else is written.
    assert as_json(note.resource)["contained"][0]["id"] == "device"
    assert isinstance(device, CreateDevice)
    assert isinstance(provenances, AddProvenances)
    assert len(provenances.provenances) == len(resources().provenances)
    for provenance in provenances.provenances:
        assert as_json(provenance)["target"][0]["reference"] == NOTE
        assert {a["who"]["reference"] for a in as_json(provenance)["agent"]} == {DEVICE}
    # Refused although advertised: the same draft as a DocumentReference.
    assert plan.refused == COMPOSITION_REFUSED
    assert plan.otherwise is not None and plan.otherwise.strategy == "document-reference"
    fallback_note = plan.otherwise.steps[0]
    assert isinstance(fallback_note, WriteNote)
    assert as_json(fallback_note.resource)["docStatus"] == "preliminary"


def test_without_device_scope_the_provenance_carries_the_device_inside() -> None:
    scopes = "patient/Composition.cu patient/Provenance.c"
    plan = write_plan(resources(), NOTE_TEXT, EVERYTHING, scopes, key="k1", at=WHEN)
    assert [type(step) for step in plan.steps] == [WriteNote, AddProvenances]
    provenance = plan.steps[1].provenances[0]  # type: ignore[union-attr]
    assert as_json(provenance)["contained"][0]["id"] == "device"
    assert {a["who"]["reference"] for a in as_json(provenance)["agent"]} == {"#device"}
    # No DocumentReference grant: nothing to fall back to.
    assert plan.otherwise is None


def test_nothing_is_planned_where_nothing_may_be_written_or_only_final_notes_are_taken() -> None:
    read_only = write_plan(resources(), NOTE_TEXT, EVERYTHING, "patient/*.read", key="k", at=WHEN)
    assert (read_only.strategy, read_only.steps) == ("none", ())
    final_only = Capability.from_statement(statement("DocumentReference", final_only=True))
    deferred = write_plan(resources(), NOTE_TEXT, final_only, WRITE_ALL, key="k", at=WHEN)
    assert (deferred.strategy, deferred.steps) == ("final-only", ())
    signed = DraftNote("Signed summary", "p1", "e1", "Practitioner/dr", SIGNED_AT)
    at_signing = write_plan(resources(), signed, final_only, WRITE_ALL, key="k", at=SIGNED_AT)
    note = at_signing.steps[0]
    assert isinstance(note, WriteNote) and as_json(note.resource)["docStatus"] == "final"


def test_signing_updates_the_copy_written_before_in_its_own_strategy() -> None:
    signed_resources = draft_resources(signed_bundle(bundle(), "Practitioner/dr", SIGNED_AT))
    signed = DraftNote("Signed summary", "p1", "e1", "Practitioner/dr", SIGNED_AT)
    before = WrittenCopy("document-reference", "doc-7", "3")
    plan = write_plan(
        signed_resources,
        signed,
        EVERYTHING,
        WRITE_ALL,
        key="k",
        at=SIGNED_AT,
        written_before=before,
    )
    # The EHR now offers Compositions, but the note already lives as a DocumentReference.
    assert plan.strategy == "document-reference"
    note, provenances = plan.steps
    assert isinstance(note, WriteNote) and note.update == before
    assert as_json(note.resource)["docStatus"] == "final"
    # The physician's verification and the AI's authorship: two records, both written.
    assert isinstance(provenances, AddProvenances)
    keys = {provenance_key(p) for p in provenances.provenances}
    assert len(keys) == 2
    assert any(
        as_json(p)["agent"][0]["who"].get("reference") == "Practitioner/dr"
        for p in provenances.provenances
    )


def test_why_nothing_is_written_names_the_operator_the_ehr_or_the_grant() -> None:
    from fhir_mapping.write_strategy import why_nothing_is_written

    takes_notes = Capability(frozenset({"Composition"}))
    takes_nothing = Capability(frozenset({"Patient"}))
    assert why_nothing_is_written(takes_notes, "patient/*.read", "none") == "configured"
    assert why_nothing_is_written(takes_nothing, "patient/*.cruds") == "not-accepted"
    assert why_nothing_is_written(takes_notes, "patient/*.read") == "not-permitted"


def test_provenances_on_the_written_note_are_known_by_key_and_a_malformed_one_is_not_ours() -> None:
    from smartapp.ehr.writeback import written_provenance_keys

    ours = resources().provenances
    on_the_note = [as_json(p) for p in ours] + [{"resourceType": "Provenance", "target": "x"}]
    assert written_provenance_keys(on_the_note) == {provenance_key(p) for p in ours}
