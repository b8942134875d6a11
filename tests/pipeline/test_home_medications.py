"""The pre-admission list from every source (orders, MedicationStatements, the H&P's list) and
what becomes of each home drug at discharge: continued, stopped, or asked about; and a drug a
note of the stay prescribes is never "not continued" (#23)."""

from __future__ import annotations

from pipeline.checking.checker import check_cited_sentence
from pipeline.evidence.model import EvidenceState
from pipeline.settings import PipelineSettings
from pipeline.summarizing.evidence_summary import summarize_evidence
from smartapp.jobs.evidence import evidence_from_fhir
from tests import fhir_fixtures as fx
from tests.pipeline.drafting_support import HP_LISTING_LISINOPRIL, drafted

RECENT = "2023-12-01"

PRESCRIBING_NOTE = fx.document_reference(
    "plan",
    fx.attachment(
        "# Assessment and Plan\nNSTEMI.\n\n## Plan\n\n"
        "The patient was prescribed the following medications:\n"
        "- aspirin 81 mg oral tablet\n- clopidogrel 75 mg oral tablet\n"
    ),
)


def codes(state: EvidenceState) -> list[str]:
    return [flag.code for flag in state.flags_for_review]


def test_a_home_drug_of_the_hp_that_no_order_carries_is_asked_about_never_dropped() -> None:
    state, sections = drafted(
        HP_LISTING_LISINOPRIL,
        fx.medication_request("asa", "Aspirin 81 MG Oral Tablet", authored=RECENT),
    )
    assert any(line.startswith("CONTINUED: Aspirin 81 MG") for line in sections["medications"])
    assert (
        "Home medications with no discharge order (held or stopped? confirm): "
        "lisinopril 10 mg oral tablet." in sections["medications"]
    )
    assert codes(state).count("home_medication_not_ordered") == 1
    (flag,) = [f for f in state.flags_for_review if f.code == "home_medication_not_ordered"]
    assert state.fact(flag.fact_ids[0]).sources[0].quote is not None  # cites the H&P's line


def test_a_drug_released_by_a_device_a_clinician_placed_is_in_place_never_held() -> None:
    """An intrauterine system on the H&P's list has no order at discharge, as none is needed: it
    stays in place until removed, so it is said so and never asked about as held or stopped."""
    hp = fx.document_reference(
        "hp",
        fx.attachment(
            "# Medications\nkyleena 19.5 mg intrauterine system; lisinopril 10 mg oral tablet\n"
        ),
    )
    state, sections = drafted(hp)
    assert sections["medications"] == [
        "Home medications with no discharge order (held or stopped? confirm): "
        "lisinopril 10 mg oral tablet.",
        "In place from before the stay (placed by a clinician; no order holds or stops it, only "
        "removal): kyleena 19.5 mg intrauterine system.",
    ]
    (flag,) = [f for f in state.flags_for_review if f.code == "home_medication_not_ordered"]
    assert len(flag.fact_ids) == 1


def test_a_home_drug_given_during_the_stay_is_held_or_stopped_never_absent_from_the_orders() -> (
    None
):
    given = fx.ordered_in_stay("acei", "Lisinopril 10 MG Oral Tablet", status="completed")
    _, sections = drafted(HP_LISTING_LISINOPRIL, given)
    held = [line for line in sections["medications"] if line.startswith("Home medications")]
    assert held == [
        "Home medications with no discharge order (held or stopped? confirm): "
        "lisinopril 10 mg oral tablet; aspirin 81 mg oral tablet."
    ]
    everything = [line for lines in sections.values() for line in lines]
    assert not any("absent from the orders" in line for line in everything)


def test_a_home_drug_that_a_discharge_order_carries_is_not_asked_about() -> None:
    state, sections = drafted(
        HP_LISTING_LISINOPRIL,
        fx.medication_request("acei", "Lisinopril 20 MG Oral Tablet", authored=RECENT),
        fx.medication_request("asa", "Aspirin 81 MG Oral Tablet", authored=RECENT),
    )
    assert not any(line.startswith("Home medications") for line in sections["medications"])
    assert "home_medication_not_ordered" not in codes(state)


