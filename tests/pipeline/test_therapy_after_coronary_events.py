"""What an acute coronary syndrome, an infarction and a revascularization call for at
discharge, on hand-built records: prasugrel's age limit and indication, how an infarction was
treated and diagnosed, and secondary prevention after a bypass the record implies."""

from __future__ import annotations

from typing import Any

import pytest

from pipeline.settings import PipelineSettings
from pipeline.summarizing.evidence_summary import summarize_evidence
from tests import fhir_fixtures as fx
from tests.pipeline.test_indicated_therapy import FULL, going_home, risks, state_of


def test_prasugrel_past_the_labels_age_limit_is_flagged_with_the_patients_age() -> None:
    prasugrel = going_home("p", "prasugrel 10 MG Oral Tablet")
    old = risks(state_of(prasugrel, born="1940-01-01"))
    assert [r for r in old if "year-old" in r] == [
        "prasugrel 10 MG Oral Tablet at discharge for a 84-year-old: past the label's age limit, "
        "where it is generally not recommended (bleeding risk): confirm the indication or "
        "consider another P2Y12 inhibitor"
    ]
    assert [r for r in risks(state_of(prasugrel)) if "year-old" in r] == []


def test_prasugrel_for_a_patient_who_reaches_the_age_limit_within_its_course_is_flagged() -> None:
    """Discharged 2024-03-02 at 74, 75 on 2024-05-01: the twelve months of dual antiplatelet
    therapy are mostly taken past the label's limit. A 75th birthday beyond the course (the
    default patient's, 2025-06-15) asks nothing."""
    prasugrel = going_home("p", "prasugrel 10 MG Oral Tablet")
    (line,) = [r for r in risks(state_of(prasugrel, born="1949-05-01")) if "year-old" in r]
    assert line.startswith(
        "prasugrel 10 MG Oral Tablet at discharge for a 74-year-old (born 1949-05-01), whose year "
        "of dual antiplatelet therapy after an acute coronary syndrome runs past the label's age "
        "limit"
    )
    assert [r for r in risks(state_of(prasugrel, born="1950-06-15")) if "year-old" in r] == []


def test_prasugrel_without_a_pci_in_the_episode_asks_for_the_procedure() -> None:
    """Prasugrel's indication is an acute coronary syndrome managed with PCI."""
    prasugrel = going_home("p", "prasugrel 10 MG Oral Tablet")
    without = [r for r in risks(state_of(prasugrel)) if "PCI" in r]
    assert without == [
        "prasugrel 10 MG Oral Tablet at discharge with no PCI recorded in this episode: its "
        "indication is an acute coronary syndrome managed with PCI: confirm the procedure, or "
        "the choice of P2Y12 inhibitor"
    ]
    stented = fx.procedure("pci", "Percutaneous coronary intervention (procedure)")
    assert [r for r in risks(state_of(prasugrel, stented)) if "PCI" in r] == []


@pytest.mark.parametrize(
    ("procedure", "asked"),
    [
        (None, True),
        ("Percutaneous coronary intervention (procedure)", False),
        ("Coronary angiography (procedure)", False),
        ("Thrombolysis of coronary artery (procedure)", False),
        ("Plain X-ray of chest (procedure)", True),
    ],
    ids=["nothing recorded", "a PCI", "angiography", "fibrinolysis", "a chest X-ray only"],
)
def test_an_acute_infarction_with_no_record_of_its_treatment_asks_how_it_was_treated(
    procedure: str | None, asked: bool
) -> None:
    """A STEMI discharged with nothing of its reperfusion on record: how it was treated is asked,
    since the drugs at discharge depend on it; an old infarction on the problem list is not."""
    infarction = fx.condition("mi", "Acute ST segment elevation myocardial infarction (disorder)")
    done = [fx.procedure("p", procedure)] if procedure else []
    found = [r for r in risks(state_of(infarction, *done)) if "how it was treated" in r]
    assert found == (
        [
            "An acute myocardial infarction (Acute ST segment elevation myocardial infarction) "
            "with no coronary angiography, PCI, bypass or fibrinolysis recorded in this episode: "
            "state how it was treated (reperfusion, or an invasive or medical strategy) and what "
            "the drugs at discharge are for"
        ]
        if asked
        else []
    )
    old = fx.condition("old", "History of myocardial infarction (situation)")
    assert not [r for r in risks(state_of(old)) if "how it was treated" in r]


