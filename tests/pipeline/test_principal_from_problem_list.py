"""The principal problem taken from the problem list: a stay coded only by a status names the
clinical problem it was for when exactly one problem on the list is about the same thing; it
leads the diagnoses, flagged to confirm; with two, the physician chooses."""

from __future__ import annotations

from tests import fhir_fixtures as fx
from tests.pipeline.test_principal_problem import history_of, summary_of


def test_the_one_problem_a_status_term_names_leads_the_line_flagged_to_confirm() -> None:
    """ "Awaiting transplantation of kidney" names the kidney, and the problem list holds one
    kidney disease: it is the clinical problem the stay treated, said first, with what the stay
    was coded as; the flag says it comes from the problem list. A problem of another organ is
    not named."""
    kidney = fx.condition(
        "ckd", "Chronic kidney disease stage 4 (disorder)", encounter_id=None, onset="2015-01-01"
    )
    knee = fx.condition("oa", "Osteoarthritis of knee", encounter_id=None, onset="2010-01-01")
    summary = summary_of(kidney, knee, reason="Awaiting transplantation of kidney (situation)")
    first = summary.section("diagnoses").sentences[0]
    assert first.text == (
        "Chronic kidney disease stage 4 (on the problem list since 2015-01-01): no procedure of "
        "the episode documented. The stay is coded only as Awaiting transplantation of kidney."
    )
    assert [flag.code for flag in first.flags] == ["principal_from_problem_list"]
    assert "taken from the problem list" in first.flags[0].reason
    assert first.verdict == "supported"


def test_the_one_problem_named_leads_what_the_record_implies_was_done_for_it() -> None:
    """The issue's own form, "End-stage renal disease: kidney transplant on <date>": the one
    kidney disease on the list, then the transplant the record implies ("History of renal
    transplant" recorded on day two), then what the stay was coded as; the flag asks to confirm
    the diagnosis, the treatment and its date."""
    esrd = fx.condition(
        "esrd", "End-stage renal disease (disorder)", encounter_id=None, onset="2019-05-01"
    )
    summary = summary_of(
        esrd,
        history_of("renal transplant", recorded="2024-03-02T09:00:00Z"),
        reason="Awaiting transplantation of kidney (situation)",
    )
    first = summary.section("diagnoses").sentences[0]
    assert first.text == (
        "End-stage renal disease (on the problem list since 2019-05-01): renal transplant on "
        "2024-03-02, as the record implies it (see Procedures). The stay is coded only as "
        "Awaiting transplantation of kidney."
    )
    (flag,) = first.flags
    assert flag.reason.endswith(
        "no procedure of the episode is recorded: confirm the diagnosis, the treatment the "
        "record implies and its date"
    )


def test_two_problems_a_status_term_names_are_listed_for_the_physician_to_choose() -> None:
    """Two kidney diseases on the list: the record does not say which the transplant treats,
    so both are offered and neither is chosen."""
    ckd = fx.condition(
        "ckd", "Chronic kidney disease stage 4 (disorder)", encounter_id=None, onset="2015-01-01"
    )
    pkd = fx.condition(
        "pkd", "Polycystic kidney disease (disorder)", encounter_id=None, onset="2001-01-01"
    )
    summary = summary_of(ckd, pkd, reason="Awaiting transplantation of kidney (situation)")
    first = summary.section("diagnoses").sentences[0]
    assert first.text.startswith("Principal diagnosis not documented")
    assert "Chronic kidney disease stage 4 (since 2015-01-01)" in first.text
    assert "Polycystic kidney disease (since 2001-01-01)" in first.text
    assert [flag.code for flag in first.flags] == ["principal_not_documented"]


def test_with_nothing_done_or_implied_the_flag_does_not_repeat_its_line() -> None:
    """ "History of aortic valve replacement" coded with no procedure and no implied one (its
    history was recorded before the stay): the line says "no procedure of the episode
    documented", and its flag asks to confirm the diagnosis without saying it again."""
    stenosis = fx.condition(
        "as", "Aortic valve stenosis (disorder)", encounter_id=None, onset="2006-10-19"
    )
    summary = summary_of(stenosis, reason="History of aortic valve replacement (situation)")
    first = summary.section("diagnoses").sentences[0]
    assert "no procedure of the episode documented" in first.text
    (flag,) = first.flags
    assert flag.reason == (
        "the principal diagnosis is taken from the problem list, the one problem that the "
        "stay's coding names: confirm the diagnosis"
    )
