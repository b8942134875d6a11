"""Decoding that always ends, and ends usefully (#24): budgets sized to each call, a loop guard
in our decoder, answers cut short salvaged rather than thrown away, retries that say why with a
smaller budget, and items that echo the prompt rejected. Scripted models, one rule each."""

from __future__ import annotations

import json
import threading
import time
from itertools import pairwise
from types import SimpleNamespace
from typing import Any

import pytest
import torch

from pipeline.backends.answer_schemas import answer_budget, extraction_schema
from pipeline.backends.chat import Completion, Metered, ModelOutputError, ask_json, salvage_items
from pipeline.backends.llm import LOOP_NGRAM, LoopGuard, TransformersBackend
from pipeline.settings import PipelineSettings, SchemaLimits
from pipeline.summarizing.extraction import extract_from_notes
from pipeline.summarizing.note_chunks import (
    CHUNK_CHARS,
    CHUNK_TOKENS,
    MIN_CHUNK_TOKENS,
    chunk_limits,
    chunk_measure,
    chunks,
)
from pipeline.text.echoes import echoes_prompt, restates_instructions
from smartapp.jobs.evidence import evidence_from_fhir
from tests import fhir_fixtures as fx
from tests.chat_doubles import ScriptedChat, in_turn

ITEM = {"category": "diagnosis", "text": "pneumonia", "quote": "pneumonia"}


def scripted(*answers: Completion) -> ScriptedChat:
    """Answers in turn, recording the budget of each call."""
    return ScriptedChat(in_turn(*answers))


def cut(text: str, tokens: int = 100) -> Completion:
    return Completion(text, prompt_tokens=10, completion_tokens=tokens, cut=True)


def test_a_calls_budget_is_sized_to_its_schema_and_input() -> None:
    limits = SchemaLimits()
    short = answer_budget(extraction_schema(chunk_limits(limits, "Pneumonia. On warfarin.")))
    long_chunk = " ".join(f"Finding number {n} is stated here." for n in range(60))
    long = answer_budget(extraction_schema(chunk_limits(limits, long_chunk)))
    assert short < long < answer_budget(extraction_schema(limits))
    backend = scripted(Completion(json.dumps({"items": [ITEM]})))
    schema = extraction_schema(chunk_limits(limits, "Pneumonia."))
    ask_json(backend, [{"role": "user", "content": "x"}], ["items"], 2, schema)
    assert backend.budgets == [answer_budget(schema)]


def test_an_answer_cut_short_keeps_its_complete_items_without_asking_again() -> None:
    partial = '{"items": [' + json.dumps(ITEM) + ", " + json.dumps(ITEM) + ', {"category": "dia'
    other = {"category": "allergy", "text": "penicillin", "quote": "penicillin"}
    partial = partial.replace(json.dumps(ITEM), json.dumps(other), 1)
    backend = Metered(scripted(cut(partial, tokens=57)))
    answer = ask_json(
        backend,
        [{"role": "user", "content": "x"}],
        ["items"],
        2,
        {"type": "object"},
        salvage="items",
    )
    assert answer == {"items": [other, ITEM]}
    assert backend.usage.calls == 1 and backend.usage.wasted_tokens == 57


def test_duplicate_items_of_a_looping_answer_are_dropped() -> None:
    looping = '{"items": [' + ", ".join([json.dumps(ITEM)] * 5) + ", " + json.dumps(ITEM)[:20]
    assert salvage_items(looping, "items") == [ITEM]
    assert salvage_items('{"other": 1', "items") is None


def test_with_nothing_to_salvage_the_retry_says_why_with_half_the_budget() -> None:
    schema = extraction_schema(SchemaLimits(extraction_items=4, quote_chars=200))
    backend = scripted(cut('{"items": [{"categ'), Completion(json.dumps({"items": [ITEM]})))
    answer = ask_json(
        backend, [{"role": "user", "content": "x"}], ["items"], 2, schema, salvage="items"
    )
    assert answer == {"items": [ITEM]}
    first, second = backend.budgets
    assert first == answer_budget(schema) and second == first // 2
    assert "cut short" in backend.prompts[1][-1]["content"]


