"""What every section of the evidence-only draft shares: how a sentence is made from the facts
it cites, time order, and which procedures are significant."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from pipeline.clinical.tables import CodeTable
from pipeline.evidence.mapped import INPATIENT_CLASSES, RECENT_ACUTE_CARE_DAYS
from pipeline.evidence.model import (
    DeviceAttributes,
    EncounterAttributes,
    EvidenceState,
    Fact,
    LabResultAttributes,
    ProcedureAttributes,
    attributes_as,
    aware,
    stable_id,
)
from pipeline.evidence.summary import (
    SectionKey,
    Sentence,
)

# Sorts before every date; only ever compared when a dated fact's date is typed as optional.
NEVER = datetime.min.replace(tzinfo=UTC)

# Values are "at discharge" only when taken in the stay's last day.
DISCHARGE_WINDOW = timedelta(hours=24)

FLAG_ORDER = ("critical high", "critical low", "high", "low", "abnormal")


def cited_sentence(section: SectionKey, text: str, citations: Sequence[str]) -> Sentence:
    cited = list(dict.fromkeys(citations))
    return Sentence(
        id=stable_id("s", section, text, *cited),
        section=section,
        text=text.strip(),
        citations=cited,
    )


def by_time(facts: Iterable[Fact], when: Callable[[Fact], datetime | None]) -> list[Fact]:
    """Facts in time order, the undated last (a stable sort keeps their order among themselves)."""
    dated = sorted((f for f in facts if when(f) is not None), key=lambda f: when(f) or NEVER)
    return dated + [f for f in facts if when(f) is None]


def performed(fact: Fact) -> datetime | None:
    return attributes_as(fact, ProcedureAttributes).performed_start


def procedure_code_and_name(fact: Fact) -> tuple[str | None, str]:
    procedure = attributes_as(fact, ProcedureAttributes)
    return (procedure.code.code if procedure.code else None), procedure.name


def effective(fact: Fact) -> datetime | None:
    return attributes_as(fact, LabResultAttributes).effective


def significant_procedures(state: EvidenceState, routine: CodeTable) -> list[Fact]:
    """The episode's clinically significant procedures: the index procedures (an operation or
    intervention, ``index_keywords``) first, then the rest, each group by date; administrative
    and routine care (admission, assessment, screening…) left out (the evidence keeps it)."""
    significant = [
        f
        for f in by_time(state.facts["procedure"], performed)
        if not routine.matches(*procedure_code_and_name(f))
    ]
    index = [f for f in significant if is_index_procedure(f, routine)]
    return index + [f for f in significant if f not in index]


def is_index_procedure(fact: Fact, routine: CodeTable) -> bool:
    """An operation or intervention (``index_keywords``: bypass, excision, transplant…): the
    main treatment a course tells, where therapy sessions and diagnostics are the Procedures
    section's alone."""
    words = routine.extra.get("index_keywords", [])
    return any(word in procedure_code_and_name(fact)[1].lower() for word in words)


@dataclass(frozen=True, slots=True)
class RepeatedProcedure:
    """One procedure as a draft names it: the first time, and the last when it was repeated on
    later days (oxygen by mask each day of the stay is one line, not one per day), with the
    number of days it was done on: "from the 4th to the 17th" read as two weeks of oxygen where
    the record has seven separate days."""

    first: ProcedureAttributes
    last_on: datetime | None
    fact_ids: list[str]
    days: int = 1


def each_procedure_once(procedures: list[Fact]) -> list[RepeatedProcedure]:
    """The procedures in their order, each code (or name) once, with its facts."""
    groups: dict[tuple[str | None, str], list[Fact]] = {}
    for fact in procedures:
        groups.setdefault(procedure_code_and_name(fact), []).append(fact)
    named = []
    for facts in groups.values():
        first = attributes_as(facts[0], ProcedureAttributes)
        dates = [d for f in facts if (d := attributes_as(f, ProcedureAttributes).performed_start)]
        started, last = first.performed_start, max(dates, default=None)
        repeated = last if started and last and last.date() > started.date() else None
        days = len({d.date() for d in dates}) or 1
        named.append(RepeatedProcedure(first, repeated, [f.id for f in facts], days))
    return named


def last_moment(taken: datetime | None, stay: Fact | None, first: datetime | None = None) -> str:
    """ "discharge" for values taken in the last day of the stay ("discharge_eve" when that was
    the calendar day before discharge); otherwise they are only the
    latest, and a reader must see that they are older. The only set of a stay, taken nearer its
    admission than its discharge, is the admission's ("admission_only"): a pain score of 7 at
    admission is not the patient's condition on leaving a one-day stay."""
    encounter = stay.attributes if stay else None
    if not isinstance(encounter, EncounterAttributes) or taken is None or encounter.end is None:
        return "latest"
    since, until = encounter.start, encounter.end
    if aware(until) - aware(taken) > DISCHARGE_WINDOW:
        return "latest"
    if taken == first and since and aware(taken) - aware(since) < aware(until) - aware(taken):
        return "admission_only"
    # Within the last day but on the calendar day before: "at discharge (the 17th)" beside a
    # discharge on the 18th read as a contradiction.
    return "discharge" if aware(taken).date() >= aware(until).date() else "discharge_eve"


