"""Patients for the review tests, and a sandbox where one of them has a note full of markup."""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator
from contextlib import contextmanager

import httpx

from launch.identity_patients import DOCUMENT_PATIENTS
from launch.sandbox.run import Sandbox
from pipeline.ingestion.pdf import page_png
from tests import fhir_fixtures as fx
from tests.conftest import SAMPLE_PDF
from tests.smart_support import inpatient_encounter

ONE_FLAG = "0d4fcba9-b3c9-1765-4a0f-120004c84bb3"
MANY_FLAGS = "97da660e-b895-3740-a6fc-f8cb48dcf20c"
HOSTILE = "c1f85d12-7225-ae0a-d9a2-67fbd365c447"
# Henry L. Levin of tests/data/UD_sample.pdf, with that PDF and a scan of its second page as the
# notes of one stay. PDF_NAME is the file's name in the identity table of the shared data.
PDF_PATIENT = "5f0c7a3e-2b1d-4c8e-9a6f-0d1e2f3a4b5c"
PDF_NAME = "hl7/UD_sample.pdf"
HOSTILE_NOTE = (
    "Hospital Course:\nWound check <img src=x onerror=\"document.body.dataset.pwned='1'\"> "
    "showed healing after surgery. Patient <script>document.title='pwned'</script> recovered "
    "well on the ward and tolerated diet.\n"
)


@contextmanager
def hostile_sandbox() -> Iterator[Sandbox]:
    """A sandbox of its own: one patient gets a hostile note, which no other test should see."""
    with Sandbox(app_launch_url="http://127.0.0.1:1/launch") as box:
        with httpx.Client() as browser:
            encounter = inpatient_encounter(browser, box, HOSTILE)
        note = {
            "resourceType": "DocumentReference",
            "id": "hostile-note",
            "status": "current",
            "type": {"coding": [{"system": "http://loinc.org", "code": "11506-3"}]},
            "subject": {"reference": f"Patient/{HOSTILE}"},
            "context": {"encounter": [{"reference": f"Encounter/{encounter}"}]},
            "content": [
                {
                    "attachment": {
                        "contentType": "text/plain",
                        "data": base64.b64encode(HOSTILE_NOTE.encode()).decode(),
                    }
                }
            ],
        }
        admin = {"x-admin-token": box.admin_token}
        httpx.put(
            f"{box.fhir_base}/DocumentReference/hostile-note", json=note, headers=admin
        ).raise_for_status()
        with httpx.Client() as browser:
            stay = inpatient_encounter(browser, box, ONE_FLAG)
        discharged = httpx.get(f"{box.fhir_base}/Encounter/{stay}", headers=admin).json()
        _leave_one_flag(box, ONE_FLAG, admin, discharged["period"]["end"])
        _add_pdf_patient(box, admin)
        yield box


def _add_pdf_patient(box: Sandbox, admin: dict[str, str]) -> None:
    """PDF_PATIENT: a stay whose notes are a PDF with a text layer and a scanned page (a PNG of
    the PDF's second page, read by OCR), so the review shows both beside the draft."""
    pdf = SAMPLE_PDF.read_bytes()
    scan = page_png(pdf, 1, 300 / 72)
    stay = f"{PDF_PATIENT[:-4]}0001"
    patient = DOCUMENT_PATIENTS[PDF_NAME] | {"id": PDF_PATIENT}
    encounter = fx.encounter(stay, patient_id=PDF_PATIENT)

    def note(number: int, title: str, content_type: str, data: bytes) -> dict:
        return {
            "resourceType": "DocumentReference",
            "id": f"{PDF_PATIENT[:-4]}{number:04d}",
            "status": "current",
            "type": {"text": "Consult note"},
            "description": title,
            "subject": {"reference": f"Patient/{PDF_PATIENT}"},
            "date": "2024-03-04T10:00:00Z",
            "context": {"encounter": [{"reference": f"Encounter/{stay}"}]},
            "content": [
                {
                    "attachment": {
                        "contentType": content_type,
                        "data": base64.b64encode(data).decode(),
                    }
                }
            ],
        }

    for resource in (
        patient,
        encounter,
        note(2, "Outside hospital record", "application/pdf", pdf),
        note(3, "Scanned consult", "image/png", scan),
    ):
        url = f"{box.fhir_base}/{resource['resourceType']}/{resource['id']}"
        httpx.put(url, json=resource, headers=admin).raise_for_status()


