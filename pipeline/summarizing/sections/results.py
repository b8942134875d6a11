"""Key results: abnormal results by test with their trend, the normal ones in one line, imaging,
the vital signs at admission and those out of range during the stay."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from pipeline.clinical.results import is_minor, is_vital_sign, read_as_recent
from pipeline.clinical.screening import is_screening_score
from pipeline.clinical.tables import CodeTable
from pipeline.clinical.transplant import unmeasured_grafts
from pipeline.evidence.mapped import is_lasting_measure, is_problem_measure
from pipeline.evidence.model import (
    EncounterAttributes,
    EvidenceState,
    Fact,
    ImagingAttributes,
    LabResultAttributes,
    attributes_as,
    aware,
)
from pipeline.evidence.summary import (
    Sentence,
)
from pipeline.summarizing.sections.common import (
    FLAG_ORDER,
    NEVER,
    by_time,
    cited_sentence,
    effective,
    record_begins_after_stay,
)
from pipeline.summarizing.sections.operations import operations_of_episode
from pipeline.text.rendering import analyte_name


def _worst(results: Sequence[LabResultAttributes]) -> str | None:
    flags = {r.flag for r in results}
    return next((flag for flag in FLAG_ORDER if flag in flags), None)


# The admitting emergency visit may begin the day before the stay: its vital signs are the
# admission's. A set older than that (a telemedicine call two days before) is not.
ADMITTING_VISIT = timedelta(hours=24)


def _vital_signs(facts: list[Fact], render: Any, admitted: datetime | None) -> list[Sentence]:
    """The first set of vital signs of the episode (the last is the condition at discharge's;
    a stay with one set shows it there only, each fact cited once), then the vital signs out of
    range between the two: an oxygen saturation of 88 % on the second day is not in either set.
    A joined episode's first set, taken before this admission, is said to be so, and the
    admission's own set follows it."""
    timed = by_time([f for f in facts if effective(f) is not None], effective)
    if not timed or effective(timed[0]) == effective(timed[-1]):
        return []
    discharge = effective(timed[-1])
    window = None if admitted is None else aware(admitted) - ADMITTING_VISIT
    sets = list(dict.fromkeys(effective(f) for f in timed))
    before = [t for t in sets if window is not None and t is not None and aware(t) < window]
    at_admission = next((t for t in sets if t not in before and t != discharge), None)
    shown = [*before[:1], *([at_admission] if at_admission else [])]
    sentences = []
    for taken in shown:
        moment = "before_admission" if taken in before else "admission"
        same = [f for f in timed if effective(f) == taken]
        text = render.vital_signs(moment, taken, [f.attributes for f in same])
        sentences.append(cited_sentence("results", text, [f.id for f in same]))
    last_shown = aware(shown[-1] or NEVER)
    between = [
        f for f in timed if effective(f) != discharge and aware(effective(f) or NEVER) > last_shown
    ]
    # A reading the admission's line states already ("88 %" twice that morning) is said once.
    stated = {
        (attributes_as(f, LabResultAttributes).name, attributes_as(f, LabResultAttributes).value)
        for f in timed
        if effective(f) in shown
    }
    worst = [
        f
        for f in _worst_out_of_range(between)
        if (attributes_as(f, LabResultAttributes).name, attributes_as(f, LabResultAttributes).value)
        not in stated
    ]
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
    each test, and the vital signs; questionnaire scores are the screening lines', and a
    measure read before the stay only for the problem it bears on (a body mass index, an HbA1c
    of weeks before) is that problem's line's (``pipeline.clinical.problem_measures``)."""
    by_test: dict[str, list[Fact]] = defaultdict(list)
    baselines: dict[str, Fact] = {}
    problem_measures: dict[str, Fact] = {}
    vitals: list[Fact] = []
    for fact in state.facts["lab_result"]:
        result = fact.attributes
        assert isinstance(result, LabResultAttributes)
        key = (
            f"{result.code.code if result.code and result.code.code else result.name}|{result.unit}"
        )
        if is_screening_score(result):
            continue
        if result.baseline and is_problem_measure(result.code.code if result.code else None):
            problem_measures[key] = fact
        elif result.baseline:
            baselines[key] = fact
        elif is_vital_sign(result):
            vitals.append(fact)
        else:
            by_test[key].append(fact)
    for key, fact in problem_measures.items():
        if key in by_test or read_as_recent(state, attributes_as(fact, LabResultAttributes)):
            baselines[key] = fact
    return by_test, baselines, vitals


def _is_lasting(result: LabResultAttributes) -> bool:
    return is_lasting_measure(result.code.code if result.code else None, result.name)


def _before_admission(
    baselines: dict[str, Fact], measured: set[str], render: Any
) -> list[Sentence]:
    """Tests the stay never measured: those out of range in the days before admission (still
    the current value), then the lasting measures of any date (an ejection fraction)."""
    recent = [
        f
        for key, f in baselines.items()
        if key not in measured and attributes_as(f, LabResultAttributes).flag in FLAG_ORDER
    ]
    lasting = [
        f
        for key, f in baselines.items()
        if key not in measured
        and f not in recent
        and _is_lasting(attributes_as(f, LabResultAttributes))
    ]
    sentences = []
    for facts, macro in ((recent, render.recent_before_admission), (lasting, render.last_measured)):
        if facts:
            text = macro([f.attributes for f in by_time(facts, effective)])
            sentences.append(cited_sentence("results", text, [f.id for f in facts]))
    return sentences


def _sorted_tests(
    by_test: dict[str, list[Fact]],
    baselines: dict[str, Fact],
    flagged: set[str],
    minor: dict[str, Any],
    render: Any,
) -> tuple[list[tuple[int, str, Sentence]], list[Fact], list[tuple[list[Fact], Fact | None]]]:
    """Each test of the stay as an abnormal line (with its rank), among the normal ones, or as
    a test with no range (or one a flag cites) for a line of its own, with the latest value
    before admission to read it against."""
    abnormal: list[tuple[int, str, Sentence]] = []
    normal: list[Fact] = []
    unranged: list[tuple[list[Fact], Fact | None]] = []
    for key, facts in by_test.items():
        facts[:] = by_time(facts, effective)
        results = [attributes_as(f, LabResultAttributes) for f in facts]
        worst = _worst(results)
        if worst is None:
            if not is_minor(results[-1], minor):
                # A value a safety rule cites (a potassium of 5.05, in range, on two drugs that
                # raise it) is said on its own line: listed as normal it contradicted its flag.
                if any(r.flag == "normal" for r in results) and not flagged & {f.id for f in facts}:
                    normal.extend(facts)
                else:
                    unranged.append((list(facts), baselines.get(key)))
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
    return abnormal, normal, unranged


def _graft_function(
    state: EvidenceState,
    render: Any,
    tables: tuple[CodeTable, CodeTable],
    any_result: bool,
) -> list[Sentence]:
    """A transplant of the stay (``operations_of_episode``) whose graft no result of the stay
    measured: said first, since a kidney recipient's Key results without a creatinine read as a
    graft known to work; with no laboratory result in the stay at all (``any_result``), whether
    the record kept any before discharge, since a record whose results begin later cannot tell
    a test not done from one not kept. ``tables``: routine procedures, transplant organs."""
    routine, organs = tables
    done = [(name, fact_ids) for name, _, fact_ids in operations_of_episode(state, routine)]
    later = record_begins_after_stay(state, "lab_result")
    return [
        cited_sentence(
            "results", render.graft_not_measured(term, measure, not any_result, later), fact_ids
        )
        for term, measure, fact_ids in unmeasured_grafts(state, done, organs)
    ]


def results_section(
    state: EvidenceState,
    render: Any,
    tables: tuple[CodeTable, CodeTable, CodeTable],
    stay: Fact | None,
    screens: Sequence[Sentence] = (),
) -> list[Sentence]:
    """A transplanted graft the stay never measured first; abnormal results (critical, then
    high or low), each marked, with its trend over the episode and against the latest value
    before admission, then those out of range in the days before admission that the stay never
    measured; the normal ones in one line, without screening scores and indices
    (``minor_results``); the imaging; the positive screens (``screens``); vital signs at
    admission and at discharge (or the latest, dated, when none was taken in the stay's last
    day). ``tables``: reference ranges, routine procedures,
    transplant organs."""
    ranges, routine, organs = tables
    minor = ranges.extra.get("minor_results", {})
    by_test, baselines, vitals = _grouped(state)
    flagged = {fact_id for flag in state.flags_for_review for fact_id in flag.fact_ids}
    abnormal, normal, unranged = _sorted_tests(by_test, baselines, flagged, minor, render)
    sentences = _graft_function(state, render, (routine, organs), bool(by_test))
    sentences += [sentence for _, _, sentence in sorted(abnormal, key=lambda item: item[:2])]
    sentences += _before_admission(baselines, set(by_test), render)
    if normal:
        # Names only, no values: each analyte by its component, once (a reader counted the
        # long names' "[Mass/volume] in Serum or Plasma" as 150 words of noise).
        names = list(
            dict.fromkeys(analyte_name(attributes_as(f, LabResultAttributes).name) for f in normal)
        )
        sentences.append(
            cited_sentence("results", render.normal_results(names), [f.id for f in normal])
        )
    # A test with no range, measured twice that day, is one line: its values, not two lines;
    # beside the value before admission (a potassium of 4.0 the week before is the rise).
    sentences += [
        cited_sentence(
            "results",
            render.unranged_trend([f.attributes for f in facts], before and before.attributes),
            [f.id for f in facts] + ([before.id] if before else []),
        )
        for facts, before in unranged
    ]
    imaging = [
        cited_sentence("results", render.imaging(f.attributes, unreported), [f.id])
        for f, unreported in _imaging_reported(state)
    ]
    admitted = attributes_as(stay, EncounterAttributes).start if stay is not None else None
    return sentences + imaging + list(screens) + _vital_signs(vitals, render, admitted)


def _imaging_reported(state: EvidenceState) -> list[tuple[Fact, bool]]:
    """The imaging of the stay in time order, each study with whether no report of its day
    is in the record: a bare study line read as a normal or a missing result (a reader asked
    for the echocardiogram's ejection fraction), so one with no report says so."""
    imaging = by_time(state.facts["imaging"], lambda f: attributes_as(f, ImagingAttributes).started)
    studies = [(f, attributes_as(f, ImagingAttributes)) for f in imaging]
    reported = {i.started.date() for _, i in studies if i.conclusion and i.started}
    return [
        (f, not i.conclusion and not (i.started and i.started.date() in reported))
        for f, i in studies
    ]