def test_unusable_answers_end_in_a_model_error_after_the_retries() -> None:
    backend = scripted(*(Completion("no json") for _ in range(3)))
    with pytest.raises(ModelOutputError):
        ask_json(backend, [{"role": "user", "content": "x"}], ["items"], 2, {"type": "object"})
    assert len(backend.budgets) == 3


def written(tokens: list[int]) -> list[bool]:
    """The guard's verdict after each token, as the decoder asks it."""
    guard = LoopGuard()
    return [guard.looping(tokens[: end + 1]) for end in range(len(tokens))]


def test_a_long_run_written_a_third_time_is_a_loop() -> None:
    item = list(range(LOOP_NGRAM))
    assert not any(written(item + item))
    verdicts = written(item * 3)
    assert verdicts.index(True) == 3 * LOOP_NGRAM - 1  # the last token of the third copy
    assert not any(written(list(range(LOOP_NGRAM * 3))))


class CyclingModel(torch.nn.Module):
    """A "model" that writes tokens 5, 6, 7, 8 … over and over, never its end token."""

    def __init__(self, cycle: list[int], vocab: int = 50) -> None:
        super().__init__()
        self.cycle, self.vocab = cycle, vocab
        self.weight = torch.nn.Parameter(torch.zeros(1))
        self.config = SimpleNamespace(_name_or_path="cycling", model_type="cycle", vocab_size=vocab)

    def forward(self, input_ids: torch.Tensor, use_cache: bool, past_key_values: Any) -> Any:
        logits = torch.zeros(1, input_ids.shape[1], self.vocab)
        logits[0, -1, self.cycle[input_ids.shape[1] % len(self.cycle)]] = 1.0
        return SimpleNamespace(logits=logits, past_key_values=None)


class Tokens:
    eos_token_id = 0
    chat_template = None

    def __call__(self, text: str, return_tensors: str) -> dict[str, torch.Tensor]:
        return {"input_ids": torch.tensor([[1, 2, 3]])}

    def decode(self, tokens: list[int], skip_special_tokens: bool) -> str:
        return " ".join(map(str, tokens))

    def __len__(self) -> int:
        return 50


def test_our_decoder_stops_a_loop_long_before_its_budget_and_marks_the_answer_cut() -> None:
    backend = TransformersBackend(CyclingModel(list(range(5, 5 + 30))), Tokens())
    answer = backend.complete([{"role": "user", "content": "x"}], max_tokens=2000)
    assert answer.cut
    assert answer.completion_tokens is not None
    assert answer.completion_tokens < 3 * 30 + LOOP_NGRAM + 1  # the third pass, not 2,000


def test_a_budget_ends_decoding_and_marks_the_answer_cut() -> None:
    backend = TransformersBackend(CyclingModel(list(range(5, 45))), Tokens())
    answer = backend.complete([{"role": "user", "content": "x"}], max_tokens=17)
    assert answer.cut and answer.completion_tokens == 17


NOTE = "# Hospital Course\nAdmitted with community acquired pneumonia.\n"


def test_an_item_that_echoes_the_prompt_is_rejected_and_one_from_the_note_kept() -> None:
    state = evidence_from_fhir(
        fx.stay(fx.document_reference("d1", fx.attachment(NOTE))), settings=PipelineSettings()
    )
    # The prompt holds no clinical example any more; a small model echoes its wording instead.
    echo = {"category": "diagnosis", "text": "facts this part of a note", "quote": "pneumonia"}
    real = {
        "category": "diagnosis",
        "text": "community acquired pneumonia",
        "quote": "community acquired pneumonia",
    }
    backend = scripted(Completion(json.dumps({"items": [echo, real, real]})))
    extraction = extract_from_notes(state, backend)
    assert [f.attributes.display for f in extraction.facts] == ["community acquired pneumonia"]
    (rejected,) = extraction.rejected
    assert rejected.reason.startswith("echoes the prompt")
    prompt = backend.prompts[0][-1]["content"]
    assert "the fact in a few words" not in prompt  # no copyable placeholder
    assert echoes_prompt("facts this part of a note", prompt, NOTE)
    assert not echoes_prompt("facts this part of a note", prompt, "The facts this part of a note")


