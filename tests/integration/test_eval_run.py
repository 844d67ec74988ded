"""`kwrl eval` end to end: real CLI, real harbor trials in the local sandbox, real grader.

A generated dataset (`kwrl data synth`, 1 world, 2 tasks) is evaluated with harbor's nop agent
(fast, in the default run), the oracle (mean 1.0) and SmolLM2 through a `kwrl serve` subprocess
(slow). An eval killed (SIGKILL) after its first finished trial is rerun and finishes only the rest.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

KWRL = [sys.executable, "-m", "kwrl.cli"]
ENV = {**os.environ, "HARBOR_TELEMETRY": "0", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}


def kwrl(*args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [*KWRL, *args], capture_output=True, text=True, timeout=timeout, env=ENV, check=False
    )
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-2000:]
    return proc


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("eval-data") / "ds"
    kwrl(
        "data", "synth", "--out", str(out), "--worlds", "1", "--tasks_per_world", "2", "--seed", "0"
    )
    return out


@pytest.fixture(scope="module")
def nop_run(dataset: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("eval-nop") / "run"
    kwrl(
        "eval",
        str(dataset),
        "--model",
        "nop",
        "-c",
        "2",
        "--out",
        str(out),
        "--bootstrap.n_boot",
        "500",
    )
    return out


def eval_json(run: Path) -> dict[str, Any]:
    return json.loads((run / "eval.json").read_text())


def test_nop_eval_scores_zero_and_writes_every_output(nop_run: Path) -> None:
    data = eval_json(nop_run)
    m = data["metrics"]
    assert m["overall"]["n_tasks"] == 2 and m["overall"]["n_trials"] == 2
    assert m["overall"]["mean_score"]["value"] < 0.5
    assert m["overall"]["pass_at_1"]["value"] == 0.0
    assert m["trials"]["causes"] == {"none": 2}
    assert set(m["by_domain"]) <= {"Investment Banking", "Law", "Management Consulting"}
    assert all(t["criteria"] and not t["passed"] for t in data["trials"])
    assert len((nop_run / "trials.jsonl").read_text().splitlines()) == 2
    html = (nop_run / "report.html").read_text()
    assert html.count("<svg") == 8 and html.count('class="trial"') == 2


@pytest.mark.slow
def test_oracle_eval_scores_one_and_compares_against_nop(
    dataset: Path, nop_run: Path, tmp_path: Path
) -> None:
    out = tmp_path / "oracle"
    kwrl("eval", str(dataset), "--model", "oracle", "-c", "2", "--out", str(out))
    m = eval_json(out)["metrics"]["overall"]
    assert m["mean_score"]["value"] == 1.0 and m["pass_at_1"]["value"] == 1.0
    report = kwrl("report", str(out), "--compare", str(nop_run)).stdout
    assert "2 shared tasks" in report
    paired = json.loads((out / "compare.json").read_text())["paired"]
    assert paired["pass_at_1"]["value"] == 1.0 and paired["mean_score"]["value"] > 0.5


@pytest.mark.slow
def test_a_killed_eval_resumes_and_runs_only_the_rest(dataset: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    argv = [*KWRL, "eval", str(dataset), "--model", "nop", "-k", "2", "-c", "1", "--out", str(out)]
    proc = subprocess.Popen(
        argv, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    log = out / "trials.jsonl"
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and proc.poll() is None:
        if log.is_file() and log.read_text().count("\n") >= 1:
            break
        time.sleep(0.2)  # polling a subprocess, not waiting for a fixed time
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    first = [json.loads(line) for line in log.read_text().splitlines()]
    assert 1 <= len(first) < 4
    done = {(o["task"], o["sample"]) for o in first}
    ids = {
        (o["task"], o["sample"]): json.loads((out / o["trial_dir"] / "result.json").read_text())[
            "id"
        ]
        for o in first
    }

    kwrl("eval", str(dataset), "--model", "nop", "-k", "2", "-c", "1", "--out", str(out))
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    keys = [(o["task"], o["sample"]) for o in lines]
    assert len(keys) == len(set(keys)) == 4  # every sample once: nothing finished ran again
    assert {k for k in keys[: len(first)]} == done
    for o in lines[: len(first)]:
        rid = json.loads((out / o["trial_dir"] / "result.json").read_text())["id"]
        assert rid == ids[(o["task"], o["sample"])]
    assert eval_json(out)["metrics"]["overall"]["n_trials"] == 4
    trial_dirs = sorted(p.name for p in (out / "trials").iterdir())
    assert len(trial_dirs) == 4, trial_dirs


@pytest.mark.slow
def test_smollm2_eval_through_kwrl_serve(dataset: Path, tmp_path: Path) -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    from agent_helpers import policy_server

    out = tmp_path / "smol"
    task = sorted((dataset / "tasks").iterdir())[0]
    with policy_server() as base_url:
        kwrl(
            "eval", str(task), "--model", f"{base_url}#smollm2-135m", "--out", str(out),
            "--agent.max_steps", "2", "--agent.max_tokens_per_turn", "24", "--agent.tools", "filesystem_list_files",
            "--agent.context_window", "4096", "--agent.temperature", "0.0", "--retries", "0",
        )  # fmt: skip
    data = eval_json(out)
    (trial,) = data["trials"]
    assert trial["cause"] in ("none", "max_tokens", "context_overflow"), trial["error"]
    assert trial["turns"] >= 1 and trial["output_tokens"] > 0 and trial["input_tokens"] > 0
    assert data["metrics"]["trials"]["turns"]["n"] == 1
    html = (out / "report.html").read_text()
    assert "AGENT" in html.upper() and 'class="step agent"' in html


def test_a_sample_seed_gives_two_evaluations_the_same_draws(dataset: Path, tmp_path: Path) -> None:
    """--sample-seed: trial (task, k) samples the same tokens in two runs (common random numbers
    for paired comparisons), and the k samples of a task draw from different seeds."""
    task = sorted((dataset / "tasks").iterdir())[0]

    def answers(out: Path) -> list[str]:
        kwrl(
            "eval", str(task), "--model", "engine:smollm2-135m", "-k", "2", "--out", str(out),
            "--agent.max_steps", "1", "--agent.max_tokens_per_turn", "24", "--agent.tools", "filesystem_list_files",
            "--agent.context_window", "4096", "--agent.temperature", "1.0", "--retries", "0",
            "--sample_seed", "7",
        )  # fmt: skip
        trials = sorted((out / "trials").iterdir())
        return [(t / "agent" / "final_answer.txt").read_text() for t in trials]

    first, second = answers(tmp_path / "a"), answers(tmp_path / "b")
    assert first == second and len(first) == 2
    assert first[0] != first[1]
    toml = (tmp_path / "a" / "eval.toml").read_text()
    assert "sample_seed = 7" in toml
