"""What the draft takes from the notes and the problem list: the chief complaint carried forward
from an earlier note, templated text, the problem list and social history when they hold only
the stay's own entries, SNOMED CT's semantic tags and the record number."""

from __future__ import annotations

import pytest

from pipeline.settings import PipelineSettings
from pipeline.summarizing.evidence_summary import summarize_evidence
from smartapp.jobs.evidence import evidence_from_fhir
from tests import fhir_fixtures as fx


def _complaints(stay_reason: str | None, own: str) -> tuple[list[str], list[list[str]]]:
    """The stay's header lines and their flags' reasons, from a record whose notes state the
    chief complaints below."""

    def note(note_id: str, said: str, encounter_id: str, written: str) -> dict:
        content = fx.attachment(f"# Chief Complaint\n{said}\n")
        return fx.document_reference(note_id, content, encounter_id=encounter_id) | {
            "date": written
        }

    stay = fx.encounter() | ({"reasonCode": [{"text": stay_reason}]} if stay_reason else {})
    visits = [
        fx.encounter(
            f"visit-{year}", f"{year}-01-10T09:00:00+00:00", f"{year}-01-10T10:00:00+00:00", "AMB"
        )
        for year in (2020, 2023)
    ]
    notes = [
        note("oldest", "- Chest pain", "visit-2020", "2020-01-10T09:30:00+00:00"),
        note("latest", "- Blurred Vision\n- Hunger", "visit-2023", "2023-01-10T09:30:00+00:00"),
        note("own", own, fx.ENCOUNTER_ID, "2024-03-01T12:00:00+00:00"),
    ]
    record = fx.bundle(fx.patient(), stay, *visits, *notes)
    state = evidence_from_fhir(record, settings=PipelineSettings())
    summary = summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())
    lines = [s for s in summary.section("stay").sentences if s.text.startswith("Chief")]
    return [s.text for s in lines], [[flag.reason for flag in s.flags] for s in lines]


def test_a_chief_complaint_in_the_words_of_the_last_note_before_the_stay_is_template_text() -> None:
    """Templated notes carry a complaint forward from visit to visit ("Blurred vision" in every
    note since 2010, beside a heart attack): a complaint in the same words as the patient's
    latest note before the episode (2023's, not 2020's) is template text, which readers called
    misleading beside the stay's coded reason; it is left out there, and the stay's new
    complaint stays. A stay that codes no reason of its own and whose notes only repeat has the
    carried line as all there is: said, naming the stay's note as its source, and flagged to
    confirm."""
    repeated = (
        "Chief complaint in this stay's note, in the same words as the patient's last note "
        "before it: "
    )
    infarction = "Acute myocardial infarction"
    assert _complaints(infarction, "- Blurred Vision\n- Chest pain") == (
        ["Chief complaint: Chest pain"],
        [[]],
    )
    assert _complaints(infarction, "- Blurred Vision\n- Hunger") == ([], [])
    assert _complaints(None, "- Chest pain\n- Hunger") == (["Chief complaint: Chest pain"], [[]])
    lines, flags = _complaints(None, "- Blurred Vision\n- Hunger")
    assert lines == [f"{repeated}Blurred Vision; Hunger"]
    assert flags == [
        [
            "the same words as the patient's note of 2023-01-10, written before this stay, and "
            "the stay codes no reason of its own: confirm what brought the patient in"
        ]
    ]


def test_the_latest_note_before_the_episode_is_read_and_never_an_episodes_or_a_voided_one() -> None:
    """The note the complaints are compared with: the latest before the episode, of no encounter
    of it, neither entered in error nor an AI draft; the pull asks for it with one sorted
    first-page search before the notes it reads anyway."""
    from fhir_mapping.pull_plan import latest_note_search, stay_window
    from fhir_mapping.record import map_record

    def note(note_id: str, written: str, **extra: object) -> dict:
        content = fx.attachment("# Chief Complaint\n- Hunger\n")
        return fx.document_reference(note_id, content, encounter_id="visit") | {
            "date": written,
            **extra,
        }

    visit = fx.encounter("visit", "2023-01-10T09:00:00+00:00", "2023-01-10T10:00:00+00:00", "AMB")
    kept = note("kept", "2023-01-10T09:30:00+00:00")
    voided = note("voided", "2023-06-01T09:30:00+00:00", status="entered-in-error")
    drafted = note(
        "drafted",
        "2023-07-01T09:30:00+00:00",
        meta={"security": [{"code": "AIAST"}]},
    )
    own = fx.document_reference("own", fx.attachment("# Chief Complaint\n- Hunger\n"))
    mapped = map_record(fx.bundle(fx.patient(), fx.encounter(), visit, kept, voided, drafted, own))
    assert mapped.earlier_note is not None
    assert [ref.resource for ref in mapped.earlier_note.sources] == ["DocumentReference/kept"]
    window = stay_window(fx.encounter(), 24, 90)
    assert window is not None
    search = latest_note_search("p1", window)
    assert (search.resource_type, search.params) == (
        "DocumentReference",
        {
            "patient": "Patient/p1",
            "date": f"lt{window.episode_from}",
            "_sort": "-date",
            "_count": "1",
        },
    )


