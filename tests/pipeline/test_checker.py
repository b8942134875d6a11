"""The fact checker: each check alone, the paper's example, and perturbed real summaries."""

from __future__ import annotations

import csv
import re
import subprocess
import sys
from datetime import UTC, datetime
from functools import cache

import pytest

from pipeline.checking import sentence_checks
from pipeline.checking.checker import Evidence, numeric_metrics
from pipeline.checking.verify import verify_text
from pipeline.evidence.model import AdministrationAttributes, Fact, SourceRef
from pipeline.evidence.summary import CheckResult, Sentence
from pipeline.text.words import FUNCTION_WORDS
from tests.conftest import ROOT, SHARED_DATA


def failing(check) -> list[str]:
    return check.spans


@pytest.mark.parametrize(
    ("sentence", "evidence", "spans"),
    [
        ("Metoprolol 25mg daily.", "metoprolol 25 mg", []),
        ("Dose 1 g.", "1000 mg", []),
        ("Potassium 3.90 mmol/L.", "potassium 3.9", []),
        ("Metoprolol 50 mg daily.", "metoprolol 25 mg", ["50 mg"]),
        ("Ejection fraction 35%.", "ejection fraction 40%", ["35%"]),
        ("Zane918 was admitted.", "Zane918", []),
    ],
)
def test_numbers_are_compared_after_normalising(sentence, evidence, spans) -> None:
    assert failing(sentence_checks.check_numbers(sentence, Evidence.of_text(evidence))) == spans


def _doses(count: int) -> list[Fact]:
    return [
        Fact(
            id=f"dose-{day}",
            category="administration",
            attributes=AdministrationAttributes(
                kind="medication",
                name="Furosemide 10 MG/ML Injection",
                when=datetime(2024, 3, day, 8, tzinfo=UTC),
            ),
            sources=[SourceRef(resource=f"MedicationAdministration/dose-{day}", path="$")],
        )
        for day in range(1, count + 1)
    ]


@pytest.mark.parametrize(
    ("sentence", "spans"),
    [
        ("Furosemide, 3 doses from 2024-03-01 to 2024-03-03.", []),
        ("Furosemide given on 3 days.", []),
        ("Furosemide, 4 doses.", ["4"]),
        ("Furosemide 3 mg.", ["3 mg"]),
        ("Furosemide for 3 years.", ["3 years"]),
    ],
)
def test_counts_of_the_cited_facts_are_evidence_for_what_they_count(sentence, spans) -> None:
    """A count is computed from the facts a sentence cites (three doses on three days), and
    supports only a count: never a dose or a duration."""
    assert failing(sentence_checks.check_numbers(sentence, Evidence.of_facts(_doses(3)))) == spans


@pytest.mark.parametrize(
    ("sentence", "spans"),
    [
        ("Admitted on Jan 3, 2024.", []),
        ("Admitted on 2024-01-03.", []),
        ("Admitted on 01/03/2024.", []),
        ("Admitted on 3 January 2024.", []),
        ("Admitted on Jan 4, 2024.", ["Jan 4, 2024"]),
    ],
)
def test_dates_are_compared_as_dates(sentence, spans) -> None:
    evidence = Evidence.of_text("Admission 2024-01-03T10:00:00+00:00")
    assert failing(sentence_checks.check_dates(sentence, evidence)) == spans
    assert failing(sentence_checks.check_numbers(sentence, evidence)) == []


@pytest.mark.parametrize(
    ("sentence", "spans"),
    [
        ("Continue lisinopril.", []),
        ("Continue losartan and warfarin.", ["warfarin", "losartan"]),
        ("Allergic to sulfa.", ["sulfa"]),
    ],
)
def test_drugs_and_allergens_must_exist_in_the_evidence(sentence: str, spans: list[str]) -> None:
    evidence = Evidence.of_text("Started lisinopril 10 mg. Allergy to penicillin.")
    assert failing(sentence_checks.check_drugs(sentence, evidence)) == spans
    assert "warfarin" in sentence_checks.drug_lexicon()


