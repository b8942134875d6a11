"""A small model copies its prompt: an extraction item that is the prompt's example, a course
sentence that restates the instruction ("The hospital course of this stay as prose is as
follows:"). Neither is a fact of the patient's; both are rejected before any check."""

from __future__ import annotations

import re

# A sentence that shares this many words in a row with the instructions restates them.
ECHO_RUN = 5


def instructions(prompt: str) -> str:
    """The prompt without its data blocks: the words an answer must not copy."""
    return re.sub(r"<data>.*?</data>", " ", prompt, flags=re.DOTALL)


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def echoes_prompt(item_text: str, prompt: str, source: str) -> bool:
    """An item whose text is the prompt's own words (its example, an instruction) and not the
    source's."""
    said = " ".join(_words(item_text))
    if len(said) < 4:
        return False
    return said in " ".join(_words(instructions(prompt))) and said not in " ".join(_words(source))


def restates_instructions(sentence: str, prompt: str, run: int = ECHO_RUN) -> bool:
    """A sentence with ``run`` words in a row from the instructions, or a bare lead-in ("…as
    follows:"): meta text, not a clinical claim."""
    if sentence.rstrip().endswith(":"):
        return True
    words = _words(sentence)
    told = " " + " ".join(_words(instructions(prompt))) + " "
    return any(
        f" {' '.join(words[start : start + run])} " in told for start in range(len(words) - run + 1)
    )
