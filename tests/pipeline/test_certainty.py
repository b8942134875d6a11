"""The checker against real fabrications (#24): a number counting another thing, a finding
asserted as certain where the source only raises it, a different disease class. The example is
AgenticSum's own (its Appendix E), as quoted in the issue, which used to pass as supported."""

from __future__ import annotations

import pytest

from pipeline.checking.certainty import check_certainty, check_disease_class, hedged_stems
from pipeline.checking.checker import Evidence, check_free_sentence, check_numbers
from pipeline.evidence.summary import CheckResult, hard_verdict
from pipeline.text.words import stem

SOURCE = (
    "He was well until 10 days ago, when he began experiencing gradually worsening headaches. "
    "CT showed an abnormally enlarged lymph node. The imaging raises the possibility of a benign "
    "neoplasm (question neurogenic tumor), and pathology is pending at the time of discharge."
)


def checks_of(sentence: str) -> list[CheckResult]:
    """A free sentence's checks against the Appendix E source, which is at once its cited
    evidence and the whole note."""
    whole = Evidence.of_text(SOURCE)
    return check_free_sentence(sentence, whole, whole)


def verdict_of(sentence: str) -> str:
    return hard_verdict(checks_of(sentence))


def test_appendix_e_fabrications_are_unsupported_hard() -> None:
    assert verdict_of("The patient is a 10-year-old male with worsening headaches.") == (
        "unsupported"
    )
    assert verdict_of("An abnormally enlarged lymph node representing metastatic involvement.") == (
        "unsupported"
    )
    assert verdict_of(
        "The pathology pending at the time of discharge is a benign neurogenic tumor."
    ) == ("unsupported")


def test_what_the_source_says_is_not_failed_by_the_new_checks() -> None:
    for faithful in (
        "Headaches began 10 days ago and gradually worsened.",
        "Imaging raised the possibility of a benign neoplasm; pathology is pending.",
        "A neurogenic tumor is questioned.",
    ):
        checks = {c.check: c for c in checks_of(faithful)}
        assert checks["numbers"].passed, faithful
        assert checks["certainty"].passed, faithful
        assert checks["disease_class"].passed, faithful


def test_a_number_supports_a_claim_only_with_what_it_counts() -> None:
    evidence = Evidence.of_text("Headache for 10 days. Insulin 10 units at night.")
    assert not check_numbers("A 10-year-old boy.", evidence).passed
    assert not check_numbers("Metformin 10 mg daily.", evidence).passed
    assert check_numbers("Insulin 10 units at night.", evidence).passed
    assert check_numbers("Headache for 10 days.", evidence).passed
    # A bare value in the evidence (a structured field) supports any count of it.
    assert check_numbers("Discharged after 6 days.", Evidence.of_text("length of stay 6")).passed
    assert check_numbers("She is 49 years old.", Evidence.of_text("a 49 year-old woman")).passed


def test_hedge_cues_scope_forward_and_pending_backward() -> None:
    assert {stem("pneumonia")} <= hedged_stems("Chest film: possible pneumonia.")
    assert stem("sepsis") in hedged_stems("Admitted to rule out sepsis.")
    assert stem("Pathology") in hedged_stems("Pathology is pending.")
    assert stem("pneumonia") not in hedged_stems("Pneumonia, treated. Possible effusion.")


def test_a_finding_the_source_asserts_somewhere_may_be_asserted() -> None:
    source = "Possible pneumonia on admission. Pneumonia confirmed by CT on day two."
    assert check_certainty("Treated for pneumonia.", source).passed
    assert not check_certainty("Treated for sepsis.", "Admitted to rule out sepsis.").passed
    assert check_certainty("Sepsis was ruled out? No: possible sepsis.", "rule out sepsis").passed


def test_disease_class_fails_only_against_the_other_class() -> None:
    assert not check_disease_class("Metastatic disease.", "A benign lesion.").passed
    assert not check_disease_class("A benign cyst.", "Carcinoma of the breast.").passed
    assert check_disease_class("Metastatic disease.", "Metastatic carcinoma.").passed
    assert check_disease_class("Metastatic disease.", "A lesion.").passed  # terms' job, soft


def test_a_sentence_without_a_clinical_claim_is_unsupported_and_never_drafted() -> None:
    from pipeline.checking.claims import claim_problem

    for empty in (
        "The doctor-patient conversation is summarized as follows",
        "Doctor: Are you having any headaches?",
        "I'm",
    ):
        assert claim_problem(empty) is not None, empty
        assert verdict_of(empty) == "unsupported", empty
    assert claim_problem("Headaches began 10 days ago.") is None


@pytest.mark.parametrize(
    ("sentence", "why"),
    [
        ('Doctor: "Are you taking Fluticasone inhaler?"', "a question"),
        ("Patient: How old are you now", "a question"),
        ("Doctor: I'm sorry for any misunderstanding, but I'm Dr. Alex Thompson.", "a courtesy"),
        ("Doctor: Wow amazing.", "a courtesy"),
        ("Doctor: Tell me what happened.", "a request"),
        ("Patient: I didn't know.", "says only that it is not known"),
        (
            "The doctor acknowledges the patient's injury and provides a kind explanation.",
            "about the conversation or the summary, not the patient",
        ),
    ],
)
def test_courtesies_requests_and_reports_of_the_conversation_make_no_claim(
    sentence: str, why: str
) -> None:
    from pipeline.checking.claims import claim_problem

    assert claim_problem(sentence) == why


@pytest.mark.parametrize(
    "sentence",
    [
        "The doctor explains that the patient has a family history of heart disease.",
        "The physician discussed the risks of surgery with the patient, who consented.",
        "The patient was asked about smoking and quit ten years ago.",
        "When she arrived she was hypoxic.",
        "Patient denies fever.",
        "Patient: No, I quit before I had my daughter.",
    ],
)
def test_a_sentence_that_reports_a_finding_is_a_claim_however_it_opens(sentence: str) -> None:
    from pipeline.checking.claims import claim_problem

    assert claim_problem(sentence) is None


def test_an_abbreviation_the_source_never_uses_is_a_word_the_evidence_lacks() -> None:
    from pipeline.checking.checker import check_terms

    dialogue = Evidence.of_text("Patient: I have diabetes and high blood pressure.")
    assert check_terms("Patient: I have HIV.", dialogue).spans == ["HIV"]
    assert check_terms("Patient: I have diabetes.", dialogue).passed