@pytest.mark.parametrize(
    ("conditions", "said"),
    [
        (
            (fx.condition("a", "Acute appendicitis (disorder)"),),
            "None besides this stay's own (see Discharge diagnoses).",
        ),
        (
            (
                fx.condition("a", "Acute appendicitis (disorder)"),
                fx.condition(
                    "s",
                    "Unhealthy alcohol drinking behavior (finding)",
                    code="10939881000119105",
                    encounter_id=None,
                    onset="2024-02-26T10:00:00+00:00",
                ),
            ),
            "None besides this stay's own (see Discharge diagnoses) and the social findings "
            "under Social history.",
        ),
        ((), None),
    ],
    ids=["only-the-stays-own", "beside-social-findings-shown", "none-at-all"],
)
def test_a_problem_list_with_only_the_stays_own_diagnoses_is_not_called_undocumented(
    conditions: tuple[dict, ...], said: str | None
) -> None:
    """A list whose only active entries are this stay's diagnoses says so under its heading; two
    readers read "Not documented: Active problems" beside such a chart as contradicting it.
    Beside social findings that Social history shows (an alcohol use), two paired readers read
    a bare "none besides" as a list called complete that is not, and two later ones "Not
    documented" as wrong: the line names where the findings are. A record with no diagnosis at
    all says "Not documented", in Needs review's line."""
    state = evidence_from_fhir(fx.stay(*conditions), settings=PipelineSettings())
    summary = summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())
    problems = summary.section("active_problems")
    assert problems.sentences == []
    review = " ".join(s.text for s in summary.section("needs_review").sentences)
    if said is None:
        assert problems.named_in_needs_review and "Active problems" in review
    else:
        assert problems.empty_reason == said
        assert not problems.named_in_needs_review and "Active problems" not in review


def test_social_history_left_out_is_not_called_undocumented() -> None:
    """A note's Social History that the draft leaves out (an age the patient has not reached is
    the template's) is still documented: the section says none bears on discharge, and the Not
    documented line does not name it."""
    note = fx.document_reference(
        "n1", fx.attachment("# Social History\nPatient quit smoking at age 90.\n")
    )
    state = evidence_from_fhir(fx.stay(note), settings=PipelineSettings())
    summary = summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())
    social = summary.section("social_history")
    assert social.sentences == []
    assert social.empty_reason == "None recorded that bears on discharge planning."
    assert not social.named_in_needs_review
    review = [s.text for s in summary.section("needs_review").sentences]
    assert not any("Social history" in line for line in review)


def test_templated_note_text_is_left_out_of_the_draft() -> None:
    """Synthea-style notes: "No complaints." as the chief complaint, and a line that only says who
    the patient is, written again in every note of the stay."""
    note = (
        "# History of Present Illness\nAda is a 73 year-old white female. "
        "She recovered well after the valve surgery.\n"
    )
    first = fx.document_reference(
        "n1", fx.attachment(f"# Chief Complaint\nNo complaints.\n\n{note}")
    )
    second = fx.document_reference("n2", fx.attachment(note))
    state = evidence_from_fhir(fx.stay(first, second), settings=PipelineSettings())
    summary = summarize_evidence(
        state, ratio=1.0, salience=lambda text: ([], []), settings=PipelineSettings()
    )
    stay = [s.text for s in summary.section("stay").sentences]
    course = [s.text for s in summary.section("hospital_course").sentences]
    assert not any(line.startswith("Chief complaint") for line in stay)
    assert not any("73 year-old" in line for line in course)
    assert course.count("She recovered well after the valve surgery.") == 1


def test_snomed_semantic_tags_are_not_shown_and_a_uuid_is_no_medical_record_number() -> None:
    from pipeline.text.rendering import plain_term

    assert plain_term("Sepsis (disorder)") == "Sepsis"
    assert plain_term("Transplantation of kidney regime (regime/therapy)") == (
        "Transplantation of kidney regime"
    )
    assert plain_term("Inpatient stay (IMP)") == "Inpatient stay (IMP)"  # not a semantic tag
    patient = fx.patient() | {
        "id": "0d4fcba9-b3c9-1765-4a0f-120004c84bb3",
        "identifier": [
            {
                "type": {"coding": [{"code": "MR"}]},
                "value": "0d4fcba9-b3c9-1765-4a0f-120004c84bb3",
            }
        ],
    }
    state = evidence_from_fhir(
        fx.bundle(patient, fx.encounter(patient_id=patient["id"])), settings=PipelineSettings()
    )
    summary = summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())
    (header,) = [s.text for s in summary.section("stay").sentences if "born" in s.text]
    assert header.endswith("medical record number not documented.")
