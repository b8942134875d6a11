"""The condition at discharge: the disposition, the last vital signs (and the signs that set
left out, at their last reading), and what the notes say of it."""

from __future__ import annotations

from typing import Any

from pipeline.clinical.results import is_vital_sign
from pipeline.evidence.model import (
    EncounterAttributes,
    EvidenceState,
    Fact,
    LabResultAttributes,
    attributes_as,
    aware,
)
from pipeline.evidence.summary import Sentence
from pipeline.summarizing.sections.common import NEVER, cited_sentence, effective, last_moment


def condition_at_discharge_section(
    state: EvidenceState, render: Any, stay: Fact | None
) -> list[Sentence]:
    """The Joint Commission's condition at discharge: disposition, the last vital signs, and
    what the notes say of it, quoted (a measure from before the stay is never its condition at
    discharge). The disposition is said here only (the header and the course once repeated it:
    three times in one draft)."""
    sentences = []
    if (
        stay is not None
        and isinstance(stay.attributes, EncounterAttributes)
        and stay.attributes.discharge_disposition
    ):
        text = render.disposition(stay.attributes)
        sentences.append(cited_sentence("condition_at_discharge", text, [stay.id]))
    vitals = [
        f
        for f in state.facts["lab_result"]
        if isinstance(f.attributes, LabResultAttributes)
        and is_vital_sign(f.attributes)
        and not f.attributes.baseline
        and f.attributes.effective is not None
    ]
    if vitals:
        last = max(effective(f) or NEVER for f in vitals)
        latest = [f for f in vitals if effective(f) == last]
        moment = last_moment(last, stay, first=min(effective(f) or NEVER for f in vitals))
        text = render.vital_signs(moment, last, [f.attributes for f in latest])
        sentences.append(cited_sentence("condition_at_discharge", text, [f.id for f in latest]))
        sentences += _signs_last_taken_earlier(vitals, latest, stay, render)
    sentences += [
        cited_sentence("condition_at_discharge", render.quote(f.attributes), [f.id])
        for f in state.facts["condition_statement"]
    ]
    return sentences


def _signs_last_taken_earlier(
    vitals: list[Fact], latest: list[Fact], stay: Fact | None, render: Any
) -> list[Sentence]:
    """The vital signs of the stay that the last set does not hold: a last set of one body
    weight said nothing of the saturation of 88 % that morning, nor that no saturation, blood
    pressure or heart rate was taken after it. A sign last taken in the admission's set (its
    value shown under Key results) is named only; one taken later is given at its last reading."""
    encounter = stay.attributes if stay else None
    if not isinstance(encounter, EncounterAttributes) or encounter.start is None:
        return []
    shown = {attributes_as(f, LabResultAttributes).name for f in latest}
    in_stay = sorted(
        (f for f in vitals if aware(effective(f) or NEVER) >= aware(encounter.start)),
        key=lambda f: aware(effective(f) or NEVER),
    )
    if not in_stay:
        return []
    admission_set = effective(in_stay[0])
    last_of: dict[str, Fact] = {}
    for fact in in_stay:
        name = attributes_as(fact, LabResultAttributes).name
        if name not in shown:
            last_of[name] = fact
    if not last_of:
        return []
    at_admission = [f for f in last_of.values() if effective(f) == admission_set]
    later = [f for f in last_of.values() if effective(f) != admission_set]
    text = render.vital_signs_last_taken(
        [f.attributes for f in at_admission], [f.attributes for f in later]
    )
    return [cited_sentence("condition_at_discharge", text, [f.id for f in last_of.values()])]