def _leave_one_flag(box: Sandbox, patient: str, admin: dict[str, str], discharged: str) -> None:
    """ONE_FLAG's record also calls a 1997 infarction and a 1998 sepsis still active (two
    data-quality flags), leaves clopidogrel beside prasugrel and simvastatin beside rosuvastatin
    (two duplications), naproxen beside aspirin and prasugrel (an NSAID with antiplatelets, a
    high bleeding risk) and its osteoarthritis (a pain plan), prasugrel with no PCI, its
    notes list no medications beside home orders (a discrepancy), and
    its cardiovascular drugs are ordered "as needed" (a regimen risk); the stay is coded only as
    awaiting a kidney transplant (no principal diagnosis), the recipient goes home with no
    immunosuppressant, and its diabetes has no HbA1c. Here the events resolved a year after
    onset, the older drugs were completed (prasugrel too), the others are taken on a schedule,
    the stay names its clinical reason, tacrolimus is ordered, an HbA1c is measured and the
    notes list the orders, so one flag remains: the orders without a complete dosage."""

    def update(kind: str, change) -> None:
        found = httpx.get(
            f"{box.fhir_base}/{kind}", params={"patient": f"Patient/{patient}"}, headers=admin
        ).json()
        for entry in found.get("entry", []):
            changed = change(entry["resource"])
            if changed is not None:
                url = f"{box.fhir_base}/{kind}/{changed['id']}"
                httpx.put(url, json=changed, headers=admin).raise_for_status()

    def resolve(condition: dict) -> dict | None:
        if condition["code"]["coding"][0]["code"] not in {"401303003", "91302008"}:
            return None
        onset = condition["onsetDateTime"]
        return condition | {
            "clinicalStatus": {"coding": [{"code": "resolved"}]},
            "abatementDateTime": f"{int(onset[:4]) + 1}{onset[4:]}",
        }

    def complete(order: dict) -> dict | None:
        name = order.get("medicationCodeableConcept", {}).get("text", "")
        if name.startswith(("Clopidogrel", "Simva", "Naproxen", "prasugrel")):
            return order | {"status": "completed"}
        scheduled = [
            {key: value for key, value in dosage.items() if key != "asNeededBoolean"}
            for dosage in order.get("dosageInstruction", [])
        ]
        return order | {"dosageInstruction": scheduled} if scheduled else None

    update("Condition", resolve)
    update("MedicationRequest", complete)
    _treat_the_transplant(box, patient, admin)
    orders = httpx.get(
        f"{box.fhir_base}/MedicationRequest",
        params={"patient": f"Patient/{patient}"},
        headers=admin,
    ).json()
    listed = "; ".join(
        e["resource"].get("medicationCodeableConcept", {}).get("text", "")
        for e in orders["entry"]
        if e["resource"]["status"] in {"active", "on-hold"}
        and e["resource"].get("authoredOn", "") <= discharged
    )

    def list_orders(note: dict) -> dict | None:
        attachments = [c["attachment"] for c in note.get("content", [])] + note.get(
            "presentedForm", []
        )
        changed = False
        for attachment in attachments:
            text = base64.b64decode(attachment.get("data", "")).decode("utf-8", "replace")
            if "# Medications\nNo Active Medications." in text:
                text = text.replace("No Active Medications.", listed)
                attachment["data"] = base64.b64encode(text.encode()).decode()
                changed = True
        return note if changed else None

    update("DocumentReference", list_orders)
    update("DiagnosticReport", list_orders)


