"""`kwrl data synth` through the real CLI, in both layouts; the data layer accepts what it writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kwrl.cli import app
from kwrl.errors import TaskFormatError
from kwrl.synth.generate import SynthConfig
from kwrl.synth.tasks import Task
from kwrl.tasks.apex import convert_apex, load_apex
from kwrl.tasks.models import ContainsCheck, Verifier
from kwrl.tasks.stats import dataset_stats
from kwrl.tasks.validate import validate_dataset

runner = CliRunner()


def synth(out: Path, *extra: str) -> None:
    args = [
        "data",
        "synth",
        "--out",
        str(out),
        "--worlds",
        "2",
        "--tasks_per_world",
        "3",
        "--seed",
        "4",
        *extra,
    ]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    assert "wrote 2 worlds" in res.output
    if "apex-hf" not in extra:  # the format carries no machine checks to run
        assert "no-op control: all" in res.output


def test_task_dirs_layout_validates_and_has_stats(tmp_path: Path) -> None:
    out = tmp_path / "ds"
    synth(out, "--domains", "Law", "--domains", "Management Consulting")
    report = validate_dataset(out)
    assert report.ok, report.problems
    s = dataset_stats(out)
    assert s.tasks == 6
    assert set(s.domains) == {"Law", "Management Consulting"}
    assert sum(s.difficulty.values()) == 6
    task = next((out / "tasks").iterdir())
    assert (task / "solution" / "solve.sh").stat().st_mode & 0o100
    calls = json.loads((task / "solution" / "gold_calls.json").read_text())
    assert calls and all("_" in c["tool"] for c in calls)
    res = runner.invoke(app, ["data", "stats", str(out)])
    assert res.exit_code == 0 and "difficulty" in res.output


def test_apex_hf_layout_loads_converts_and_validates(tmp_path: Path) -> None:
    out = tmp_path / "hf"
    synth(out, "--layout", "apex-hf", "--domains", "Investment Banking")
    src = load_apex(out)
    assert len(src.tasks) == 6 and len(src.worlds) == 2
    conv = tmp_path / "conv"
    convert_apex(out, conv)
    report = validate_dataset(conv)
    assert report.ok, report.problems


def test_bad_domain_is_a_clear_error(tmp_path: Path) -> None:
    res = runner.invoke(app, ["data", "synth", "--out", str(tmp_path / "x"), "--domains", "Tax"])
    assert res.exit_code != 0
    assert "unknown domain" in str(res.exception) + res.output


def test_a_family_whose_criterion_passes_when_nothing_is_done_stops_synth(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A family bug (a criterion the empty answer satisfies) fails generation loudly, naming the
    task and the criterion, and leaves the dataset to inspect."""
    verifiers = Task.verifiers

    def lenient(self: Task, world_id: str) -> list[Verifier]:
        vs = verifiers(self, world_id)
        check = ContainsCheck(none_of=["TBD"])
        vs[0].verifier_values = vs[0].verifier_values.model_copy(
            update={"kwrl_check": check, "expected_file_type": None}
        )
        return vs

    monkeypatch.setattr(Task, "verifiers", lenient)
    out = tmp_path / "ds"
    args = ["data", "synth", "--out", str(out), "--worlds", "1", "--tasks_per_world", "2",
            "--workers", "1"]  # fmt: skip
    res = runner.invoke(app, args)
    assert isinstance(res.exception, TaskFormatError), res.output
    first = sorted(p.name for p in (out / "tasks").iterdir())[0]
    assert res.exception.path == str(out / "tasks" / first / "tests" / "verifiers.json")
    assert res.exception.field == "0.verifier_values"
    assert "2 criteria fail the no-op control" in res.exception.message
    assert runner.invoke(app, [*args, "--overwrite", "--no-control"]).exit_code == 0


def test_synth_s_flags_are_its_config_s_fields_with_their_docstrings_and_defaults() -> None:
    res = runner.invoke(app, ["data", "synth", "--help"], env={"COLUMNS": "250"})
    assert res.exit_code == 0, res.output
    for name, field in SynthConfig.model_fields.items():
        flag = f"--{name}/--no-{name}" if field.annotation is bool else f"--{name}"
        row = next(line for line in res.output.splitlines() if flag.split("/")[0] + " " in line)
        assert (field.description or "").split("\n")[0][:40] in row, name
    assert "[default: (10)]" in res.output and "--no-control" in res.output


def test_domains_repeat_or_join_with_commas() -> None:
    joined = SynthConfig.model_validate({"out": "x", "domains": "Law, Management Consulting"})
    assert joined.domains == ["Law", "Management Consulting"]
    both = SynthConfig.model_validate({"out": "x", "domains": ["Law", "Investment Banking,Law"]})
    assert both.domains == ["Law", "Investment Banking", "Law"]
