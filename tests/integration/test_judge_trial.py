"""Judge-graded APEX tasks through real trials: `kwrl data convert --from apex-hf`, then
`kwrl trial run --judge` and `kwrl eval --judge` in the local sandbox, graded by a real
OpenAI-compatible server on loopback (the one faked seam: `FakeJudge`, tests/conftest.py's `judge`).

What must hold: the judge, its settings and its key reach the grader in the verifier phase (and
nothing of them the agent phase); every per-criterion verdict in grades.json is the server's; a
server that fails (HTTP 500s, no answer even with the agent's output withheld) makes the trial an
error with no reward.json, never a 0; a server that answers, but never with a verdict, fails the
criterion (the trial is graded: what derails a judge is in the agent's output), and so does an
answer too long for a slow judge (graded 0 and trained, never masked); an eval calls the judge
once per judged criterion.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from fake_judge import FakeJudge
from kwrl.grading.judges import judge_env
from kwrl.rollout.failures import FailureCause
from kwrl.rollout.masking import trial_decision
from kwrl.rollout.runner import RolloutConfig, TrialRecord, run_trial
from kwrl.sandbox.base import base_env

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("bwrap") is None, reason="needs root and bubblewrap"
)

KWRL = [sys.executable, "-m", "kwrl.cli"]
WORLD = "world_" + "5" * 32
ANSWER_TASK = "task_" + "6" * 32
DECK_TASK = "task_" + "7" * 32
GOLD = "Q3 revenue was $283.0m."
KEY_VAR, KEY = "KWRL_TEST_JUDGE_KEY", "sk-judge-test-0123"
NO_GW = ["--sandbox.gateway", "false"]


def host_env(**extra: str) -> dict[str, str]:
    """This process's env without judge settings or provider keys, plus `extra`."""
    drop = ("KWRL_JUDGE", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    return {**env, "COLUMNS": "300", **extra}


def kwrl(*args: str | Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*KWRL, *map(str, args)], env=env, capture_output=True, text=True,
                          timeout=600, check=False)  # fmt: skip


def make_apex(root: Path) -> Path:
    """An APEX HF layout: one world, a console-answer task (2 criteria), a deck task (1)."""
    (root / "world_files_zipped").mkdir(parents=True)
    with zipfile.ZipFile(root / "world_files_zipped" / f"{WORLD}.zip", "w") as zf:
        zf.writestr("filesystem/reports/q3.txt", "Q3 revenue: $283.0m\nQ3 costs: $190.4m\n")
        zf.writestr(".apps_data/chat/state.json", '{"channels": [{"name": "finance"}]}')
    worlds = [{"world_id": WORLD, "world_name": "World 7", "domain": "Investment Banking",
               "world_description": "A small bank."}]  # fmt: skip
    tasks = [
        {"task_id": ANSWER_TASK, "task_name": "Q3 revenue", "domain": "Investment Banking",
         "world_id": WORLD, "prompt": "What was Q3 revenue? See reports/q3.txt.",
         "rubric": [{"verifier_id": "ver_rev", "criteria": "States 'Q3 revenue was $283.0m'"},
                    {"verifier_id": "ver_cfo", "criteria": "Names the 'CFO' who signed off"}],
         "expected_output": "message_in_console", "gold_response": GOLD, "gold_response_type": "text"},
        {"task_id": DECK_TASK, "task_name": "Q3 deck", "domain": "Investment Banking",
         "world_id": WORLD, "prompt": "Make a one-slide deck of Q3 revenue.",
         "rubric": [{"verifier_id": "ver_deck", "criteria": "The deck shows '$283.0m'"}],
         "expected_output": "make_new_slide_deck"},
    ]  # fmt: skip
    (root / "tasks_and_rubrics.json").write_text(json.dumps(tasks))
    (root / "world_descriptions.json").write_text(json.dumps(worlds))
    return root


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("judged")
    ds = root / "ds"
    r = kwrl("data", "convert", "--from", "apex-hf", make_apex(root / "apex"), "--out", ds,
             "--quiet", env=host_env())  # fmt: skip
    assert r.returncode == 0, r.stderr
    return ds


def answer_task(ds: Path) -> Path:
    [task] = [t for t in (ds / "tasks").iterdir() if t.name.endswith(ANSWER_TASK[-8:])]
    return task


