"""`kwrl.sandbox.regrade`: what `kwrl grade`'s sandbox lets the regrade see and reach."""

from __future__ import annotations

from pathlib import Path

from kwrl.sandbox.network.relay import SANDBOX_SOCKET
from kwrl.sandbox.regrade import passed_env, regrade_argv


def _pairs(argv: list[str], flag: str, n: int = 2) -> list[tuple[str, ...]]:
    return [tuple(argv[i + 1 : i + 1 + n]) for i, a in enumerate(argv) if a == flag]


def test_only_the_judges_and_graders_settings_reach_the_regrade() -> None:
    env = {
        "KWRL_JUDGE": "http://127.0.0.1:9/v1", "KWRL_GRADER_MAX_FILES": "9",
        "OPENAI_API_KEY": "k", "TERM": "xterm", "AWS_SECRET_ACCESS_KEY": "s",
        "SSH_AUTH_SOCK": "/run/a", "HOME": "/root", "PYTHONPATH": "/evil", "KWRL_GRADE_SANDBOX": "on",
    }  # fmt: skip
    assert set(passed_env(env)) == {"KWRL_JUDGE", "KWRL_GRADER_MAX_FILES", "OPENAI_API_KEY", "TERM"}


def test_the_regrade_runs_without_network_and_writes_only_where_asked(tmp_path: Path) -> None:
    trial, task, out = tmp_path / "trial", tmp_path / "task", tmp_path / "out"
    argv = regrade_argv(
        ["TRIAL"], ro=[trial, task], rw=[out], run_dir=tmp_path / "run",
        env={"KWRL_JUDGE": "j"}, egress=False,
    )  # fmt: skip
    assert "--unshare-net" in argv and "--clearenv" in argv and "--die-with-parent" in argv
    assert _pairs(argv, "--bind") == [(str(out), str(out))]  # the one writable path
    assert (str(trial), str(trial)) in _pairs(argv, "--ro-bind")
    assert (str(task), str(task)) in _pairs(argv, "--ro-bind")
    env = {k: v for k, v in _pairs(argv, "--setenv")}
    assert env["KWRL_JUDGE"] == "j" and "HOME" in env and "PYTHONPATH" not in env
    inner = argv[argv.index("--") + 1 :]
    assert inner[1:] == ["-I", "-m", "kwrl.cli", "grade", "TRIAL", "--in-sandbox"]

    judged = regrade_argv(["TRIAL"], ro=[], rw=[], run_dir=tmp_path / "run", env={}, egress=True)
    inner = judged[judged.index("--") + 1 :]
    assert inner[1:5] == ["-I", "-m", "kwrl.sandbox.network.relay", "--port"]
    assert SANDBOX_SOCKET in inner and inner[-1] == "--in-sandbox"
