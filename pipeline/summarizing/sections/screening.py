"""Positive screening scores: said under Key results, and handed over in Follow-up unless a
care plan of the record addresses what they screen for (``pipeline.clinical.screening``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pipeline.clinical.screening import PositiveScreen, unaddressed
from pipeline.evidence.model import EvidenceState
from pipeline.evidence.summary import Sentence
from pipeline.summarizing.sections.common import cited_sentence


def screening_results(screens: Sequence[PositiveScreen], render: Any) -> list[Sentence]:
    """One line for the positive screens, each with its date, band and cut-off."""
    if not screens:
        return []
    text = render.positive_screens(screens)
    return [cited_sentence("results", text, [screen.fact.id for screen in screens])]


def screening_hand_over(
    state: EvidenceState, screens: Sequence[PositiveScreen], render: Any
) -> list[Sentence]:
    """The positive screens nothing in the record plans for, handed over: a screen is done so
    that a positive one is assessed (USPSTF), and a reader found a PHQ-9 of 16 that no one acted
    on. Like the post-operative review line, a stated gap, no flag."""
    open_screens = unaddressed(state, screens)
    if not open_screens:
        return []
    text = render.screens_to_hand_over(open_screens)
    return [cited_sentence("follow_up", text, [screen.fact.id for screen in open_screens])]