@pytest.mark.parametrize(
    ("sentence", "by_a_rule", "spans"),
    [
        ("No aspirin at discharge after the bypass: confirm why.", True, []),
        ("No aspirin at discharge after the bypass: confirm why.", False, ["aspirin"]),
        ("No statin at discharge; continue warfarin.", True, ["warfarin"]),
        ("Aspirin was not given, but aspirin is continued.", True, ["Aspirin", "aspirin"]),
    ],
    ids=["a rule's absence", "a model's absence", "absent, then asserted", "denied and asserted"],
)
def test_a_drug_a_rule_says_is_absent_is_no_claim_that_it_was_given(
    sentence: str, by_a_rule: bool, spans: list[str]
) -> None:
    """A sentence a rule wrote from the record ("No aspirin at discharge") names a drug it
    looked for and did not find; a model's sentence saying the same is a claim its citations
    cannot show, and any drug the sentence asserts is checked as ever."""
    evidence = Evidence.of_text("Coronary artery bypass grafting. Started lisinopril 10 mg.")
    checked = sentence_checks.check_drugs(sentence, evidence, absence_said=by_a_rule)
    assert failing(checked) == spans


@pytest.mark.parametrize(
    ("sentence", "spans"),
    [
        ("The patient denies fever.", []),
        ("No fever.", []),
        ("The patient has a fever.", ["fever"]),
        ("Reports chest pain.", []),
        ("No chest pain.", []),  # the reverse is a soft "denials" signal
    ],
)
def test_negation_must_agree(sentence, spans) -> None:
    evidence = Evidence.of_text("She denies fever. Reports chest pain since Monday.")
    assert failing(sentence_checks.check_negation(sentence, evidence)) == spans


def test_denying_what_the_evidence_states_is_a_soft_denials_signal() -> None:
    evidence = Evidence.of_text("She denies fever. Reports chest pain since Monday.")
    denied = sentence_checks.check_denials("No chest pain.", evidence)
    assert failing(denied) == ["chest", "pain"] and denied.severity == "soft"
    assert failing(sentence_checks.check_denials("No fever.", evidence)) == []


@pytest.mark.parametrize(
    ("dialogue", "claim", "spans"),
    [
        ("Doctor: Any swelling?\nPatient: No.", "She has swelling.", ["swelling"]),
        ("Doctor: Any swelling?\nPatient: Yes, a little.", "She has swelling.", []),
        ("Doctor: Any swelling?\nPatient: Let me think.", "She has swelling.", []),
        ("Doctor: Are you married?\nPatient: No, I'm single.", "He is single.", []),
        ("Patient: I don't have any fever.", "He has a fever.", ["fever"]),
        ("Negative for heart disease, hypertension, diabetes, or kidney disease.",
         "He has kidney disease.", ["kidney", "disease"]),
        ("No history of marriage or children and that he had high school education.",
         "He had high school education.", []),
        ("Patient: I have difficulty keeping my balance.", "He keeps his balance.",
         ["keeps", "balance"]),
        ("He denies fever, chills, sweats, ear pain, cough, dyspnea, vomiting, diarrhea, or "
         "neck pain.", "He has neck pain.", ["neck", "pain"]),
    ],
)  # fmt: skip
def test_negation_in_a_dialogue_follows_the_answer_and_its_scope(
    dialogue: str, claim: str, spans: list[str]
) -> None:
    assert failing(sentence_checks.check_negation(claim, Evidence.of_text(dialogue))) == spans


@pytest.mark.parametrize(
    ("said", "written"),
    [
        ("I am twenty-six years old.", "26"),
        ("She is in fifth grade.", "5"),
        ("Sodium was one hundred thirty three.", "133"),
        ("I gave birth in two thousand and eight.", "2008"),
        ("Colon resection in nineteen sixty one.", "1961"),
        ("Both died in their seventies.", "70"),
    ],
)
def test_numbers_said_in_words_are_evidence_for_digits(said: str, written: str) -> None:
    assert failing(sentence_checks.check_numbers(f"Value {written}.", Evidence.of_text(said))) == []
    assert failing(sentence_checks.check_numbers("Value 987.", Evidence.of_text(said))) == ["987"]


@pytest.mark.parametrize(
    "said",
    [
        "since your last visit on April fifteenth two thousand five?",
        "on the fifteenth of April, 2005",
        "April 15th, two thousand and five",
    ],
)
def test_dates_said_in_words_are_evidence_for_written_dates(said: str) -> None:
    assert failing(sentence_checks.check_dates("Seen on 04/15/2005.", Evidence.of_text(said))) == []
    assert failing(sentence_checks.check_dates("Seen on 04/16/2005.", Evidence.of_text(said))) == [
        "04/16/2005"
    ]