def test_a_sentence_that_restates_the_instructions_is_meta_text() -> None:
    prompt = "Write the hospital course of this stay as prose.<data>Sepsis, treated.</data>"
    assert restates_instructions("The hospital course of this stay as prose is as follows", prompt)
    assert restates_instructions("Here is the summary:", prompt)
    assert not restates_instructions("Sepsis was treated with ceftriaxone.", prompt)


def test_a_cut_answer_closes_after_its_last_complete_value() -> None:
    from pipeline.backends.chat import close_json

    looping = '{"sentences": [{"text": "Admitted with sepsis.", "citations": ["a", "b", "b", "b'
    assert close_json(looping) == (
        '{"sentences": [{"text": "Admitted with sepsis.", "citations": ["a", "b", "b"]}]}'
    )
    assert salvage_items(looping, "sentences", ["text", "citations"]) == [
        {"text": "Admitted with sepsis.", "citations": ["a", "b"]}
    ]
    assert close_json('{"a": [1, 2, 3') == '{"a": [1, 2]}'
    assert close_json('{"sente') is None
    # An item cut before a field the schema requires is not kept.
    half = '{"items": [{"category": "diagnosis", "text": "sepsis", "quo'
    assert salvage_items(half, "items", ["category", "text", "quote"]) == []


def test_extraction_past_its_time_budget_keeps_what_it_has_and_names_the_pages_not_read() -> None:
    notes = [
        fx.document_reference(f"d{n}", fx.attachment(f"{NOTE}Day {n} of the stay.\n"))
        for n in (1, 2, 3)
    ]
    state = evidence_from_fhir(fx.stay(*notes), settings=PipelineSettings())
    real = {
        "category": "diagnosis",
        "text": "community acquired pneumonia",
        "quote": "community acquired pneumonia",
    }
    backend = scripted(*(Completion(json.dumps({"items": [real]})) for _ in range(3)))
    ticks = iter([0.0, 10.0, 70.0, 130.0, 190.0])
    extraction = extract_from_notes(state, backend, budget_s=100, clock=lambda: next(ticks))
    assert len(backend.budgets) == 2  # the third note was not sent to the model
    assert len(extraction.facts) == 2
    (unread,) = [errors for errors in extraction.errors.values()]
    assert unread == ["page 1 not read by the model: extraction's time budget (100 s) ran out"]


def test_an_answer_that_stays_unusable_costs_its_page_not_the_draft() -> None:
    state = evidence_from_fhir(
        fx.stay(fx.document_reference("d1", fx.attachment(NOTE))), settings=PipelineSettings()
    )
    backend = scripted(*(Completion("not json") for _ in range(3)))
    extraction = extract_from_notes(state, backend, strict=True)
    assert extraction.facts == []
    ((message,),) = extraction.errors.values()
    assert message.startswith("page 1 not read by the model") and "no usable JSON" in message


class Counting(ScriptedChat):
    """A local model that states its window and counts a token per word, answering the fact of
    the chunk it is sent: "Day N." quoted from it."""

    context_tokens = 1200

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def answer(self, messages: list[dict[str, str]]) -> Completion:
        chunk = messages[-1]["content"].split("<data>")[-1].split("</data>")[0]
        days = [word for word in chunk.split() if word.startswith("D") and word[1:-1].isdigit()]
        items = [{"category": "follow_up", "text": day, "quote": day} for day in days[:1]]
        return Completion(json.dumps({"items": items}))


def long_page(sentences: int) -> str:
    return " ".join(f"D{n}. Walked the hall twice with physical therapy." for n in range(sentences))


