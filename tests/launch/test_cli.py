"""The ``provenote evidence`` command: output, overview, and exit code 2 on bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from launch.cli import DEFAULT_SAMPLE, app
from pipeline.evidence.model import EvidenceState
from tests import fhir_fixtures as fx
from tests.fresh_python import fresh_python

runner = CliRunner()


def test_evidence_on_the_shipped_sample_writes_the_state_and_an_overview(tmp_path: Path) -> None:
    output = tmp_path / "out" / "state.json"
    result = runner.invoke(app, ["evidence", "-o", str(output)])
    assert result.exit_code == 0, result.output
    state = EvidenceState.model_validate_json(output.read_text())
    assert state.patient == f"Patient/{DEFAULT_SAMPLE.stem}"
    assert "Evidence for Zane918 Lino542 Abbott774, 68 years, male" in result.stdout
    assert "CHANGED    simvastatin 40 MG Oral Tablet (strength: 20 MG → 40 MG)" in result.stdout
    assert f"Conflicts ({len(state.conflicts)}):" in result.stdout
    assert "procedure       0  (Not documented)" in result.stdout


def test_encounter_option_selects_the_stay(tmp_path: Path) -> None:
    bundle = tmp_path / "b.json"
    bundle.write_text(
        json.dumps(
            fx.bundle(
                fx.patient(),
                fx.encounter("a", "2020-01-01T00:00:00+00:00"),
                fx.encounter("b", "2021-01-01T00:00:00+00:00"),
            )
        )
    )
    output = tmp_path / "s.json"
    result = runner.invoke(app, ["evidence", str(bundle), "--encounter", "a", "-o", str(output)])
    assert result.exit_code == 0, result.output
    assert EvidenceState.model_validate_json(output.read_text()).encounter == "Encounter/a"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not valid JSON"),
        ('{"resourceType": "Observation"}', "no Patient resource"),
        ('"just a string"', "neither a FHIR Bundle"),
    ],
)
def test_invalid_input_exits_2_and_writes_nothing(
    tmp_path: Path, content: str, message: str
) -> None:
    bundle = tmp_path / "bad.json"
    bundle.write_text(content)
    output = tmp_path / "state.json"
    result = runner.invoke(app, ["evidence", str(bundle), "-o", str(output)])
    assert result.exit_code == 2
    assert message in result.stderr
    assert not output.exists()
    assert list(tmp_path.iterdir()) == [bundle]


def test_missing_file_and_unknown_encounter_exit_2(tmp_path: Path) -> None:
    result = runner.invoke(app, ["evidence", str(tmp_path / "nope.json")])
    assert result.exit_code == 2 and "no such file" in result.stderr
    result = runner.invoke(app, ["evidence", str(DEFAULT_SAMPLE), "--encounter", "nope"])
    assert result.exit_code == 2 and "'nope' is not in the input" in result.stderr


def test_installed_console_script_runs(tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("provenote")
    completed = subprocess.run(
        [str(script), "evidence", "-o", str(tmp_path / "s.json")],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stderr
    assert "Medication reconciliation:" in completed.stdout
    assert (tmp_path / "s.json").stat().st_size > 0


def test_summarize_writes_a_transaction_bundle(tmp_path: Path) -> None:
    output = tmp_path / "draft.json"
    result = runner.invoke(app, ["summarize", "-o", str(output)])
    assert result.exit_code == 0, result.output
    bundle = json.loads(output.read_text())
    assert bundle["resourceType"] == "Bundle" and bundle["type"] == "transaction"
    kinds = [entry["resource"]["resourceType"] for entry in bundle["entry"]]
    assert kinds[:2] == ["Device", "Composition"] and set(kinds[2:]) == {"Provenance"}
    assert "sentences" in result.stderr and "flagged" in result.stderr


def test_summarize_markdown_shows_citations_and_flags() -> None:
    result = runner.invoke(app, ["summarize", "--format", "markdown"])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("# Discharge summary: AI DRAFT, needs physician review")
    assert "- CHANGED, TO CONFIRM: simvastatin 40 MG Oral Tablet (strength: 20 MG → 40 MG). [" in (
        result.stdout
    )
    assert "**⚠" in result.stdout
    assert "## Sources" in result.stdout
    needs_review = result.stdout.split("## Needs review", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in needs_review.splitlines() if line.startswith("- ")]
    assert lines
    for line in lines:  # one line per flag, its text once
        said = line.removeprefix("- ").removeprefix("**⚠** ")[:40]
        assert line.count(said) == 1, line


def test_summarize_bad_input_exits_2(tmp_path: Path) -> None:
    bundle = tmp_path / "bad.json"
    bundle.write_text("[]")
    result = runner.invoke(app, ["summarize", str(bundle), "-o", str(tmp_path / "out.json")])
    assert result.exit_code == 2
    assert not (tmp_path / "out.json").exists()


def test_focus_prints_kept_sentences_with_offsets_and_scores(tmp_path: Path) -> None:
    note = tmp_path / "note.txt"
    text = (
        "# Course\nAdmitted with chest pain. Troponin elevated. Stable overnight. Ate lunch.\n"
        "# Medications\n- aspirin 81 mg daily\n"
    )
    note.write_text(text)
    result = runner.invoke(app, ["focus", str(note), "--ratio", "0.4", "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["sentences"] == 5
    kept = payload["kept"]
    assert len(kept) == 2 and kept[-1]["text"] == "aspirin 81 mg daily" and kept[-1]["protected"]
    assert all(text[k["start"] : k["end"]] == k["text"] for k in kept)
    plain = runner.invoke(app, ["focus", str(note), "--ratio", "0.4"])
    assert plain.stdout.startswith("Kept 2 of 5 sentences")


def test_verify_exits_1_with_json_verdicts_when_a_sentence_is_unsupported(tmp_path: Path) -> None:
    source, summary = tmp_path / "source.txt", tmp_path / "summary.txt"
    source.write_text("The patient denies fever. Started aspirin 81 mg daily.")
    summary.write_text("The patient has fever. Started aspirin 81 mg daily.")
    result = runner.invoke(
        app, ["verify", "--source", str(source), "--summary", str(summary), "--json"]
    )
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert [s["verdict"] for s in report["sentences"]] == ["unsupported", "supported"]
    assert "fever" in report["sentences"][0]["spans"]
    assert set(report) == {"sentences", "numeric_precision", "hallucination_rate"}
    summary.write_text("Started aspirin 81 mg daily.")
    assert (
        runner.invoke(app, ["verify", "--source", str(source), "--summary", str(summary)]).exit_code
        == 0
    )
    missing = runner.invoke(
        app, ["verify", "--source", str(tmp_path / "no.txt"), "--summary", str(summary)]
    )
    assert missing.exit_code == 2


def test_verify_refuses_a_judge_model_that_is_no_model(tmp_path: Path) -> None:
    source, summary = tmp_path / "source.txt", tmp_path / "summary.txt"
    source.write_text("Started aspirin 81 mg daily.")
    summary.write_text("Started aspirin 81 mg daily.")
    base = ["verify", "--source", str(source), "--summary", str(summary), "--judge-model"]
    for spec, said in (("evidence-only", "name a model"), ("gpt", "expected evidence-only")):
        result = runner.invoke(app, [*base, spec])
        assert result.exit_code == 2 and said in result.stderr, result.stderr


def test_sandbox_command_prints_its_urls_serves_the_chart_and_stops_on_sigterm() -> None:
    import signal as signals

    import httpx

    script = Path(sys.executable).with_name("provenote")
    process = subprocess.Popen(
        [str(script), "sandbox"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        fhir_line = process.stdout.readline().strip()
        chart_line = process.stdout.readline().strip()
        assert fhir_line.startswith("FHIR base: http://127.0.0.1:")
        assert chart_line.startswith("Chart: http://127.0.0.1:")
        chart = httpx.get(chart_line.removeprefix("Chart: "), timeout=30)
        assert chart.status_code == 200 and "Launch Provenote" in chart.text
        metadata = httpx.get(fhir_line.removeprefix("FHIR base: ") + "/metadata", timeout=30)
        assert metadata.json()["resourceType"] == "CapabilityStatement"
        process.send_signal(signals.SIGTERM)
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()


@pytest.mark.parametrize("flow", [[], ["--discharge"]], ids=["launch", "discharge-card"])
def test_demo_launches_drafts_writes_back_and_prints_the_urls(
    tmp_path: Path, flow: list[str]
) -> None:
    """The plain launch, and the card flow: Start discharge drafts ahead, the card's link opens
    the draft waiting, which is then written to the chart."""
    script = Path(sys.executable).with_name("provenote")
    completed = subprocess.run(
        [str(script), "demo", "--data-dir", str(tmp_path), *flow],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    lines = completed.stdout.splitlines()
    assert lines[0] == "# Discharge summary: AI DRAFT, needs physician review"
    tail = lines[-5:]
    labels = [line.split(": ", 1)[0] for line in tail]
    assert labels == ["Chart", "App", "Draft", "FHIR API", "Composition"]
    assert tail[3].split("/fhir/Composition/")[1] == tail[2].split("/drafts/")[1]
    assert "/fhir/R4/Composition/" in tail[4]
    if flow:
        assert "card (info): Drafting the discharge summary" in completed.stderr
        assert "Discharge summary draft ready: " in completed.stderr
    else:
        assert "done" in completed.stderr and "writing_back" in completed.stderr


HEAVY = ("torch", "transformers", "litestar", "nltk")
# What an evidence-only draft may not load either: nltk (its import pulls scipy; the checker's
# Porter stems come from snowballstemmer), nor the model backends.
DRAFTING = ("torch", "transformers", "litestar", "xgrammar", "nltk", "scipy")


@pytest.mark.parametrize(
    ("arguments", "heavy"),
    [
        (["--help"], HEAVY),
        (["evidence", "-o", "{tmp}/state.json"], HEAVY),
        (["summarize", "{tmp}/stay.json", "-o", "{tmp}/draft.json"], DRAFTING),
    ],
)
def test_help_evidence_and_an_evidence_only_draft_start_without_the_heavy_libraries(
    tmp_path: Path, arguments: list[str], heavy: tuple[str, ...]
) -> None:
    """A fresh interpreter runs the command; none of the heavy libraries may have been loaded.
    The draft is of a stay without note text: FOCUS (torch and the encoder) loads only for a
    note it must score, and the model backends and the claim verifier never for evidence-only."""
    (tmp_path / "stay.json").write_text(
        json.dumps(fx.stay(fx.condition("c1", "Pneumonia"))), encoding="utf-8"
    )
    filled = [argument.replace("{tmp}", str(tmp_path)) for argument in arguments]
    script = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from launch.cli import app\n"
        f"result = CliRunner().invoke(app, {filled!r})\n"
        "assert result.exit_code == 0, result.output\n"
        f"print(' '.join(m for m in {heavy!r} if m in sys.modules))\n"
    )
    loaded = fresh_python(script).strip()
    assert loaded == ""


def test_help_loads_neither_the_fhir_models_nor_the_pipeline_nor_the_settings() -> None:
    """--help answers from the command modules alone: each command imports what it needs when
    it runs (bench/startup.py measures the cost against importing pydantic)."""
    script = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from launch.cli import app\n"
        "result = CliRunner().invoke(app, ['--help'])\n"
        "assert result.exit_code == 0 and 'summarize' in result.output, result.output\n"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith(('fhir', 'pipeline', "
        "'smartapp', 'rich')))))\n"
    )
    loaded = fresh_python(script).strip()
    assert loaded == ""
