"""The error classes a signing hospitalist found in evidence-only drafts, counted per Synthea stay.

Each count is read from the draft (its sentences, flags and markdown) against the raw record,
not from the rule that is meant to prevent it, so a rule that regresses shows here:

- stale continued: a CONTINUED order last written over 12 months before admission that no
  note of the stay names;
- renewal as new: a NEW order whose drug (RxNorm code) was ordered within the 12 months before
  admission;
- dropped home drug: an order active at admission, written within the 12 months before it, a
  current MedicationStatement, or a drug a note's "Medications" list names, that no line of the
  medication section names (not an office treatment: a drug a completed order gave at its own
  encounter);
- prescribed "not continued": a drug a note of the stay lists as prescribed that a "not
  continued at discharge" line names and no line going home (CONTINUED, NEW, CHANGED) does;
- false absent: a flag calling a drug "absent from the orders" while an order of it exists;
- missing index procedure: a significant procedure of the episode (not routine or
  administrative care, ``routine_procedures``) that no sentence names;
- non-clinical reason: a "Reason for the stay" naming a procedure or an administrative step;
- unflagged critical: a critical result with no Needs review line;
- old at discharge: values "at discharge" taken over 24 hours before discharge;
- allergy contradiction: "No Known Allergies" in the Allergies section beside a recorded one;
- duplicate or self-repeating flag: a Needs review line twice, or a flag repeating its sentence;
- citations per line (most) and the citations' share of the markdown's words (goal ≤ 15 %).

Run: ``python -m bench.draft_errors [--split california_validation]`` (the stays the rules are
tuned on by default).
"""

from __future__ import annotations

import argparse
import re
from datetime import datetime, timedelta
from typing import Any

from bench.raw_record import office_treatments, orders, rxnorm
from bench.synthea import SPLITS, bundles, read_bundle
from fhir_mapping.demographics import NOT_A_REASON
from pipeline.clinical.medications import main_ingredient
from pipeline.clinical.results import CRITICAL
from pipeline.clinical.tables import table
from pipeline.evidence.model import (
    AllergyAttributes,
    EvidenceState,
    LabResultAttributes,
    MedicationAttributes,
    ProcedureAttributes,
    aware,
)
from pipeline.evidence.summary import Summary
from pipeline.settings import PipelineSettings
from pipeline.summarizing.evidence_summary import summarize_evidence
from pipeline.summarizing.summary_text import render_markdown
from pipeline.text.rendering import plain_term
from smartapp.jobs.evidence import evidence_from_fhir

YEAR = timedelta(days=365)
DAY = timedelta(hours=24)
COLUMNS = (
    "stale continued",
    "renewal as new",
    "dropped home drug",
    "prescribed not continued",
    "false absent",
    "missing index procedure",
    "non-clinical reason",
    "unflagged critical",
    "old at discharge",
    "allergy contradiction",
    "duplicate flag",
)


def _lines(summary: Summary, key: str) -> list[str]:
    return [sentence.text for sentence in summary.section(key).sentences]


HOME_LIST = re.compile(r"^#+ *Medications *\n(.*?)(?=^#|\Z)", re.MULTILINE | re.DOTALL)
GOING_HOME = re.compile(r"(?:CONTINUED|NEW|CHANGED)\b")
PRESCRIBED_LIST = re.compile(
    r"prescribed the following medications:\n(.*?)(?=^\S*The patient was|^#|\Z)",
    re.MULTILINE | re.DOTALL,
)


def _listed(state: EvidenceState, heading: re.Pattern[str]) -> list[str]:
    """The drugs the stay's notes list under a heading, read from the raw text (one per
    "- " line or ";" item; "No Active Medications" names none)."""
    found = []
    for document in state.documents:
        for page in document.pages:
            for block in heading.findall(page.text):
                for item in re.split(r"[;\n]", block):
                    item = item.strip(" -*.\t")
                    if item and not item.lower().startswith(("no ", "none")):
                        found.append(item)
    return found


