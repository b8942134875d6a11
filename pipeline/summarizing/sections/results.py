"""Key results: abnormal results by test with their trend, the normal ones in one line, imaging,
the vital signs at admission and those out of range during the stay."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from pipeline.clinical.results import is_minor, is_vital_sign
from pipeline.clinical.tables import CodeTable
from pipeline.evidence.model import (
    EvidenceState,
    Fact,
    ImagingAttributes,
    LabResultAttributes,
    attributes_as,
)
from pipeline.evidence.summary import (
    Sentence,
)
from pipeline.summarizing.sections.common import FLAG_ORDER, by_time, cited_sentence, effective


def _worst(results: Sequence[LabResultAttributes]) -> str | None:
    flags = {r.flag for r in results}
    return next((flag for flag in FLAG_ORDER if flag in flags), None)


def _vital_signs(facts: list[Fact], render: Any) -> list[Sentence]:
    """The first set of vital signs of the episode (the last is the condition at discharge's;
    a stay with one set shows it there only, each fact cited once), then the vital signs out of
    range between the two: an oxygen saturation of 88 % on the second day is not in either set."""
    timed = by_time([f for f in facts if effective(f) is not None], effective)
    if not timed or effective(timed[0]) == effective(timed[-1]):
        return []
    taken = effective(timed[0])
    same = [f for f in timed if effective(f) == taken]
    text = render.vital_signs("admission", taken, [f.attributes for f in same])
    sentences = [cited_sentence("results", text, [f.id for f in same])]
    discharge = effective(timed[-1])
    between = [f for f in timed if effective(f) not in (taken, discharge)]
    worst = _worst_out_of_range(between)
    if worst:
        text = render.vital_signs_out_of_range([f.attributes for f in worst])
        sentences.append(cited_sentence("results", text, [f.id for f in worst]))
    return sentences


def _worst_out_of_range(facts: Sequence[Fact]) -> list[Fact]:
    """For each vital sign with a reading out of range, its most extreme one (the first of
    equals), in the order the vital signs were first taken."""
    by_name: dict[str, list[tuple[Decimal, Fact]]] = defaultdict(list)
    for fact in facts:
        result = attributes_as(fact, LabResultAttributes)
        if result.flag in FLAG_ORDER and result.value is not None:
            by_name[result.name].append((result.value, fact))
    worst = []
    for readings in by_name.values():
        flag = _worst([attributes_as(f, LabResultAttributes) for _, f in readings])
        flagged = [
            (v, f) for v, f in readings if attributes_as(f, LabResultAttributes).flag == flag
        ]
        extreme = min if flag is not None and "low" in flag else max
        worst.append(extreme(flagged, key=lambda reading: reading[0])[1])
    return worst


def _grouped(state: EvidenceState) -> tuple[dict[str, list[Fact]], dict[str, Fact], list[Fact]]:
    """The stay's results by test (code, else name, and unit), the baseline before admission of
    each test, and the vital signs."""
    by_test: dict[str, list[Fact]] = defaultdict(list)
    baselines: dict[str, Fact] = {}
    vitals: list[Fact] = []
    for fact in state.facts["lab_result"]:
        result = fact.attributes
        assert isinstance(result, LabResultAttributes)
        key = (
            f"{result.code.code if result.code and result.code.code else result.name}|{result.unit}"
        )
        if result.baseline:
            baselines[key] = fact
        elif is_vital_sign(result):
            vitals.append(fact)
        else:
            by_test[key].append(fact)
    return by_test, baselines, vitals


def results_section(
    state: EvidenceState, render: Any, ranges: CodeTable, stay: Fact | None
) -> list[Sentence]:
    """Abnormal results first (critical, then high or low), each marked, with its trend over the
    episode and against the latest value before admission; the normal ones in one line, without
    screening scores and indices (``minor_results``); vital signs at admission and at discharge
    (or the latest, dated, when none was taken in the stay's last day)."""
    minor = ranges.extra.get("minor_results", {})
    by_test, baselines, vitals = _grouped(state)
    abnormal: list[tuple[int, str, Sentence]] = []
    normal: list[Fact] = []
    unranged: list[Fact] = []
    for key, facts in by_test.items():
        facts[:] = by_time(facts, effective)
        results = [attributes_as(f, LabResultAttributes) for f in facts]
        worst = _worst(results)
        if worst is None:
            if not is_minor(results[-1], minor):
                (normal if any(r.flag == "normal" for r in results) else unranged).extend(facts)
            continue
        before = baselines.get(key)
        cited = [f.id for f in facts] + ([before.id] if before else [])
        text = render.key_result(results, worst, before.attributes if before else None)
        abnormal.append(
            (
                FLAG_ORDER.index(worst),
                results[0].name.lower(),
                cited_sentence("results", text, cited),
            )
        )
    sentences = [sentence for _, _, sentence in sorted(abnormal, key=lambda item: item[:2])]
    if normal:
        names = list(dict.fromkeys(attributes_as(f, LabResultAttributes).name for f in normal))
        sentences.append(
            cited_sentence("results", render.normal_results(names), [f.id for f in normal])
        )
    if unranged:
        sentences += [
            cited_sentence("results", render.result(f.attributes), [f.id]) for f in unranged
        ]
    imaging = [
        cited_sentence("results", render.imaging(f.attributes), [f.id])
        for f in by_time(
            state.facts["imaging"], lambda f: attributes_as(f, ImagingAttributes).started
        )
    ]
    return sentences + imaging + _vital_signs(vitals, render)
