"""What leaves Provenote carries no identifier of the patient, whichever field or sentence it is
in: a record seeded with each kind of HIPAA Safe Harbor identifier, written the ways notes write
them, comes out without any of them, its dates shifted by the patient's own offset."""

from __future__ import annotations

import json
import re
from datetime import date

import pytest

from smartapp.drafts.deidentify import date_spellings, patient_deidentifier

PATIENT = "5f1b3c2a-9d4e-4c1b-8a7f-2e6d9c0b1a34"
SECRET = b"export-secret"
RECORD = {
    "resourceType": "Bundle",
    "entry": [
        {
            "resource": {
                "resourceType": "Patient",
                "id": PATIENT,
                "name": [{"given": ["Rosalind", "Mae"], "family": "Okafor"}],
                "birthDate": "1955-03-15",
                "telecom": [
                    {"system": "phone", "value": "555-848-9277"},
                    {"system": "email", "value": "r.okafor@example.net"},
                ],
                "address": [
                    {
                        "line": ["140 VonRueden Estate Unit 87"],
                        "city": "Huntington Beach",
                        "postalCode": "92648",
                    }
                ],
                "identifier": [
                    {"value": "MRN-0042-7781"},
                    {"value": "999-53-2640"},
                    {"value": "S99983030"},
                ],
                "contact": [{"name": {"given": ["Tobias"], "family": "Okafor"}}],
            }
        },
        {
            "resource": {
                "resourceType": "RelatedPerson",
                "id": "rp-1",
                "name": [{"given": ["Imelda"], "family": "Castellanos"}],
                "telecom": [{"system": "phone", "value": "(555) 201-3344"}],
            }
        },
    ],
}
SEEDED = {
    "names": "Rosalind Mae Okafor, seen with her son Tobias and Imelda Castellanos.",
    "titled": "Mrs. Okafor was reviewed; Ms. Imelda Castellanos will drive her home.",
    "relative by pattern": "Her daughter Priya Raman visits daily; neighbor, John Doe, has keys.",
    "birth date": "DOB 03/15/1955 (March 15, 1955; 1955-03-15; 15 March 1955).",
    "contact": "Call 555-848-9277, (555) 201-3344 or +1 415.555.0199; r.okafor@example.net.",
    "address": "Lives at 140 VonRueden Estate Unit 87, Huntington Beach, CA 92648.",
    "address by pattern": "Discharged to 12 Oak Street, San Jose, CA 95112-1234.",
    "identifiers": "MRN MRN-0042-7781, SSN 999-53-2640, licence S99983030, ssn 123-45-6789.",
    "ids": f"See Encounter/enc-77, Patient/{PATIENT}; file 0b7e2c9a-1d3f-4e5a-9c8b-7a6f5e4d3c2b.",
    "url": "Portal: https://portal.example.org/patients/okafor",
    "old age": "A 92-year-old woman; 101 yo at follow-up.",
    "stay dates": "Admitted 2024-03-01T09:00:00Z, discharged 03/05/2024 (Mar 5, 2024).",
}
SURVIVORS = [
    "Rosalind", "Okafor", "Tobias", "Imelda", "Castellanos", "Priya", "Raman", "John Doe",
    "1955", "848-9277", "201-3344", "0199", "example.net", "VonRueden", "Huntington", "92648",
    "Oak Street", "San Jose", "95112", "0042-7781", "2640", "S99983030", "6789", "enc-77", PATIENT,
    "0b7e2c9a", "portal.example.org", "92-year", "101 yo", "2024-03-01", "03/05/2024",
    "Mar 5, 2024",
]  # fmt: skip


@pytest.fixture(scope="module")
def cleaned() -> dict[str, str]:
    deidentifier = patient_deidentifier(SECRET, PATIENT, None, RECORD)
    return {kind: deidentifier.text(text) for kind, text in SEEDED.items()}


@pytest.mark.parametrize("kind", sorted(SEEDED))
def test_no_identifier_of_any_kind_survives(cleaned: dict[str, str], kind: str) -> None:
    left = [survivor for survivor in SURVIVORS if survivor in cleaned[kind]]
    assert left == [], cleaned[kind]


def test_what_is_not_an_identifier_is_left_as_it_was(cleaned: dict[str, str]) -> None:
    assert cleaned["relative by pattern"].startswith("Her daughter [name] visits daily")
    assert cleaned["old age"] == "A 90 or older-year-old woman; 90 or older yo at follow-up."
    deidentifier = patient_deidentifier(SECRET, PATIENT, None, RECORD)
    clinical = "Creatinine 1.2 mg/dL; BP 128/76; metoprolol 25 mg twice daily; yes/no; and/or."
    assert deidentifier.text(clinical) == clinical


def test_dates_move_together_and_ids_keep_one_pseudonym_per_patient(
    cleaned: dict[str, str],
) -> None:
    """Intervals within the stay survive (admitted, then discharged 4 days later), the same id
    gets the same pseudonym, and another patient's dates move by another offset."""
    found = re.findall(
        r"\d{4}-\d{2}-\d{2}|\d{2}/\d{2}/\d{4}|[A-Z][a-z]+ \d{1,2}, \d{4}", cleaned["stay dates"]
    )
    admitted = date.fromisoformat(found[0])
    month, day, year = (int(part) for part in found[1].split("/"))
    assert (date(year, month, day) - admitted).days == 4
    assert 30 <= (date(2024, 3, 1) - admitted).days <= 365
    same = patient_deidentifier(SECRET, PATIENT, None, RECORD)
    assert same.text("Encounter/enc-77") in cleaned["ids"]
    other = patient_deidentifier(SECRET, "another-patient", None, None)
    assert other.shift != same.shift
    assert (
        "[date of birth]" in cleaned["birth date"]
        and cleaned["birth date"].count("[date of birth]") == 4
    )


def test_every_spelling_of_a_date_is_recognised() -> None:
    day = date(2024, 3, 5)
    deidentifier = patient_deidentifier(SECRET, PATIENT, None, None)
    for spelling in date_spellings(day):
        assert spelling not in deidentifier.text(f"seen on {spelling}."), spelling


def test_json_values_are_cleaned_keys_and_all() -> None:
    deidentifier = patient_deidentifier(SECRET, PATIENT, None, RECORD)
    value = {"Patient/" + PATIENT: ["Rosalind Okafor", {"phone": "555-848-9277"}], "n": 3}
    assert not any(
        part in json.dumps(deidentifier.value(value)) for part in ("Okafor", "9277", PATIENT)
    )


def test_a_malformed_record_is_read_as_far_as_it_goes_never_failing_the_export() -> None:
    """A pulled record is the EHR's JSON as it came: an element of the wrong shape is absent."""
    broken = {
        "entry": [
            {
                "resource": {
                    "resourceType": "Patient",
                    "name": [{"given": "Rosalind", "family": "Okafor"}, "not a name"],
                    "telecom": "555-848-9277",
                    "identifier": ["MRN-0042-7781", {"value": 7}],
                    "address": {"city": "Huntington Beach"},
                    "contact": "none",
                }
            },
            "not an entry",
        ]
    }
    deidentifier = patient_deidentifier(SECRET, PATIENT, None, broken)
    cleaned = deidentifier.text("Rosalind Okafor of Huntington Beach, phone 555-848-9277.")
    assert "Okafor" not in cleaned and "Huntington" not in cleaned and "9277" not in cleaned