def test_note_chunks_are_sized_in_the_models_own_tokens_to_fit_its_window() -> None:
    backend = Counting()
    limit, size = chunk_measure(backend, SchemaLimits(extraction_items=4))
    # The window holds the prompt, the longest answer and the chunk: less than the 1,000 default.
    assert MIN_CHUNK_TOKENS < limit < CHUNK_TOKENS and size("a b c") == 3
    page = long_page(300)  # 2,700 words: far beyond the window whole
    spans = chunks(page, limit, size)
    assert spans[0][0] == 0 and spans[-1][1] == len(page)
    assert all(a[1] == b[0] for a, b in pairwise(spans))
    assert all(size(page[start:end]) <= limit for start, end in spans)
    # A backend that cannot count is read in characters, as before.
    assert chunk_measure(scripted(), SchemaLimits()) == (CHUNK_CHARS, len)


def test_a_sentence_longer_than_a_chunk_is_cut_between_words() -> None:
    run_on = "word " * 300
    spans = chunks(run_on, 100)
    assert len(spans) == 15 and "".join(run_on[a:b] for a, b in spans) == run_on
    assert all(run_on[a:b].startswith("word") for a, b in spans)


def test_a_long_page_is_read_chunk_by_chunk_and_every_chunk_fits_the_window() -> None:
    note = fx.document_reference("d1", fx.attachment(long_page(300)))
    state = evidence_from_fhir(fx.stay(note), settings=PipelineSettings())
    backend = Counting()
    extraction = extract_from_notes(state, backend)
    assert len(backend.prompts) > 2
    limit, _ = chunk_measure(backend, SchemaLimits())
    for conversation in backend.prompts:
        chunk = conversation[-1]["content"].split("<data>")[-1].split("</data>")[0]
        assert backend.count_tokens(chunk) <= limit + 4  # the title beside the chunk
        prompt = sum(backend.count_tokens(message["content"]) for message in conversation)
        assert prompt < backend.context_tokens
    # One fact per chunk, quoted where it stands on the page.
    assert len(extraction.facts) == len(backend.prompts)
    assert not extraction.rejected


class Concurrent(ScriptedChat):
    """Answers each note with its own fact, slower for earlier notes, counting calls in flight."""

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()
        self.in_flight = self.most = 0

    def answer(self, messages: list[dict[str, str]]) -> Completion:
        chunk = messages[-1]["content"]
        day = next(word.strip(".") for word in chunk.split() if word.startswith("Day-"))
        with self.lock:
            self.in_flight += 1
            self.most = max(self.most, self.in_flight)
        time.sleep(0.3 / int(day.split("-")[1]))
        with self.lock:
            self.in_flight -= 1
        return Completion(
            json.dumps({"items": [{"category": "follow_up", "text": day, "quote": day}]})
        )


def test_notes_are_read_concurrently_and_their_facts_kept_in_the_notes_order() -> None:
    notes = [
        fx.document_reference(f"d{n}", fx.attachment(f"Seen on Day-{n}. Improving.\n"))
        for n in (1, 2, 3, 4)
    ]
    state = evidence_from_fhir(fx.stay(*notes), settings=PipelineSettings())
    steps: list[str] = []
    sequential = extract_from_notes(state, Concurrent())
    backend = Concurrent()
    concurrent = extract_from_notes(state, backend, concurrency=4, progress=steps.append)
    assert backend.most > 1
    texts = [fact.attributes.text for fact in concurrent.facts]
    assert texts == [fact.attributes.text for fact in sequential.facts]
    assert sorted(texts) == ["Day-1", "Day-2", "Day-3", "Day-4"]
    assert sorted(steps) == [f"extracting note {n} of 4, page 1" for n in (1, 2, 3, 4)]


def test_a_second_answer_cut_short_ends_the_call_instead_of_a_third() -> None:
    backend = Metered(scripted(cut('{"sentences": [{"text": "Adm'), cut('{"sentences": [{"te')))
    with pytest.raises(ModelOutputError, match=r"after 2 answers \(the answer was cut short\)"):
        ask_json(backend, [{"role": "user", "content": "x"}], ["sentences"], 2, salvage="sentences")
    assert backend.usage.calls == 2 and backend.usage.wasted_tokens == 200
