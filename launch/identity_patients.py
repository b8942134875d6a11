"""Patients for the identity tests and benchmark, built by hand from what each PDF of
``../shared/data/pdfs`` says about its subject (name, date of birth, identifier, sex), and one
other patient whom none of them is about."""

from __future__ import annotations

from typing import Any


def patient(
    given: list[str] | None = None,
    family: str | None = None,
    birth_date: str | None = None,
    identifiers: tuple[str, ...] = (),
    gender: str | None = None,
) -> dict[str, Any]:
    resource: dict[str, Any] = {"resourceType": "Patient", "id": "chart-patient"}
    if given or family:
        resource["name"] = [{"given": given or [], "family": family}]
    if birth_date:
        resource["birthDate"] = birth_date
    if identifiers:
        resource["identifier"] = [{"value": value} for value in identifiers]
    if gender:
        resource["gender"] = gender
    return resource


# Path under ../shared/data/pdfs → the Patient the document is about.
DOCUMENT_PATIENTS: dict[str, dict[str, Any]] = {
    # "Martha Collins is a 50-year-old female …" (prose only).
    "aci-bench-print/note_1_D2N001.pdf": patient(["Martha"], "Collins", gender="female"),
    # "Elizabeth Williams, born on 07/06/1949 …", "Hospital ID: HOSP17622343"; dates day first.
    "derived-mixed/mixed_PDF_Deid_Deidentification_1__p2_image.pdf": patient(
        ["Elizabeth"], "Williams", "1949-06-07", ("HOSP17622343",), "female"
    ),
    # A page header on every page: "Roger Rienman McBee".
    "hl7/McBee_L1_20151116_Embedded.pdf": patient(["Roger", "Rienman"], "McBee", gender="male"),
    # "Patient ID: 12345", "Patient Name: Levin, Henry L.", "56-year-old white male".
    "hl7/UD_sample.pdf": patient(["Henry", "L."], "Levin", identifiers=("12345",), gender="male"),
    # "Kimberly Lawrence, born on 24/05/1977", "Hospital ID: HOSP26508961", "Sex: Female".
    "jsl/PDF_Deid_Deidentification_0.pdf": patient(
        ["Kimberly"], "Lawrence", "1977-05-24", ("HOSP26508961",), "female"
    ),
    # "PATIENT NAME: Jonathan Miller MRIN: 4829746", "DOB: 07/15/2005 20Y Female".
    "jsl/PDF_Deid_Deidentification_Hard_0.pdf": patient(
        ["Jonathan"], "Miller", "2005-07-15", ("4829746",), "female"
    ),
    # "Patient Name : Susan Frances Martin Date Of Birth : 08/08/1951" (the summary paragraph
    # and later pages give other dates: the document contradicts itself).
    "jsl/PDF_Deid_Deidentification_Medium_0.pdf": patient(
        ["Susan", "Frances"], "Martin", "1951-08-08", ("HOSP20831933",), "female"
    ),
    # "Patient ID: P001", "DOB: 1972-05-14", "Sex: M"; no name.
    "mosaicx/P001_CT_2025-08-01.pdf": patient(None, None, "1972-05-14", ("P001",), "male"),
    "mosaicx/P001_CT_2025-09-10.pdf": patient(None, None, "1972-05-14", ("P001",), "male"),
    # "Patient Name: Sarah Johnson", "Patient ID: PID-12345", "Date of Birth: March 15, 1985".
    "mosaicx/sample_patient_vitals.pdf": patient(
        ["Sarah"], "Johnson", "1985-03-15", ("PID-12345",), "female"
    ),
}

# The chart every document is also attached to: a patient none of them is about.
OTHER_PATIENT = patient(["Justin"], "Norman", "1965-12-28", ("MRN-00417",), "male")