def count_errors(data: dict[str, Any], state: EvidenceState, summary: Summary) -> dict[str, int]:
    stay = state.stay()
    admitted = aware(stay.start) if stay and stay.start else None
    discharged = aware(stay.end) if stay and stay.end else None
    notes = " ".join(p.text for d in state.documents for p in d.pages).lower()
    medications = _lines(summary, "medications")
    review = _lines(summary, "needs_review")
    everything = " ".join(s.text for s in summary.sentences()).lower()
    counts = dict.fromkeys(COLUMNS, 0)
    meds = {f.id: f.attributes for f in state.facts["medication"]}
    for change in state.medications.changes:
        before = meds.get(change.admission or "")
        if change.kind == "continued" and isinstance(before, MedicationAttributes):
            old = before.authored_on and admitted and aware(before.authored_on) < admitted - YEAR
            if old and main_ingredient(before.name) not in notes:
                counts["stale continued"] += 1
    earlier = [
        order
        for order in orders(data, state.patient.split("/")[-1])
        if admitted is not None
        and "authoredOn" in order
        and admitted - YEAR <= aware(datetime.fromisoformat(order["authoredOn"])) < admitted
    ]
    recent_codes = {rxnorm(order) for order in earlier} - {None}
    for change in state.medications.changes:
        after = meds.get(change.discharge or "")
        if (
            change.kind == "new"
            and isinstance(after, MedicationAttributes)
            and after.code is not None
            and after.code.code in recent_codes
        ):
            counts["renewal as new"] += 1
    for order in earlier:
        name = order.get("medicationCodeableConcept", {}).get("text") or ""
        active = order.get("status") in {"active", "on-hold"}
        if (
            active
            and name
            and not any(main_ingredient(name) in line.lower() for line in medications)
        ):
            counts["dropped home drug"] += 1
    statements = [
        entry["resource"]
        for entry in data.get("entry", [])
        if entry["resource"].get("resourceType") == "MedicationStatement"
        and entry["resource"].get("status") in {"active", "intended", "on-hold", "unknown"}
    ]
    home = [s.get("medicationCodeableConcept", {}).get("text") or "" for s in statements]
    home += _listed(state, HOME_LIST)
    office = office_treatments(data)
    for name in [n for n in home if n and main_ingredient(n) not in office]:
        counts["dropped home drug"] += not any(
            main_ingredient(name) in line.lower() for line in medications
        )
    not_continued = " ".join(line for line in medications if "not continued" in line).lower()
    # A drug going home in one form is continued, whatever other form of it the stay gave and
    # stopped (the injections of a stay beside the tablets continued).
    going = " ".join(line for line in medications if GOING_HOME.match(line)).lower()
    counts["prescribed not continued"] = sum(
        main_ingredient(name) in not_continued and main_ingredient(name) not in going
        for name in _listed(state, PRESCRIBED_LIST)
    )
    ordered = {
        main_ingredient(m.name) for m in meds.values() if isinstance(m, MedicationAttributes)
    }
    for line in review:
        for named in re.findall(r"it names (.+?) \(absent from the orders\)", line):
            counts["false absent"] += sum(
                main_ingredient(item) in ordered for item in named.split("; ")
            )
    routine = table("routine_procedures", PipelineSettings())
    for fact in state.facts["procedure"]:
        procedure = fact.attributes
        if not isinstance(procedure, ProcedureAttributes):
            continue
        code = procedure.code.code if procedure.code else None
        if not routine.matches(code, procedure.name):
            named = plain_term(procedure.name).lower() in everything
            counts["missing index procedure"] += not named
    counts["non-clinical reason"] = sum(
        bool(NOT_A_REASON.search(line))
        for line in _lines(summary, "stay")
        if line.startswith("Reason for the stay")
    )
    for fact in state.facts["lab_result"]:
        result = fact.attributes
        critical = isinstance(result, LabResultAttributes) and result.flag in CRITICAL
        if critical and not result.baseline and not any(result.name in ln for ln in review):
            counts["unflagged critical"] += 1
    for sentence in summary.sentences():
        if "at discharge (" in sentence.text and discharged is not None:
            for fact_id in sentence.citations:
                value = state.fact(fact_id).attributes
                if isinstance(value, LabResultAttributes) and value.effective is not None:
                    counts["old at discharge"] += discharged - aware(value.effective) > DAY
    allergies = _lines(summary, "allergies")
    recorded = [
        a
        for a in state.facts["allergy"]
        if isinstance(a.attributes, AllergyAttributes) and not a.attributes.no_known_allergies
    ]
    if recorded and any("no known allergies" in line.lower() for line in allergies):
        counts["allergy contradiction"] += 1
    counts["duplicate flag"] = (
        len(review)
        - len(set(review))
        + sum(
            flag.reason == sentence.text.rstrip(".")
            for sentence in summary.sentences()
            if sentence.section != "needs_review"
            for flag in sentence.flags
        )
    )
    return counts


def citation_load(markdown: str) -> tuple[int, float, float]:
    """The most citations on one line; the share of the draft's words that are its lines'
    bracketed citations; and that share counting the Sources list too."""
    body, _, sources = markdown.partition("\n## Sources")
    most = 0
    inline = 0
    for line in body.splitlines():
        brackets = re.findall(r"\[([\d,\s–]+)\]\s*(?:\*|$)", line)
        most = max(most, sum(len(group.split(",")) for group in brackets))
        inline += sum(len(group.split()) for group in brackets)
    words = max(1, len(markdown.split()))
    return most, inline / words, (inline + len(sources.split())) / words


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--split", choices=SPLITS, default="california")
    split = parser.parse_args().split
    print(f"Error classes in the evidence-only drafts of the Synthea stays, {split} (goal: all 0)")
    print(
        f"| stay | {' | '.join(COLUMNS)} | most citations on a line | citation share "
        "| with the Sources list |"
    )
    print(f"|{'---|' * (len(COLUMNS) + 4)}")
    totals = dict.fromkeys(COLUMNS, 0)
    shares, with_sources = [], []
    for path in bundles(split):
        data = read_bundle(path)
        state = evidence_from_fhir(data, settings=PipelineSettings())
        summary = summarize_evidence(state, settings=PipelineSettings())
        counts = count_errors(data, state, summary)
        most, share, listed = citation_load(render_markdown(summary, state))
        shares.append(share)
        with_sources.append(listed)
        for key, value in counts.items():
            totals[key] += value
        cells = " | ".join(str(counts[column]) for column in COLUMNS)
        print(f"| {path.name[:8]} | {cells} | {most} | {share:.0%} | {listed:.0%} |")
    cells = " | ".join(str(totals[column]) for column in COLUMNS)
    middle = len(shares) // 2
    print(
        f"| all | {cells} | | median {sorted(shares)[middle]:.0%} "
        f"| median {sorted(with_sources)[middle]:.0%} |"
    )


if __name__ == "__main__":
    main()
