"""What the error classes read from a raw Synthea bundle itself (its orders, their codes, the
drugs given at the visit that ordered them),
never from the pipeline's mapping of it: a bench that read the mapping would miss the mapping's
own regressions."""

from __future__ import annotations

from typing import Any

from pipeline.clinical.medications import main_ingredient


def orders(data: dict[str, Any], patient: str) -> list[dict[str, Any]]:
    return [
        entry["resource"]
        for entry in data.get("entry", [])
        if entry["resource"].get("resourceType") == "MedicationRequest"
        and entry["resource"].get("subject", {}).get("reference", "").endswith(patient)
    ]


def rxnorm(order: dict[str, Any]) -> str | None:
    codings = order.get("medicationCodeableConcept", {}).get("coding", [])
    return codings[0].get("code") if codings else None


def office_treatments(data: dict[str, Any]) -> set[str]:
    """The main ingredient of each drug a completed order gave at its own encounter (by a
    MedicationAdministration there): an office treatment, not a home drug."""
    resources = [entry["resource"] for entry in data.get("entry", [])]
    named = {
        f"urn:uuid:{r['id']}": r.get("code", {}).get("text") or ""
        for r in resources
        if r.get("resourceType") == "Medication"
    }

    def drug(r: dict[str, Any]) -> str:
        text = r.get("medicationCodeableConcept", {}).get("text")
        return main_ingredient(
            text or named.get(r.get("medicationReference", {}).get("reference", ""), "")
        )

    given = {
        (r.get("context", {}).get("reference"), drug(r))
        for r in resources
        if r.get("resourceType") == "MedicationAdministration" and r.get("status") == "completed"
    }
    return {
        drug(r)
        for r in resources
        if r.get("resourceType") == "MedicationRequest"
        and r.get("status") == "completed"
        and (r.get("encounter", {}).get("reference"), drug(r)) in given
    }