def implants(state: EvidenceState, table: CodeTable) -> list[Fact]:
    """The patient's devices that the ``implants`` table calls implants (a valve, a stent), in
    the order of their records."""
    return by_time(
        [
            f
            for f in state.facts["device"]
            if isinstance(f.attributes, DeviceAttributes)
            and f.attributes.kind == "device"
            and table.matches(None, f.attributes.name)
        ],
        _recorded,
    )


def supplied_in_stay(state: EvidenceState, table: CodeTable) -> list[Fact]:
    """What was supplied during the stay that the ``implants`` table shows: implants, organs,
    tissues and blood products (a kidney graft), never consumables, in order of time."""
    shown = table.extra["supplied_keywords"]
    return by_time(
        [
            f
            for f in state.facts["device"]
            if isinstance(f.attributes, DeviceAttributes)
            and f.attributes.kind == "supplied"
            and (
                table.matches(None, f.attributes.name)
                or any(word in f.attributes.name.lower() for word in shown)
            )
        ],
        _recorded,
    )


def home_equipment(state: EvidenceState, table: CodeTable) -> tuple[list[Fact], list[Fact]]:
    """The home medical equipment new to this stay, as the ``home_equipment`` table names it:
    the devices recorded from the weeks before admission (``RECENT_ACUTE_CARE_DAYS``, the sleep
    study's CPAP unit) to discharge, and the items supplied during the stay, each in order of
    time. A nebulizer recorded decades before is the patient's, not news of the stay. What one
    delivery brought with the equipment is its supplies (DMEPOS: "devices and their supplies"):
    the air filter and tubing delivered with a CPAP mask, which five readers missed from the
    line that named the masks alone."""
    stay = state.stay()
    if stay is None or stay.start is None:
        return [], []
    since = aware(stay.start) - timedelta(days=RECENT_ACUTE_CARE_DAYS)
    until = aware(stay.end or stay.start)

    def shown(fact: Fact, kind: str) -> bool:
        device = fact.attributes
        return (
            isinstance(device, DeviceAttributes)
            and device.kind == kind
            and table.matches(None, device.name)
            and device.when is not None
            and since <= aware(device.when) <= until
        )

    facts = state.facts["device"]
    on_record = by_time([f for f in facts if shown(f, "device")], _recorded)
    supplied = [f for f in facts if shown(f, "supplied")]
    deliveries = {_recorded(f) for f in supplied}
    with_it = [
        f
        for f in facts
        if f not in supplied
        and attributes_as(f, DeviceAttributes).kind == "supplied"
        and _recorded(f) in deliveries
    ]
    return on_record, by_time(supplied + with_it, _recorded)


def _recorded(fact: Fact) -> datetime | None:
    return attributes_as(fact, DeviceAttributes).when


def earlier_stay_end(state: EvidenceState) -> datetime | None:
    """When a readmission's earlier stay (an inpatient stay of the episode that ended before
    this one began) ended: what was given or done until then was that stay's, not this one's."""
    stay = state.stay()
    if stay is None or stay.start is None:
        return None
    ends = [
        aware(other.end)
        for other in stay.joined
        if other.class_code in INPATIENT_CLASSES
        and other.end is not None
        and aware(other.end) <= aware(stay.start)
    ]
    return max(ends, default=None)


def earlier_stay_of(state: EvidenceState) -> str:
    """What the earlier stay of the episode was to this one: "this readmission" when it was
    joined as the stay a readmission follows, else "this episode" (the surgical stay a ward or
    rehabilitation stay continues the same day is no readmission)."""
    stay = state.stay()
    readmitted = stay is not None and any("readmission" in (o.why or "") for o in stay.joined)
    return "this readmission" if readmitted else "this episode"


def split_at(
    end: datetime | None, facts: list[Fact], moment: Callable[[Fact], datetime | None]
) -> tuple[list[Fact], list[Fact]]:
    """The facts of a readmission's earlier stay (at or before ``end``), and the others."""
    earlier = [
        f
        for f in facts
        if end is not None and (when := moment(f)) is not None and aware(when) <= end
    ]
    ids = {f.id for f in earlier}
    return earlier, [f for f in facts if f.id not in ids]


def procedures_by_stay(
    state: EvidenceState, routine: CodeTable
) -> tuple[tuple[str, list[Fact]], tuple[None, list[Fact]]]:
    """The episode's significant procedures, an earlier stay's (with what that stay was to this
    one) and this stay's, for the course and the Procedures section alike."""
    earlier, own = split_at(
        earlier_stay_end(state), significant_procedures(state, routine), performed
    )
    return (earlier_stay_of(state), earlier), (None, own)


def record_begins_after_stay(state: EvidenceState, category: str) -> bool:
    """Whether the available record's earliest fact of ``category`` (``record_begins``) is dated
    after the stay: then an absence in the stay says nothing of what was done, only of what the
    record kept."""
    stay = state.stay()
    begins = state.record_begins.get(category)
    ended = (stay.end or stay.start) if stay is not None else None
    return begins is not None and ended is not None and aware(begins) > aware(ended)
