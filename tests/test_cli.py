"""The ``provenote evidence`` command: output, overview, and exit code 2 on bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from launch.cli import DEFAULT_SAMPLE, app
from pipeline.evidence import EvidenceState
from tests import fhir_fixtures as fx

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