@pytest.mark.parametrize(
    ("recorded", "asked"),
    [
        ([], True),
        ([fx.procedure("ecg", "Electrocardiographic procedure (procedure)")], False),
        (
            [
                fx.observation(
                    "tn",
                    "Troponin I.cardiac [Mass/volume] in Serum or Plasma",
                    3.2,
                    "ng/L",
                    loinc="89579-7",
                    when="2024-03-02T08:00:00+00:00",
                )
            ],
            False,
        ),
    ],
    ids=["nothing recorded", "an ECG", "a troponin"],
)
def test_an_acute_infarction_with_no_troponin_ecg_or_ejection_fraction_asks_for_them(
    recorded: list[dict[str, Any]], asked: bool
) -> None:
    """The Fourth Universal Definition (2018) diagnoses an infarction by its troponin, with an
    ECG at first contact; its ejection fraction is measured before discharge (ACC/AHA, class
    I). Readers of three infarction drafts found none of them and said so: the draft says it
    first. A result of the episode answers the rule as a procedure does."""
    infarction = fx.condition("mi", "Acute ST segment elevation myocardial infarction (disorder)")
    found = [r for r in risks(state_of(infarction, *recorded)) if "troponin" in r]
    assert found == [MARKERS_ASKED] * asked


MARKERS_ASKED = (
    "An acute myocardial infarction (Acute ST segment elevation myocardial infarction) with no "
    "troponin, ECG or ejection fraction recorded in this episode: how the infarction was "
    "diagnosed and the heart's function at discharge are not documented: add them, or say "
    "where they are"
)


def bypass_history(onset: str) -> dict[str, Any]:
    return fx.condition("h", "History of coronary artery bypass grafting (situation)", onset=onset)


def test_a_bypass_the_record_implies_calls_for_secondary_prevention_as_a_recorded_one() -> None:
    """ "History of coronary artery bypass grafting" recorded on the day of admission, with no
    procedure: the draft says the stay did the bypass as the record implies it, so the
    antiplatelet, statin and beta blocker after a bypass are asked about as after a recorded
    one. A history coded years before the stay is a past event: it asks only what chronic
    coronary disease asks for life (a statin), not the months after a bypass (a beta blocker)."""
    home = going_home("a", "aspirin 81 MG Oral Tablet")
    during = risks(state_of(bypass_history("2024-03-01T12:00:00+00:00"), home))
    assert during == [
        "No statin and no beta blocker at discharge after myocardial infarction or coronary "
        "revascularization (coronary artery bypass grafting): confirm each was considered, or "
        "why it is not given"
    ]
    assert risks(state_of(bypass_history("2012-05-01T12:00:00+00:00"), home)) == [
        "No statin at discharge with chronic coronary disease on the problem list (History of "
        "coronary artery bypass grafting): confirm it was considered, or why it is not given"
    ]


def test_the_history_of_the_stays_own_infarction_adds_no_second_indication() -> None:
    """ "History of myocardial infarction" coded the day of the infarction is its aftermath: the
    lines name the infarction once."""
    infarction = fx.condition("mi", "Acute non-ST segment elevation myocardial infarction")
    aftermath = fx.condition(
        "h", "History of myocardial infarction (situation)", onset="2024-03-01T12:00:00+00:00"
    )
    for line in risks(state_of(infarction, aftermath)):
        assert "(Acute non-ST segment elevation myocardial infarction)" in line, line