def _treat_the_transplant(box: Sandbox, patient: str, admin: dict[str, str]) -> None:
    """The stay names end-stage renal disease as its reason, records the transplant itself (its
    "History of renal transplant" would otherwise be a treatment the record only implies),
    measures the graft's function (a creatinine and a potassium before discharge, without which
    the lisinopril going home is asked about) and the diabetes's HbA1c (asked for where none of
    the three months before admission is on record), and tacrolimus goes home, with the
    Pneumocystis and cytomegalovirus prophylaxis of the months after a transplant."""
    with httpx.Client() as browser:
        stay_id = inpatient_encounter(browser, box, patient)
    stay = httpx.get(f"{box.fhir_base}/Encounter/{stay_id}", headers=admin).json()
    disease = {
        "coding": [
            {
                "system": "http://snomed.info/sct",
                "code": "46177005",
                "display": "End-stage renal disease (disorder)",
            }
        ],
        "text": "End-stage renal disease (disorder)",
    }
    stay["reasonCode"] = [disease, *stay.get("reasonCode", [])]
    httpx.put(f"{box.fhir_base}/Encounter/{stay_id}", json=stay, headers=admin).raise_for_status()
    for key, name, unit, per_day in (
        ("tacrolimus", "tacrolimus 1 MG Oral Capsule", "1 capsule", 2),
        ("prophylaxis", "sulfamethoxazole 400 MG / trimethoprim 80 MG Oral Tablet", "1 tablet", 1),
        ("valganciclovir", "valganciclovir 450 MG Oral Tablet", "1 tablet", 1),
    ):
        order = fx.medication_request(
            f"one-flag-{key}",
            name,
            encounter_id=stay_id,
            authored=stay["period"]["start"],
            dose=unit,
            frequency=(per_day, 1, "d"),
            route="oral",
        ) | {"subject": {"reference": f"Patient/{patient}"}}
        httpx.put(
            f"{box.fhir_base}/MedicationRequest/one-flag-{key}", json=order, headers=admin
        ).raise_for_status()
    transplant = fx.procedure(
        "one-flag-transplant", "Transplantation of kidney (procedure)", encounter_id=stay_id
    ) | {
        "subject": {"reference": f"Patient/{patient}"},
        "performedDateTime": stay["period"]["start"],
    }
    httpx.put(
        f"{box.fhir_base}/Procedure/one-flag-transplant", json=transplant, headers=admin
    ).raise_for_status()
    for loinc, name, value, unit, normal in (
        ("2160-0", "Creatinine", 1.1, "mg/dL", (0.6, 1.3)),
        ("2823-3", "Potassium", 4.2, "mmol/L", (3.5, 5.1)),
        ("4548-4", "Hemoglobin A1c/Hemoglobin.total in Blood", 7.2, "%", (4.0, 5.6)),
    ):
        measured = fx.observation(
            f"one-flag-{loinc}", name, value, unit, loinc=loinc, when=stay["period"]["end"]
        ) | {
            "subject": {"reference": f"Patient/{patient}"},
            "encounter": {"reference": f"Encounter/{stay_id}"},
            "referenceRange": [{"low": {"value": normal[0]}, "high": {"value": normal[1]}}],
        }
        httpx.put(
            f"{box.fhir_base}/Observation/one-flag-{loinc}", json=measured, headers=admin
        ).raise_for_status()


def form_values(page: str) -> dict[str, str]:
    return {
        "csrf_token": re.search(r'name="csrf_token" value="([^"]+)"', page).group(1),
        "revision": re.search(r'name="revision" value="(\d+)"', page).group(1),
    }


def flagged_ids(page: str) -> list[str]:
    return re.findall(r'<li id="([^"]+)" class="sentence flagged"', page)


def unflagged_ids(page: str) -> list[str]:
    return re.findall(r'<li id="([^"]+)" class="sentence" ', page)


def accept_all(browser: httpx.Client, base_url: str, draft: str) -> str:
    """Accept every flagged sentence as written; the review page afterwards."""
    page = browser.get(f"{base_url}/drafts/{draft}").text
    for flagged in flagged_ids(page):
        page = browser.post(
            f"{base_url}/drafts/{draft}/sentences/{flagged}",
            data=form_values(page) | {"action": "accept"},
        ).text
    return page