def test_list_numbering_is_not_a_number_to_check() -> None:
    evidence = Evidence.of_text("Bipolar disorder and anemia.")
    assert failing(sentence_checks.check_numbers("1. Bipolar disorder. 2. Anemia.", evidence)) == []
    assert failing(sentence_checks.check_numbers("2.", evidence)) == []
    assert failing(sentence_checks.check_numbers("Glucose 182.", evidence)) == ["182"]


@pytest.mark.parametrize(
    ("stated", "sentence", "spans"),
    [
        ("Patient is a 68 year-old male.", "A 68-year-old man.", []),
        ("Patient is a 68 year-old male.", "A 10-year-old female.", ["10-year-old", "female"]),
        # Pronouns and forms of address are evidence of sex.
        ("Doctor: How is she feeling today, Mrs. Smith?", "A woman with back pain.", []),
        ("Doctor: How is she feeling today, Mrs. Smith?", "A man with back pain.", ["man"]),
    ],
)
def test_demographics_must_be_stated(stated: str, sentence: str, spans: list[str]) -> None:
    evidence = Evidence.of_text(stated)
    assert failing(sentence_checks.check_demographics(sentence, evidence)) == spans


def test_terms_not_in_the_evidence_are_reported_as_runs() -> None:
    evidence = Evidence.of_text("A mediastinal mass was biopsied. Pathology is pending.")
    assert failing(
        sentence_checks.check_terms(
            "Biopsy of the mediastinal mass showed a benign neurogenic tumor.", evidence
        )
    ) == ["showed", "benign neurogenic tumor"]


PAPER_SOURCE = (
    "The patient presented with a posterior mediastinal mass found on chest CT. "
    "A biopsy of the mass was performed. Pathology is pending at the time of discharge."
)
PAPER_SUMMARY = (
    "A 10-year-old male presented with a metastatic posterior mediastinal mass. "
    "Biopsy showed a benign neurogenic tumor."
)


def test_the_papers_example_is_flagged_on_every_invented_span() -> None:
    report = verify_text(PAPER_SOURCE, PAPER_SUMMARY)
    # Age and sex are hard failures of the word checks. An invented finding with no number,
    # drug or negation in it is only weakly grounded to them; the claim verifier reads that the
    # pending pathology showed nothing, and makes it unsupported.
    assert [s.verdict for s in report.sentences] == ["unsupported", "unsupported"]
    words_only = verify_text(PAPER_SOURCE, PAPER_SUMMARY, meaning=False)
    assert [s.verdict for s in words_only.sentences] == ["unsupported", "supported"]
    assert [s.weakly_grounded for s in words_only.sentences] == [True, True]
    spans = " | ".join(span for s in report.sentences for span in s.spans)
    for invented in ("10-year-old", "male", "metastatic", "benign neurogenic tumor"):
        assert invented in spans
    assert report.numeric_precision == 0.0
    assert report.hallucination_rate == 1.0


def test_a_faithful_paraphrase_is_weakly_grounded_at_most_never_unsupported() -> None:
    source = (
        "Discharge medications include atenolol, phenytoin, docusate sodium, and dexamethasone."
    )
    paraphrase = (
        "The patient was prescribed atenolol, phenytoin, docusate sodium, and dexamethasone."
    )
    (sentence,) = verify_text(source, paraphrase).sentences
    assert sentence.verdict == "supported"
    assert sentence.weakly_grounded and sentence.spans == ["prescribed"]
    (swapped,) = verify_text(source, paraphrase.replace("phenytoin", "warfarin")).sentences
    assert swapped.verdict == "unsupported" and "warfarin" in swapped.spans


def test_a_sentence_whose_only_failure_is_soft_is_flagged_weak_grounding_not_unsupported() -> None:
    soft = CheckResult(check="terms", passed=False, spans=["prescribed"], detail="words")
    sentence = Sentence(
        id="s1", section="hospital_course", text="x", citations=["f"], checks=[soft]
    )
    assert soft.severity == "soft" and sentence.verdict == "supported"
    assert sentence.weakly_grounded and sentence.flagged
    assert sentence.review_reasons().startswith("weak grounding: ")


def test_checking_never_loads_torch() -> None:
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, pipeline.checking.checker; print('torch' in sys.modules)",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    assert loaded.stdout.strip() == "False"


def test_a_faithful_summary_passes() -> None:
    report = verify_text(
        PAPER_SOURCE,
        "A posterior mediastinal mass was found on chest CT. Pathology is pending at discharge.",
    )
    assert [s.verdict for s in report.sentences] == ["supported", "supported"]
    assert (report.numeric_precision, report.hallucination_rate) == (1.0, 0.0)


