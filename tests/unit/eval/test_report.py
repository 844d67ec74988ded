"""The HTML report and the run comparison, rendered from run dirs built of real trial files."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from eval_testkit import make_run

from kwrl.eval.report import write_compare, write_report


def test_report_has_plots_tables_and_a_viewer_per_trial(tmp_path: Path, task_dir: Path) -> None:
    run = make_run(tmp_path / "run", task_dir, "http://127.0.0.1:1/v1#m", [1.0, 1 / 3, None])
    html = write_report(run).read_text()
    assert html.count("<svg") == 8
    assert len(re.findall(r'<details class="trial"', html)) == 3
    assert 'id="mean-score">44.4%<' in html  # (1 + 1/3 + 0) / 3
    assert 'id="pass-at-1">33.3%<' in html
    # the viewer: turns, tool calls with their outcome, results, verdicts with rationales
    assert "filesystem_list_files [tool_error]" in html and "finance.xlsx" in html
    assert "the answer never states &lt;b&gt;10.32&lt;/b&gt;" in html
    assert "AgentTimeoutError: ran past 60 s" in html
    assert "<script>" not in html and "&lt;script&gt;alert(1)" in html
    assert not re.search(r"<script|<link|(src|href)=\"?(https?:)?//", html)  # nothing fetched
    data = json.loads((run / "eval.json").read_text())
    assert data["metrics"]["trials"]["tool_success_rate"] == pytest.approx(2 / 3)
    assert data["metrics"]["trials"]["causes"] == {"none": 2, "agent_timeout": 1}


def test_compare_pairs_shared_tasks(tmp_path: Path, task_dir: Path) -> None:
    a = make_run(tmp_path / "a", task_dir, "oracle", [1.0, 1.0])
    b = make_run(tmp_path / "b", task_dir, "nop", [0.0, 1 / 3])
    path, data = write_compare(a, b)
    assert path.name == "compare.html" and (a / "compare.json").is_file()
    p = data["paired"]
    assert p["n_shared_tasks"] == 1
    assert p["mean_score"]["value"] == pytest.approx(1 - 1 / 6)
    assert p["pass_at_1"]["value"] == pytest.approx(1.0)
    html = path.read_text()
    assert f"<h1>oracle (local, {a}) &minus; nop (local, {b})</h1>" in html and "<svg" in html
    assert data["run"]["environment"] == data["other"]["environment"] == "local"


def test_a_compare_title_says_which_run_ran_where(tmp_path: Path, task_dir: Path) -> None:
    """A docker run against a local run of the same agent was titled `oracle - oracle`."""
    from kwrl.config import load_config, save_config
    from kwrl.eval.run import EvalConfig

    docker = make_run(tmp_path / "docker", task_dir, "oracle", [1.0])
    cfg = load_config(EvalConfig, docker / "eval.toml")
    cfg.sandbox.environment = "docker"
    save_config(cfg, docker / "eval.toml")
    local = make_run(tmp_path / "local", task_dir, "oracle", [1.0])
    path, data = write_compare(docker, local)
    assert data["run"]["label"] == f"oracle (docker, {docker})"
    assert f"<title>kwrl compare: oracle (docker, {docker}) vs oracle (local, {local})" in (
        path.read_text()
    )


def _plot_svg(page: str, name: str) -> str:
    found = re.search(rf'<div class="plot" id="plot-{name}">(.*?)</div>', page, re.S)
    assert found is not None, name
    return found.group(1)


def test_ungraded_trials_are_left_out_of_the_score_plots() -> None:
    """The histogram drew a trial that failed on infrastructure as a score of 0.0; the policy's own
    failures without a reward are its 0s and stay."""
    from kwrl.eval.metrics import TrialOutcome
    from kwrl.eval.report import plot_scores

    graded = TrialOutcome(task="t", sample=0, reward=1.0)
    own = TrialOutcome(task="t", sample=1, cause="resource_limit")
    infra = TrialOutcome(task="t", sample=2, cause="sandbox")
    assert "score distribution (1 ungraded left out)" in plot_scores([graded, own, infra])
    ungraded = [TrialOutcome(task="t", sample=s, cause="sandbox") for s in range(3)]
    assert "no graded trials" in plot_scores(ungraded)


def test_no_failure_cause_bar_when_nothing_failed(tmp_path: Path, task_dir: Path) -> None:
    run = make_run(tmp_path / "run", task_dir, "oracle", [1.0, 1.0])
    svg = _plot_svg(write_report(run).read_text(), "causes")
    assert "no trial failed" in svg and ">none<" not in svg and "none</text>" not in svg


def test_kwrl_agent_runs_are_labelled_by_the_agent_that_ran(tmp_path: Path, task_dir: Path) -> None:
    """A run of kwrl's agent whose trials recorded no turns was labelled `(harbor agent)`."""
    from kwrl.eval.report import agent_label, plot_reward_vs
    from kwrl.eval.run import EvalConfig

    cfg = EvalConfig(dataset=tmp_path, model="engine:smollm2-135m")
    assert agent_label(cfg) == "kwrl's agent, model engine:smollm2-135m"
    assert agent_label(EvalConfig(dataset=tmp_path, model="oracle")) == "harbor's oracle agent"
    svg = plot_reward_vs([], "turns", agent_label(cfg))
    assert "no turns recorded (kwrl's agent, model engine:smollm2-135m)" in svg
    assert "harbor" not in svg


def test_tool_names_are_plain_text_and_unknown_ones_one_bar(tmp_path: Path, task_dir: Path) -> None:
    from eval_testkit import TASK, agent_run, make_trial

    from kwrl.agent.loop import ToolStat
    from kwrl.eval.run import append_outcome, outcome_from_record, record_from_dir, task_labels

    run = make_run(tmp_path / "run", task_dir, "http://127.0.0.1:1/v1#m", [1.0])
    agent = agent_run("The margin is 10.32%.", tool="$\\frac{$")  # once: kwrl eval exited 1
    calls = agent.turns[0].tool_calls
    calls += [ToolStat(f"tool_{i:02d}", True, "ok", 0.1) for i in range(40)]
    calls += [ToolStat(f"made_up_{i}", False, "unknown_tool", 0.1) for i in range(50)]
    d = make_trial(run / "trials", f"{TASK}__s1", reward=0.0, passed=[False] * 3, run=agent)
    rec = record_from_dir(d, TASK, 1, 0)
    assert rec is not None
    append_outcome(run, outcome_from_record(rec, task_labels(task_dir), run))

    page = write_report(run).read_text()
    assert page.count("<svg") == 8 and "plot failed" not in page
    tools = re.search(r'<div class="plot" id="plot-tools">(.*?)</div>', page, re.S)
    assert tools is not None
    svg = tools.group(1)
    # filesystem_list_files, the $\frac{$ tool and 40 more: 30 bars by name, 12 in one
    assert "$\\frac{$" in svg and "(unknown tools)" in svg and "(12 other tools)" in svg
    mix = json.loads((run / "eval.json").read_text())["metrics"]["trials"]["tool_mix"]
    assert mix["(unknown tools)"] == {"calls": 50, "ok": 0}
    assert not any(n.startswith("made_up") for n in mix)


def test_a_plot_that_fails_is_a_line_in_the_report_not_its_end() -> None:
    from matplotlib.mathtext import MathTextParser

    from kwrl.eval.report import _plot

    line = _plot("tools", lambda: str(MathTextParser("path").parse("$\\frac{$")))
    assert line.startswith('<p class="plot-error">the tools plot failed: ValueError:')