def test_a_medication_statement_is_a_home_drug_but_never_continued_without_an_order() -> None:
    state, sections = drafted(fx.medication_statement("ms", "Metformin 500 MG Oral Tablet"))
    assert (
        "Home medications with no discharge order (held or stopped? confirm): "
        "Metformin 500 MG Oral Tablet." in sections["medications"]
    )
    assert not any(line.startswith("CONTINUED") for line in sections["medications"])
    (fact,) = state.facts["medication"]
    assert fact.attributes.recorded_as == "statement"
    assert fact.attributes.phase == "admission"


def test_a_medication_statement_matched_by_a_discharge_order_is_continued() -> None:
    _, sections = drafted(
        fx.medication_statement("ms", "Metformin 500 MG Oral Tablet"),
        fx.ordered_in_stay("met", "Metformin 500 MG Oral Tablet"),
    )
    assert any(line.startswith("CONTINUED: Metformin 500 MG") for line in sections["medications"])
    assert not any(line.startswith("Home medications") for line in sections["medications"])


def test_a_statement_and_the_hp_naming_one_drug_make_one_line() -> None:
    note = fx.document_reference("hp", fx.attachment("# Medications\nmetformin 500 mg\n"))
    state, sections = drafted(note, fx.medication_statement("ms", "Metformin 500 MG Oral Tablet"))
    held = [line for line in sections["medications"] if line.startswith("Home medications")]
    assert held == [
        "Home medications with no discharge order (held or stopped? confirm): "
        "Metformin 500 MG Oral Tablet."
    ]
    (change,) = [c for c in state.medications.changes if c.kind == "held_or_stopped"]
    assert change.admission and change.noted  # both sources cited


def test_statements_that_ended_before_the_stay_or_say_not_taken_are_excluded() -> None:
    state, _ = drafted(
        fx.medication_statement("old", "Warfarin 5 MG Oral Tablet", taken_until="2022-01-01"),
        fx.medication_statement("no", "Ibuprofen 200 MG Oral Tablet", status="not-taken"),
    )
    assert state.facts["medication"] == []
    reasons = {e.resource: e.kind for e in state.exclusions}
    assert reasons["MedicationStatement/old"] == "historical"
    assert reasons["MedicationStatement/no"] == "status"


def test_a_drug_the_stays_note_prescribes_is_never_not_continued() -> None:
    """The issue's example: aspirin "not continued at discharge" while the stay's own note
    says "prescribed … aspirin 81 mg, clopidogrel 75 mg"."""
    aspirin = fx.ordered_in_stay("asa", "Aspirin 81 MG Oral Tablet", status="completed")
    cefazolin = fx.ordered_in_stay("abx", "Cefazolin 1000 MG Injection", status="completed")
    state, sections = drafted(PRESCRIBING_NOTE, aspirin, cefazolin)
    medications = sections["medications"]
    assert "Given during the stay, not continued at discharge: Cefazolin 1000 MG Injection." in (
        medications
    )
    assert (
        "Prescribed in this stay's notes, with no order active at discharge (confirm whether "
        "continued): aspirin 81 mg oral tablet; clopidogrel 75 mg oral tablet." in medications
    )
    assert not any("not continued" in line and "spirin" in line for line in medications)
    (flag,) = [f for f in state.flags_for_review if f.code == "prescribed_not_ordered"]
    assert "MedicationRequest/asa" in {
        ref.resource for fact_id in flag.fact_ids for ref in state.fact(fact_id).sources
    }


def test_a_prescribed_drug_with_a_discharge_order_needs_nothing_more() -> None:
    orders = [
        fx.ordered_in_stay(name.split()[0].lower(), name)
        for name in ("Aspirin 81 MG Oral Tablet", "Clopidogrel 75 MG Oral Tablet")
    ]
    state, sections = drafted(PRESCRIBING_NOTE, *orders)
    assert not any(line.startswith("Prescribed in") for line in sections["medications"])
    assert "prescribed_not_ordered" not in codes(state)