def test_a_p2y12_inhibitor_alone_after_a_bypass_asks_for_aspirin_by_name() -> None:
    """Aspirin is the antiplatelet after coronary revascularization or an infarction (ACC/AHA
    2011 CABG, 2021 revascularization and 2025 ACS guidelines); clopidogrel alone is the
    alternative for a patient who cannot take it, which the physician says. A reader found a
    draft that never said aspirin was missing, and another a line that did not name the
    clopidogrel beside it. The line names the drug it finds absent, which the checker lets pass
    in a sentence a rule wrote, the alternative it found, cited, and whether an allergy explains
    it (a line that called clopidogrel the drug "for a patient who cannot take" aspirin read to
    two readers as a claim of an intolerance the record does not hold)."""
    clopidogrel = going_home("c", "Clopidogrel 75 MG Oral Tablet")
    statin = going_home("s", "atorvastatin 80 MG Oral Tablet")
    beta = going_home("b", "metoprolol succinate 50 MG Extended Release Oral Tablet")
    state = state_of(bypass_history("2024-03-01T12:00:00+00:00"), clopidogrel, statin, beta)
    assert [r for r in risks(state) if r.startswith("No ")] == [
        "No aspirin at discharge after myocardial infarction or coronary revascularization "
        "(coronary artery bypass grafting): confirm it was considered, or why it is not given; "
        "on the record instead: Clopidogrel 75 MG Oral Tablet; no aspirin allergy or intolerance "
        "is recorded"
    ]
    summary = summarize_evidence(state, salience=lambda text: ([], []), settings=PipelineSettings())
    (line,) = [s for s in summary.section("needs_review").sentences if "No aspirin" in s.text]
    assert line.verdict == "supported"
    cited = {ref.resource for i in line.citations for ref in state.fact(i).sources}
    assert "MedicationRequest/c" in cited
    # The list's line says it too, whole: what is missing, and on its flag what is on record.
    (line,) = [s for s in summary.section("medications").sentences if "No aspirin" in s.text]
    assert line.verdict == "supported"
    assert line.review_reasons().endswith(
        "on the record instead: Clopidogrel 75 MG Oral Tablet; no aspirin allergy or intolerance "
        "is recorded"
    )
    cited = {ref.resource for i in line.citations for ref in state.fact(i).sources}
    assert "MedicationRequest/c" in cited
    aspirin = going_home("a", "aspirin 81 MG Oral Tablet")
    answered = state_of(bypass_history("2024-03-01T12:00:00+00:00"), clopidogrel, aspirin)
    assert not any("aspirin" in r for r in risks(answered))


def test_expected_groups_that_are_only_orders_to_confirm_share_one_line() -> None:
    """After the bypass, aspirin and a statin ordered three weeks before admission that the
    H&P's list (none) leaves out: one line asks about both, and calls them orders, not old
    ones; the beta blocker that none of them is, is its own question."""
    hp = fx.document_reference("hp", fx.attachment("# Medications\nNo Active Medications.\n"))
    weeks_before = [
        fx.medication_request(i, name, authored="2024-02-09", **FULL)  # type: ignore[arg-type]
        for i, name in (
            ("a", "aspirin 81 MG Oral Tablet"),
            ("s", "Simvastatin 20 MG Oral Tablet"),
        )
    ]
    flagged = risks(state_of(bypass_history("2024-03-01T12:00:00+00:00"), hp, *weeks_before))
    assert [r for r in flagged if "orders to confirm" in r] == [
        "The only aspirin and statin after myocardial infarction or coronary revascularization "
        "(coronary artery bypass grafting) are orders to confirm: aspirin 81 MG Oral Tablet; "
        "Simvastatin 20 MG Oral Tablet: confirm that each continues, or why not"
    ]
    assert any(r.startswith("No beta blocker at discharge") for r in flagged)


def test_an_old_clopidogrel_order_to_confirm_is_named_and_aspirin_stays_missing_at_discharge() -> (
    None
):
    """The alternative may be an old order the stay's notes leave out: named as on the record,
    and the line still says aspirin is missing at discharge, never "if continued" (that is said
    of a line whose own subject is an order to confirm)."""
    clopidogrel = fx.old_order("c", "Clopidogrel 75 MG Oral Tablet")
    flagged = risks(state_of(bypass_history("2024-03-01T12:00:00+00:00"), clopidogrel))
    (line,) = [r for r in flagged if "aspirin" in r]
    assert line.startswith("No aspirin, no statin and no beta blocker at discharge after")
    assert "if continued" not in line
    assert "on the record instead: Clopidogrel 75 MG Oral Tablet" in line


def test_an_aspirin_allergy_on_record_is_named_beside_the_alternative() -> None:
    clopidogrel = going_home("c", "Clopidogrel 75 MG Oral Tablet")
    allergy = fx.allergy("asa", "Aspirin")
    flagged = risks(state_of(bypass_history("2024-03-01T12:00:00+00:00"), clopidogrel, allergy))
    (line,) = [r for r in flagged if r.startswith("No aspirin")]
    assert line.endswith("on the record instead: Clopidogrel 75 MG Oral Tablet; recorded: Aspirin")