def test_numeric_metrics_count_mentions_and_sentences() -> None:
    texts = ["Glucose 182 mg/dL.", "Glucose 140 mg/dL on 2024-01-03.", "Stable."]
    evidence = Evidence.of_text("glucose 182 mg/dL, 2024-01-03")
    checks = [
        [sentence_checks.check_numbers(t, evidence), sentence_checks.check_dates(t, evidence)]
        for t in texts
    ]
    precision, rate = numeric_metrics(texts, checks)
    assert precision == pytest.approx(2 / 3)
    assert rate == pytest.approx(1 / 2)


# --- perturbed copies of real reference summaries (MTS-Dialog validation) ------------------------

MTS = SHARED_DATA / "mts-dialog" / "MTS-Dialog-ValidationSet.csv"


@cache
def references() -> list[str]:
    with MTS.open(newline="", encoding="utf-8") as stream:
        return [row["section_text"] for row in csv.DictReader(stream)]


def flagged_spans(source: str, summary: str) -> list[str]:
    return [span for s in verify_text(source, summary).sentences for span in s.spans]


@pytest.mark.shared_data
def test_real_reference_summaries_verify_against_themselves() -> None:
    for reference in references():
        report = verify_text(reference, reference)
        assert all(s.verdict == "supported" for s in report.sentences), reference


@pytest.mark.shared_data
def test_a_wrong_number_is_flagged_in_every_reference() -> None:
    perturbed = 0
    for reference in references():
        match = re.search(r"(?<![\w/.])\d+(?![\w/.)])", reference)
        if not match or "987" in reference:
            continue
        summary = reference[: match.start()] + "987" + reference[match.end() :]
        assert "987" in " ".join(flagged_spans(reference, summary)), reference
        perturbed += 1
    assert perturbed >= 20


@pytest.mark.shared_data
def test_a_wrong_drug_is_flagged_in_every_reference() -> None:
    lexicon = sentence_checks.drug_lexicon()
    perturbed = 0
    for reference in references():
        drugs = [w for w in re.findall(r"[A-Za-z]+", reference) if w.lower() in lexicon]
        if not drugs or "warfarin" in reference.lower():
            continue
        summary = re.sub(rf"\b{drugs[0]}\b", "warfarin", reference, count=1)
        assert "warfarin" in flagged_spans(reference, summary), reference
        perturbed += 1
    assert perturbed >= 5


@pytest.mark.shared_data
def test_a_flipped_negation_is_flagged_in_every_reference() -> None:
    perturbed = 0
    for reference in references():
        match = re.search(r"\b(?:No|Denies|denies) (?:any )?(?P<finding>[a-z]{4,})\b", reference)
        if not match or match.group("finding") in FUNCTION_WORDS:
            continue
        if len(re.findall(rf"\b{match.group('finding')}", reference, re.I)) > 1:
            continue  # also stated positively elsewhere: no flip to detect
        finding = match.group("finding")
        summary = f"The patient has {finding}."
        assert finding in flagged_spans(reference, summary), reference
        perturbed += 1
    assert perturbed >= 5


@pytest.mark.shared_data
def test_invented_demographics_are_flagged_in_every_reference() -> None:
    # Words, pronouns and forms of address all tell a sex (the evidence's own may not differ).
    sex_words = re.compile(
        r"\b(male|female|man|woman|boy|girl|men|women|gentleman|lady|he|him|his|she|her|hers|"
        r"mr|mrs|ms|miss|sir)\b",
        re.I,
    )
    perturbed = 0
    for reference in references():
        if sex_words.search(reference) or re.search(r"\b47\b", reference):
            continue
        summary = "The patient is a 47-year-old woman. " + reference
        spans = flagged_spans(reference, summary)
        assert "47-year-old" in spans and "woman" in spans, reference
        perturbed += 1
    assert perturbed >= 20


def test_digits_inside_an_identifier_are_never_read_as_numbers() -> None:
    """A Needs review line naming a rejected fact by its id was flagged for "numbers not in the
    evidence": the id's digits."""
    from pipeline.checking.mentions import find_numbers

    line = "medication fact llm-3f2a9c1d0b7e4411 rejected; see note-0123456789abcdef"
    assert find_numbers(line) == []
    assert [m.text for m in find_numbers("aspirin 81 mg for 3 days, 10mg")] == [
        "81 mg",
        "3 days",
        "10mg",
    ]
