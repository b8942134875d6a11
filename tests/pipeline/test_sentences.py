"""The clinical sentence splitter: exact offsets, and none of the classic wrong splits."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pipeline.text.sentences import sentences_in, split_sections, split_sentences


def texts(source: str) -> list[str]:
    return [span.text for span in split_sentences(source)]


def assert_split_into(*sentences: str) -> None:
    """The text the sentences make, one space between them, splits back into them: each test
    writes its sentences once."""
    assert texts(" ".join(sentences)) == list(sentences)


def test_doses_and_titles_do_not_end_sentences() -> None:
    assert_split_into("Metoprolol 5 mg b.i.d. with meals.", "Seen by Dr. Smith today.")


def test_dosing_abbreviation_before_a_new_sentence_ends_it() -> None:
    assert_split_into("Take 5 mg b.i.d.", "Return in 2 weeks.")


def test_decimals_and_units_after_numbers() -> None:
    assert_split_into("Temp 38.5 C.", "Potassium 3.9 mmol/L.", "Weight 70.5 kg vs. 68 kg.")


def test_initials_stay_with_the_name() -> None:
    assert_split_into("Discussed with J. Smith and Mrs. Jones.", "Agreed.")


def test_headers_and_list_items_are_their_own_units() -> None:
    source = (
        "# Medications\n- aspirin 81 mg daily\n2) lisinopril 10mg p.o. q.d.\n"
        "HOSPITAL COURSE:\nStable."
    )
    spans = split_sentences(source)
    assert [(span.kind, span.text) for span in spans] == [
        ("header", "Medications"),
        ("bullet", "aspirin 81 mg daily"),
        ("bullet", "lisinopril 10mg p.o. q.d."),
        ("header", "HOSPITAL COURSE"),
        ("sentence", "Stable."),
    ]


def test_wrapped_lines_stay_one_sentence() -> None:
    assert_split_into(
        "The patient was admitted with chest pain and\nwas treated with aspirin.",
        "Discharged home.",
    )


def test_sections_cover_the_text_under_each_header() -> None:
    source = "# Chief Complaint\n- Hunger\n\n# Assessment and Plan\nStable.\n## Plan\nFollow up.\n"
    sections = split_sections(source)
    assert [section.title for section in sections] == [
        "Chief Complaint",
        "Assessment and Plan",
        "Plan",
    ]
    assert source[sections[1].start : sections[1].end].strip() == "Stable."
    assert source[sections[2].start : sections[2].end].strip() == "Follow up."


@given(st.text(alphabet=st.sampled_from(list("ab .?!\n-#:12DrM\t")), max_size=200))
def test_every_span_is_exactly_its_source_slice_in_order(source: str) -> None:
    spans = split_sentences(source)
    previous_end = 0
    for span in spans:
        assert source[span.start : span.end] == span.text
        assert span.text == span.text.strip() and span.text
        assert span.start >= previous_end
        previous_end = span.end


def test_a_printed_pages_numbers_are_not_statements() -> None:
    text = (
        "Plan:\nContinue Cipro for two more days.\n\n2 | P a g e\n\nPage 3 of 4\n\n"
        "Take 2 tablets daily.\n"
    )
    (section,) = [s for s in split_sections(text) if s.title == "Plan"]
    assert [span.text for span in sentences_in(text, section)] == [
        "Continue Cipro for two more days.",
        "Take 2 tablets daily.",
    ]


def test_a_colon_header_spaced_from_its_colon_is_titled_without_the_space() -> None:
    """Found by the property above: "D1 :" is the header "D1", never "D1 "."""
    (span,) = split_sentences("D1 :")
    assert (span.text, span.kind, span.start, span.end) == ("D1", "header", 0, 2)
