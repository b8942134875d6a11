"""Whether the record changed since a draft was made, asked as one batch of count-only searches:
the batch names every type the pull reads and the Patient, only what was updated after the
moment, and its answer says a count only when every search answered one."""

from __future__ import annotations

from datetime import UTC, datetime
from urllib.parse import parse_qs

from fhir_mapping.record_changes import change_searches, changed_count, changes_batch
from fhir_mapping.resources import RECORD_TYPES

SINCE = datetime(2024, 3, 1, 9, 30, tzinfo=UTC)


def test_the_batch_counts_what_changed_after_the_moment_for_every_type_pulled() -> None:
    batch = changes_batch("p1", SINCE)
    assert batch["type"] == "batch"
    searches = [entry["request"]["url"].split("?", 1) for entry in batch["entry"]]
    assert [kind for kind, _ in searches] == ["Patient", *RECORD_TYPES]
    for kind, query in searches:
        params = parse_qs(query)
        assert params["_summary"] == ["count"]
        assert params["_lastUpdated"] == ["gt2024-03-01T09:30:00Z"]
        assert params["_id" if kind == "Patient" else "patient"] == (
            ["p1"] if kind == "Patient" else ["Patient/p1"]
        )
    assert len(change_searches("p1", SINCE)) == len(batch["entry"])


def _answer(*entries: tuple[str, object]) -> dict[str, object]:
    return {
        "resourceType": "Bundle",
        "type": "batch-response",
        "entry": [
            {"response": {"status": status}, "resource": {"resourceType": "Bundle", "total": total}}
            for status, total in entries
        ],
    }


def test_the_answer_counts_only_when_every_search_answered() -> None:
    assert changed_count(_answer(("200 OK", 0), ("200", 2)), 2) == 2
    assert changed_count(_answer(("200", 0), ("200", 0)), 2) == 0
    assert changed_count(_answer(("200", 0), ("403 Forbidden", 0)), 2) is None
    assert changed_count(_answer(("200", 0), ("200", None)), 2) is None
    assert changed_count(_answer(("200", 0)), 2) is None  # an entry missing
    assert changed_count({"resourceType": "OperationOutcome"}, 2) is None
    malformed = _answer(("200", 0), ("200", 1))
    malformed["entry"][1]["resource"] = "not a resource"  # type: ignore[index]
    assert changed_count(malformed, 2) is None