def test_the_held_or_stopped_line_carries_no_checker_note_of_its_own_words() -> None:
    """The template's "no discharge order" is no denial of the note's "Medications": a rendered
    line is not checked for denials, while a physician's edit of it is."""
    state = evidence_from_fhir(fx.stay(HP_LISTING_LISINOPRIL), settings=PipelineSettings())
    summary = summarize_evidence(state, settings=PipelineSettings())
    (line,) = [s for s in summary.section("medications").sentences if "held or stopped" in s.text]
    assert not line.weakly_grounded, line.review_reasons()
    edited = check_cited_sentence("No medications were taken at home.", line.citations, state)
    assert any(check.check == "denials" and not check.passed for check in edited)


def test_a_combination_on_the_home_list_is_its_own_drug_not_its_shared_ingredient() -> None:
    """Oxycodone alone and acetaminophen/oxycodone are two drugs: each gets its line."""
    hp = fx.document_reference(
        "hp",
        fx.attachment(
            "# Medications\nabuse-deterrent 12 hr oxycodone hydrochloride 10 mg extended release "
            "oral tablet [oxycontin]; acetaminophen 325 mg / oxycodone hydrochloride 10 mg oral "
            "tablet [percocet]\n"
        ),
    )
    _, sections = drafted(hp)
    (line,) = [s for s in sections["medications"] if s.startswith("Home medications")]
    assert "[oxycontin]" in line and "[percocet]" in line


def test_home_drugs_only_a_note_lists_are_seen_by_the_safety_rules() -> None:
    """Ibuprofen and two long-acting opioids on the H&P's list, none ordered: at home, so they
    may still be taken beside the clopidogrel going home. The rules cite the note's line; a home
    drug has no prescription whose duration to ask for."""
    hp = fx.document_reference(
        "hp",
        fx.attachment(
            "# Medications\nibuprofen 400 mg oral tablet; 12 hr oxycodone hydrochloride 10 mg "
            "extended release oral tablet; 72 hr fentanyl 0.025 mg/hr transdermal system\n"
        ),
    )
    clopidogrel = fx.medication_request(
        "c", "clopidogrel 75 MG Oral Tablet", encounter_id=fx.ENCOUNTER_ID
    )
    state, _ = drafted(hp, clopidogrel)
    reasons = {flag.code: flag.reason for flag in state.flags_for_review}
    bleeding = [f for f in state.flags_for_review if "NSAID with an antiplatelet" in f.reason]
    assert len(bleeding) == 1
    assert state.fact(bleeding[0].fact_ids[0]).category == "medication_list"
    # Both opioids are only at home (held or stopped?): the duplication is theirs if they
    # continue, never "at discharge"; the NSAID beside the clopidogrel going home is.
    duplication = reasons["therapeutic_duplication"]
    assert duplication.startswith("Therapeutic duplication if continued (opioid; two long-acting)")
    assert bleeding[0].reason.startswith("Bleeding risk at discharge")
    assert not any("no duration" in flag.reason for flag in state.flags_for_review)


def test_a_drug_an_earlier_stays_note_prescribes_is_said_to_be_that_stays() -> None:
    """A readmission: the note of the heart failure stay a week before prescribes aspirin and
    clopidogrel; this stay's own note prescribes none. The line says whose notes they were,
    never "this stay's notes"."""
    earlier = fx.encounter(
        "first-stay", "2024-02-20T08:00:00+00:00", "2024-02-26T12:00:00+00:00", "IMP"
    ) | {"reasonCode": [{"text": "Heart failure"}]}
    note = PRESCRIBING_NOTE | {"date": "2024-02-26T11:00:00+00:00"}
    note["context"] = {"encounter": [{"reference": "Encounter/first-stay"}]}
    stay = fx.encounter() | {"reasonCode": [{"text": "Heart failure"}]}
    record = fx.bundle(fx.patient(), stay, earlier, note)
    state = evidence_from_fhir(record, settings=PipelineSettings())
    summary = summarize_evidence(state, settings=PipelineSettings())
    medications = [s.text for s in summary.section("medications").sentences]
    assert (
        "Prescribed in the notes of the earlier stay of this readmission, with no order active "
        "at discharge (confirm whether continued): aspirin 81 mg oral tablet; clopidogrel 75 mg "
        "oral tablet." in medications
    )
    assert not any("this stay's notes" in line for line in medications)


