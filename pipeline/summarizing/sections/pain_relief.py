"""After an operation, the pain relief at home: a line in Discharge medications where nothing
going home or at home relieves pain (APS/ASRA/ASA 2016 postoperative pain guideline: a
documented pain management plan that carries on at home). Readers of four surgical drafts
found no analgesic ordered after the operation and nothing saying so; beside a drug use
disorder on record, the line asks for relief that prefers non-opioid analgesics (CDC 2022;
ASAM 2020), which a reader found unlinked after a transplant of a patient with an opioid
addiction. Like every "Not documented", it states what is missing and is no flag."""

from __future__ import annotations

from typing import Any

from pipeline.clinical.drug_classes import noted_at_home
from pipeline.clinical.pain_plan import analgesic_ingredients
from pipeline.clinical.risk_flags import active_diagnoses, having
from pipeline.clinical.tables import CodeTable, names_it
from pipeline.evidence.model import (
    DiagnosisAttributes,
    EvidenceState,
    MedicationAttributes,
    attributes_as,
)
from pipeline.evidence.summary import Sentence
from pipeline.summarizing.sections.common import cited_sentence
from pipeline.summarizing.sections.operations import operations_of_episode


def post_operative_pain_relief(
    state: EvidenceState, render: Any, tables: tuple[CodeTable, CodeTable, CodeTable]
) -> list[Sentence]:
    """One line when the stay operated (recorded, or implied) and no drug going home, to
    confirm, or at home with no discharge order (ordered, or on a note's home list) relieves
    pain. ``tables``: the routine procedures, the drug classes and the pain plan's."""
    routine, drug_table, pain = tables
    relieving = analgesic_ingredients(drug_table, pain, after_operation=True)
    operations = operations_of_episode(state, routine)
    if not operations:
        return []
    medications = state.medications
    may_take = {*medications.discharge, *medications.unconfirmed(), *medications.held_at_home()}
    drugs = [
        f
        for f in state.facts["medication"]
        if f.id in may_take and isinstance(f.attributes, MedicationAttributes)
    ]
    if having([*drugs, *noted_at_home(state)], relieving):
        return []
    disorder = active_diagnoses(state, lambda term: names_it(term, pain.extra["use_disorder"]))
    named = [attributes_as(f, DiagnosisAttributes).display for f in disorder[:1]]
    text = render.no_post_operative_analgesic([(name, when) for name, when, _ in operations], named)
    cited = [fact_id for *_, fact_ids in operations for fact_id in fact_ids]
    return [cited_sentence("medications", text, [*cited, *(f.id for f in disorder[:1])])]