def write_solve(task: Path, script: str) -> None:
    """The oracle's solve.sh of `task`: `script` under a bash shebang."""
    solve = task / "solution" / "solve.sh"
    solve.parent.mkdir(exist_ok=True)
    solve.write_text("#!/usr/bin/env bash\n" + script)
    solve.chmod(0o755)


def test_a_judged_apex_task_is_graded_by_the_judge_through_a_real_trial(
    dataset: Path, judge: FakeJudge, tmp_path: Path
) -> None:
    task = answer_task(dataset)
    tests = json.loads((task / "tests" / "verifiers.json").read_text())
    assert [v["verifier_values"].get("kwrl_check") for v in tests] == [None, None]  # judge-only
    # an oracle that answers and counts the judge's variables it can see (harbor scrubs secret
    # values from trial files, so it reports a count, not the values)
    write_solve(
        task,
        f"env | grep -c -e '^KWRL_JUDGE' -e '^{KEY_VAR}=' -e '{KEY}' > /logs/agent/judge_vars.txt\n"
        'echo "$PATH" > /logs/agent/path.txt\n'
        f"echo '{GOLD}' > /logs/agent/final_answer.txt\n",
    )
    env = host_env(KWRL_JUDGE_API_KEY_ENV=KEY_VAR, KWRL_JUDGE_MAX_RETRIES="1", **{KEY_VAR: KEY})
    r = kwrl("trial", "run", task, "--model", "oracle", "--judge", f"{judge.url}#m",
             "--out", tmp_path, *NO_GW, env=env)  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    [trial] = tmp_path.iterdir()
    assert "reward 0.5" in r.stdout, r.stdout[-3000:]

    # every verdict is the server's: one request per criterion, each with the judge's key
    assert len(judge.requests) == 2
    assert {q["auth"] for q in judge.requests} == {f"Bearer {KEY}"}
    assert {q["body"]["model"] for q in judge.requests} == {"m"}
    assert all(GOLD in p for p in judge.user_prompts())
    grades = {
        g["verifier_id"]: g
        for g in json.loads((trial / "verifier/grades.json").read_text())["grades"]
    }
    assert {k: (g["method"], g["score"], g["rationale"]) for k, g in grades.items()} == {
        "ver_rev": ("judge", 1.0, "scripted: met"),
        "ver_cfo": ("judge", 0.0, "scripted: not met"),
    }
    assert {g["judge_model"] for g in grades.values()} == {f"{judge.url}#m"}
    assert json.loads((trial / "verifier/reward.json").read_text()) == {"reward": 0.5}

    # nothing of the judge reached the agent phase
    assert (trial / "agent/judge_vars.txt").read_text().strip() == "0"
    assert (trial / "agent/path.txt").read_text().strip() == base_env(None)["PATH"]

    # `kwrl grade` regrades in its sandbox (no network of its own): the judge, with its key, is
    # reached through the egress proxy and gives the same verdicts
    r = kwrl("grade", trial, "--judge", f"{judge.url}#m", env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "reward 0.500" in r.stdout and "judge calls 2" in r.stdout, r.stdout[-3000:]
    assert len(judge.requests) == 4
    assert {q["auth"] for q in judge.requests} == {f"Bearer {KEY}"}


async def test_a_failing_judge_makes_the_trial_an_error_without_reward(
    dataset: Path, tmp_path: Path
) -> None:
    faults: dict[str, int | str] = {"http500": 500, "malformed": "malformed", "timeout": "hang",
                                    "derailed": "malformed"}  # fmt: skip
    judges = {name: FakeJudge() for name in faults}
    try:
        for name, fault in faults.items():
            # "derailed": malformed on the two criteria's attempts, then verdicts (the probes')
            judges[name].faults.extend([fault] * (4 if name == "derailed" else 10))

        async def one(name: str) -> TrialRecord:
            settings = {"KWRL_JUDGE_MAX_RETRIES": "1", "KWRL_JUDGE_BACKOFF_S": "0",
                        "KWRL_JUDGE_TIMEOUT_S": "1"}  # fmt: skip
            cfg = RolloutConfig(agent="nop", environment_kwargs={"gateway": False}, retries=0,
                                verifier_env=judge_env(judges[name].spec, settings))  # fmt: skip
            return await run_trial(answer_task(dataset), cfg, tmp_path, name)

        records = dict(zip(faults, await asyncio.gather(*(one(n) for n in faults)), strict=True))
    finally:
        for j in judges.values():
            j.close()
    # the judge did not answer, or never with a verdict, even without the agent's output:
    # infrastructure, no reward (a judge malformed on every prompt failed every criterion before)
    for name in ("http500", "timeout", "malformed"):
        rec, trial = records[name], Path(records[name].trial_dir)
        assert rec.cause is FailureCause.VERIFIER, (name, rec)
        assert rec.reward is None and not (trial / "verifier/reward.json").exists(), name
        error = json.loads((trial / "verifier/grades.json").read_text())["error"]
        said = {
            "http500": ("after 2 attempts", "HTTP 500"),
            "timeout": ("on any of 2 attempts (timeout)", "even with the agent's output withheld"),
            "malformed": ("no valid verdict", "even with the agent's output withheld"),
        }
        assert error.startswith("JudgeError:") and all(x in error for x in said[name]), error
        # each criterion retried once at most (a timeout or no verdict then probed without the
        # agent's output); the first to give up cancels the other's attempts
        most = {"http500": 4, "timeout": 6, "malformed": 8}[name]
        assert 2 <= len(judges[name].requests) <= most, name
    # it answered the agent's output never with a verdict, and without it with one: the agent's
    # output derailed it, both criteria fail, the trial is graded (trains with 0)
    rec = records["derailed"]
    assert rec.cause is FailureCause.NONE and rec.reward == 0.0, rec
    grades = json.loads((Path(rec.trial_dir) / "verifier/grades.json").read_text())
    assert "error" not in grades and [g["score"] for g in grades["grades"]] == [0.0, 0.0]
    assert all("no valid verdict" in g["rationale"] for g in grades["grades"])


def test_eval_calls_the_judge_once_per_judged_criterion(
    dataset: Path, judge: FakeJudge, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    r = kwrl("eval", dataset, "--model", "nop", "--judge", judge.spec, "-c", "2", "--out", out,
             "--bootstrap.n_boot", "100", *NO_GW, env=host_env())  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    # the answer task's 2 criteria go to the judge; the deck task auto-fails without a deck
    assert len(judge.requests) == 2
    trials = sorted((out / "trials").iterdir())
    assert len(trials) == 2
    for trial in trials:
        reward = json.loads((trial / "verifier/reward.json").read_text())
        assert reward["reward"] == 0.0
    methods = sorted(
        g["method"]
        for t in trials
        for g in json.loads((t / "verifier/grades.json").read_text())["grades"]
    )
    assert methods == ["auto_fail", "judge", "judge"]
    causes = json.loads((out / "eval.json").read_text())["metrics"]["trials"]["causes"]
    assert causes == {"none": 2}


async def test_an_answer_too_long_for_a_slow_judge_is_graded_zero_and_trained(
    dataset: Path, judge: FakeJudge, tmp_path: Path
) -> None:
    # the judge hangs on long prompts and is said to read far faster than it does: a 300 KB
    # answer times out on every attempt, the probe without it is answered in time
    judge.slow_chars = 50_000
    ds = tmp_path / "ds"
    shutil.copytree(dataset, ds)
    task = answer_task(ds)
    write_solve(
        task,
        f"{{ echo '{GOLD}'; yes 'Let me restate the figures once more.' | head -c 300000; }}"
        " > /logs/agent/final_answer.txt\n",
    )
    settings = {"KWRL_JUDGE_MAX_RETRIES": "1", "KWRL_JUDGE_BACKOFF_S": "0",
                "KWRL_JUDGE_TIMEOUT_S": "1", "KWRL_JUDGE_READ_CHARS_PER_S": "10000000"}  # fmt: skip
    cfg = RolloutConfig(agent="oracle", environment_kwargs={"gateway": False}, retries=0,
                        verifier_env=judge_env(judge.spec, settings))  # fmt: skip
    rec = await run_trial(task, cfg, tmp_path / "trials", "slow")
    assert rec.cause is FailureCause.NONE and rec.reward == 0.0, rec
    assert trial_decision(rec.cause, rec.reward).trained
    grades = json.loads((Path(rec.trial_dir) / "verifier/grades.json").read_text())
    assert "error" not in grades and [g["score"] for g in grades["grades"]] == [0.0, 0.0]
    assert all("timed out on the agent's output" in g["rationale"] for g in grades["grades"])
    # per criterion: two attempts on the answer, then the probe without it
    assert sorted(len(p) > 50_000 for p in judge.user_prompts()) == [False] * 2 + [True] * 4
