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
    assert "oracle &minus; nop" in html and "<svg" in html