def test_an_order_at_another_strength_than_the_note_lists_is_asked_about_on_its_line() -> None:
    """The H&P lists lisinopril 10 mg; the order going home is Lisinopril 20 MG: which strength
    is taken is the physician's to say, on the drug's line and in Needs review. An order at the
    note's strength beside it settles it; a note line with no strength asks nothing."""
    twenty = fx.medication_request("acei", "Lisinopril 20 MG Oral Tablet", authored=RECENT)
    state, _ = drafted(HP_LISTING_LISINOPRIL, twenty)
    (flag,) = [f for f in state.flags_for_review if f.code == "strength_discrepancy"]
    assert flag.reason == (
        "Strength differs from the stay's note: Lisinopril 20 MG Oral Tablet ordered; the note "
        "lists lisinopril 10 mg oral tablet: confirm the strength taken"
    )
    summary = summarize_evidence(state, settings=PipelineSettings())
    (line,) = [s for s in summary.section("medications").sentences if "Lisinopril 20" in s.text]
    assert [flag.reason for flag in line.flags] == ["Strength differs from the stay's note"]
    ten = fx.medication_request("acei10", "Lisinopril 10 MG Oral Tablet", authored=RECENT)
    state, _ = drafted(HP_LISTING_LISINOPRIL, twenty, ten)
    assert "strength_discrepancy" not in codes(state)
    bare = fx.document_reference("hp", fx.attachment("# Medications\nlisinopril\n"))
    state, _ = drafted(bare, twenty)
    assert "strength_discrepancy" not in codes(state)


def test_strengths_are_compared_in_canonical_units() -> None:
    """The note's "10 mg" and the order's "10 MG" are one strength, whatever the spelling; a
    combination keeps each part's; a name that states none has none to compare."""
    from pipeline.clinical.strengths import strength

    assert strength("Lisinopril 10 MG Oral Tablet") == strength("lisinopril 10 mg oral tablet")
    assert strength("hydrochlorothiazide 12.5 MG / lisinopril 20 MG Oral Tablet") == (
        "12.5 mg + 20 mg"
    )
    assert strength("72 HR fentanyl 0.025 MG/HR Transdermal System") == "0.025 mg/hr"
    assert strength("Aspirin Oral Tablet") is None


def test_a_drug_the_plan_prescribes_is_no_word_that_an_old_order_is_still_taken() -> None:
    """A 2003 metoprolol succinate order still "active", an H&P listing no medications, and a
    plan prescribing metoprolol tartrate: the new prescription is the stay's own order, so the
    old one is an order to confirm like any other unrenewed one, not a drug the notes mention
    that the home list alone leaves out. A note naming the old drug itself still confirms it."""
    plan = "## Plan\n\nThe patient was prescribed the following medications:\n"
    listed = f"# Medications\nNo Active Medications.\n\n{plan}"
    hp = fx.document_reference(
        "hp", fx.attachment(f"{listed}- metoprolol tartrate 25 mg oral tablet\n")
    )
    old = fx.old_order("old", "24 HR metoprolol succinate 100 MG Extended Release Oral Tablet")
    new = fx.ordered_in_stay("new", "metoprolol tartrate 25 MG Oral Tablet")
    state, _ = drafted(hp, old, new)
    kinds = {c.name: c.kind for c in state.medications.changes}
    assert kinds["24 HR metoprolol succinate 100 MG Extended Release Oral Tablet"] == "unconfirmed"
    assert "medication_discrepancy" not in codes(state)
    (stale,) = [f for f in state.flags_for_review if f.code == "medication_not_renewed"]
    assert [state.fact(i).sources[0].resource for i in stale.fact_ids] == ["MedicationRequest/old"]
    taking = fx.document_reference(
        "hpi", fx.attachment("# History\nShe takes metoprolol succinate every morning.\n")
    )
    state, _ = drafted(hp, old, new, taking)
    assert "medication_not_renewed" not in codes(state)
