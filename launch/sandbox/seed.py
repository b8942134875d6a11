"""Loading Synthea bundles into the sandbox FHIR server so that every reference resolves.

Synthea's transaction bundles POST resources under ``urn:uuid`` full URLs and point at
practitioners, organizations and locations by conditional reference (``Practitioner?identifier=
…``), which the in-memory server does not resolve. Each bundle is rewritten before loading:
entries become ``PUT Type/id`` (the ids stay Synthea's, so tests and links are stable), in-bundle
``urn:uuid`` references become ``Type/id``, conditional references become the ``Type/id`` of the
hospital or practitioner resource with that identifier, and a reference that resolves to nothing
loaded is reduced to its display text rather than left dangling.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

SHARED_FIRST = ("hospitalInformation", "practitionerInformation")


@dataclass(slots=True)
class SeedReport:
    patients: list[str] = field(default_factory=list)
    resources: int = 0
    dropped_references: int = 0


def seed_order(paths: Iterable[Path]) -> list[Path]:
    """Hospital and practitioner bundles first, then patients; metadata files are skipped."""
    bundles = [p for p in paths if p.suffix == ".json" and not p.name.startswith("metadata")]
    return sorted(bundles, key=lambda p: (not p.name.startswith(SHARED_FIRST), p.name))


def identifier_index(bundle: dict[str, Any]) -> dict[str, str]:
    """``Type?identifier=system|value`` → ``Type/id`` for every resource of a bundle."""
    index = {}
    for entry in bundle.get("entry", []):
        resource = entry.get("resource", {})
        for identifier in resource.get("identifier", []):
            kind = resource["resourceType"]
            key = f"{kind}?identifier={identifier.get('system')}|{identifier.get('value')}"
            index[key] = f"{kind}/{resource['id']}"
    return index


def _rewrite(value: Any, targets: dict[str, str], report: SeedReport) -> Any:
    if isinstance(value, list):
        return [_rewrite(item, targets, report) for item in value]
    if not isinstance(value, dict):
        return value
    rewritten = {key: _rewrite(item, targets, report) for key, item in value.items()}
    reference = rewritten.get("reference")
    if isinstance(reference, str) and (reference.startswith("urn:uuid:") or "?" in reference):
        if reference in targets:
            rewritten["reference"] = targets[reference]
        else:
            del rewritten["reference"]
            report.dropped_references += 1
    return rewritten


def prepare_bundle(
    bundle: dict[str, Any], identifiers: dict[str, str], report: SeedReport
) -> dict[str, Any]:
    """The bundle as a transaction of ``PUT Type/id`` entries with every reference resolvable."""
    targets = dict(identifiers)
    for entry in bundle.get("entry", []):
        resource = entry["resource"]
        if entry.get("fullUrl"):
            targets[entry["fullUrl"]] = f"{resource['resourceType']}/{resource['id']}"
    entries = []
    for entry in bundle.get("entry", []):
        resource = _rewrite(entry["resource"], targets, report)
        location = f"{resource['resourceType']}/{resource['id']}"
        entries.append({"resource": resource, "request": {"method": "PUT", "url": location}})
        if resource["resourceType"] == "Patient":
            report.patients.append(location)
    report.resources += len(entries)
    return {"resourceType": "Bundle", "type": "transaction", "entry": entries}


def seed(
    client: httpx.Client, fhir_base: str, admin_token: str, paths: Iterable[Path]
) -> SeedReport:
    """Load the bundles in ``paths`` (files or folders) into the sandbox FHIR server."""
    files: list[Path] = []
    for path in paths:
        files += sorted(path.glob("*.json")) if path.is_dir() else [path]
    report = SeedReport()
    identifiers: dict[str, str] = {}
    for path in seed_order(files):
        bundle = json.loads(path.read_bytes())
        if bundle.get("resourceType") != "Bundle":
            continue
        if path.name.startswith(SHARED_FIRST):
            identifiers |= identifier_index(bundle)
        response = client.post(
            fhir_base,
            json=prepare_bundle(bundle, identifiers, report),
            headers={"x-admin-token": admin_token, "content-type": "application/fhir+json"},
            timeout=300,
        )
        response.raise_for_status()
        failed = [
            entry["response"]
            for entry in response.json().get("entry", [])
            if not str(entry.get("response", {}).get("status", "")).startswith("2")
        ]
        if failed:
            raise RuntimeError(f"{path.name}: {len(failed)} entries failed, first: {failed[0]}")
    return report
