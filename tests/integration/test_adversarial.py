"""Hostile agents against real trials: a wrong answer never reaches reward 0.5, no host secret leaks.

Each attack of issue 23 is a task whose `solution/solve.sh` attacks (`kwrl.sandbox.conformance.testing.ATTACKS`),
run as a real harbor trial (oracle agent, local sandbox with the world gateway, the real grader)
while the host process holds a fake API key. Attacks that cannot interfere share one trial. The
sandbox-level attacks on the gateway's socket, the zygote, output and disk run against a started
`LocalEnvironment`; `kwrl trial run` and `kwrl data validate` run through the CLI.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kwrl.rollout.failures import FailureCause
from kwrl.rollout.runner import RolloutConfig, TrialRecord, run_rollout
from kwrl.sandbox.base import SandboxLimitError, base_env
from kwrl.sandbox.conformance.testing import (
    linked_workbook,
    loopback_listener,
    make_environment,
    make_task,
    make_world,
)
from kwrl.sandbox.gateway import zygote
from kwrl.sandbox.outputs import OUTPUT_CAP
from kwrl.tasks.taskdir import TEST_SH_TEXT
from kwrl.tasks.validate import validate_task

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("bwrap") is None, reason="needs root and bubblewrap"
)

SECRET = f"sk-kwrltest-{secrets.token_hex(12)}"
# test.sh as kwrl wrote it before the grader ran isolated, made worse: cwd in the agent's world.
OLD_TEST_SH = TEST_SH_TEXT.replace("cd /\n", "cd /filesystem\n").replace(" -I -m", " -m")


def _files(top: Path) -> Iterator[Path]:
    for dirpath, _, names in os.walk(top):
        for n in names:
            p = Path(dirpath) / n
            if p.is_file() and not p.is_symlink():
                yield p


def _assert_no_secret(top: Path) -> None:
    leaked = [str(p) for p in _files(top) if SECRET.encode() in p.read_bytes()]
    assert leaked == [], f"host secret in {leaked}"


@pytest.fixture(scope="module")
def host_secret() -> Iterator[str]:
    """A fake API key in this process's environment; the zygote restarts so it could inherit it."""
    saved = {k: os.environ.get(k) for k in ("OPENAI_API_KEY", "KWRL_TEST_SECRET")}
    os.environ["OPENAI_API_KEY"] = os.environ["KWRL_TEST_SECRET"] = SECRET
    zygote._ZYGOTE.close()
    try:
        yield SECRET
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture(scope="module")
def trials(
    tmp_path_factory: pytest.TempPathFactory, host_secret: str
) -> tuple[dict[str, TrialRecord], Path]:
    """One real trial per attack batch, three at a time."""
    root = tmp_path_factory.mktemp("adv")
    world = make_world(root).name
    tasks = [
        make_task(root, "hijack", world_id=world, solution="hijack", grader="kwrl"),
        make_task(root, "hijack-old", world_id=world, solution="hijack", grader="kwrl"),
        make_task(root, "daemons", world_id=world, solution="daemons", grader="kwrl"),
        make_task(root, "gold-link", world_id=world, solution="gold_link", grader="kwrl"),
        make_task(root, "disk", world_id=world, solution="disk", grader="kwrl", storage_mb=64),
        make_task(root, "kill-all", world_id=world, solution="kill_all", grader="kwrl"),
        make_task(root, "host-write", world_id=world, grader="kwrl", solve=_host_write(root)),
    ]
    (tasks[1] / "tests" / "test.sh").write_text(OLD_TEST_SH)
    out = root / "out"
    cfg = RolloutConfig(agent="oracle", concurrency=3, retries=0)
    records = asyncio.run(run_rollout(tasks, cfg, out)).records
    return {r.task: r for r in records}, out


def _host_write(root: Path) -> str:
    """solve.sh that links the names harbor writes on the host (exit-code.txt when solve.sh fails)
    to a host file, hoping harbor's write follows the link."""
    canary = root / "canary.txt"
    canary.write_text("host file")
    links = " ".join(f"ln -sf {canary} /logs/agent/{n};" for n in ("exit-code.txt", "oracle.txt"))
    return f"#!/usr/bin/env bash\n{links}\nexit 7\n"


def test_no_host_write_follows_a_link_planted_in_the_agent_dir(
    trials: tuple[dict[str, TrialRecord], Path],
) -> None:
    rec = trials[0]["host-write"]
    trial = Path(rec.trial_dir)
    assert (trial.parents[2] / "canary.txt").read_text() == "host file"
    assert (trial / "agent" / "exit-code.txt").read_text() == "7"
    assert not [p for p in (trial / "agent").rglob("*") if p.is_symlink()]
    assert rec.reward is None or rec.reward < 0.5


@pytest.mark.parametrize("task", ["hijack", "hijack-old"])
def test_a_planted_grader_reward_or_tests_dir_cannot_raise_the_reward(
    trials: tuple[dict[str, TrialRecord], Path], task: str
) -> None:
    """Attacks 1 and 2: the real grader ran from a safe cwd, isolated, into an emptied dir."""
    rec = trials[0][task]
    assert rec.cause is FailureCause.NONE, rec.error
    assert rec.reward == 0.0
    verifier = Path(rec.trial_dir) / "verifier"
    assert (verifier / "grades.json").is_file() and not (verifier / "reward.txt").exists()
    grades = json.loads((verifier / "grades.json").read_text())["grades"]
    assert [g["score"] for g in grades] == [0, 0]


def test_an_outdated_test_sh_is_flagged_by_data_validate(
    trials: tuple[dict[str, TrialRecord], Path],
) -> None:
    task_dir = Path(trials[0]["hijack-old"].trial_dir).parents[2] / "tasks" / "hijack-old"
    problems, _ = validate_task(task_dir)
    assert any(p.file.endswith("tests/test.sh") and "outdated" in p.message for p in problems)
    problems, _ = validate_task(task_dir.parent / "hijack")
    assert not any("test.sh" in p.file for p in problems)


def test_daemons_die_before_grading_and_the_gateway_leaks_nothing(
    trials: tuple[dict[str, TrialRecord], Path],
) -> None:
    """Attacks 3, 5, 6 in one trial: daemons (plain and via code execution), /proc reads, socket."""
    rec = trials[0]["daemons"]
    assert rec.cause is FailureCause.NONE, rec.error
    assert rec.reward == 0.0
    trial = Path(rec.trial_dir)
    agent = trial / "agent"
    assert '"success":true' in (agent / "code-exec.txt").read_text()
    graded = min((trial / "verifier" / n).stat().st_mtime for n in ("reward.json", "grades.json"))
    for hb in ("hb-exec.txt", "hb-gateway.txt"):
        beats = (agent / hb).read_text().split()
        assert beats, hb  # the daemon ran...
        assert float(beats[-1]) < graded, f"{hb}: a daemon was alive while the grader ran"
    assert json.loads((trial / "verifier" / "reward.json").read_text())["reward"] == 0.0
    assert "KWRL_GATEWAY" in (agent / "environ.txt").read_text()  # it did read the environs
    assert "denied" in (agent / "memory.txt").read_text()  # the gateway's memory is closed
    assert (agent / "redirect.txt").read_text().strip() != "redirect 0"
    _assert_no_secret(trials[1])


def test_answers_linked_to_the_gold_score_nothing(
    trials: tuple[dict[str, TrialRecord], Path],
) -> None:
    """Attack 4 at trial level: final_answer.txt and answer.txt -> /tests/verifiers.json."""
    rec = trials[0]["gold-link"]
    assert rec.reward is None or rec.reward < 0.5, rec.rewards
    report = json.loads((Path(rec.trial_dir) / "sandbox.json").read_text())
    assert "/logs/agent/final_answer.txt" in report["dropped"]  # gone before the grader ran


def test_filling_the_disk_is_a_resource_limit(
    trials: tuple[dict[str, TrialRecord], Path],
) -> None:
    """Attack 8: 200 MB into /filesystem under storage_mb = 64: the agent's doing, scored 0."""
    rec = trials[0]["disk"]
    assert rec.cause is FailureCause.RESOURCE_LIMIT, (rec.cause, rec.error)
    assert rec.trained and rec.train_reward == 0.0
    assert rec.reward is None or rec.reward < 0.5
    assert "disk limit" in (rec.error or "")


def test_killing_every_process_leaves_the_sandbox_to_grade(
    trials: tuple[dict[str, TrialRecord], Path],
) -> None:
    """`kill -9 -1` and signals to pid 1: the sandbox's init survives, so the wrong answer is graded
    (0) instead of the trial failing as infrastructure (which would mask its group)."""
    rec = trials[0]["kill-all"]
    assert rec.cause is FailureCause.NONE, (rec.cause, rec.error)
    assert rec.reward == 0.0


async def test_the_relay_socket_output_and_agent_logs_are_bounded(
    tmp_path: Path, host_secret: str
) -> None:
    """Attacks 6 and 8 at sandbox level, and the zygote fuzzed with malformed requests."""
    world = make_world(tmp_path).name
    task = make_task(tmp_path, "t", world_id=world, storage_mb=32)
    env = make_environment(task, tmp_path / "trial", sandbox_dir=str(tmp_path / "sbx"))
    await env.start(force_build=False)
    try:
        # 6: the gateway's socket cannot be replaced; the host relay still reaches the gateway.
        r = await env.exec(
            "rm -f /kwrl/run/gateway.sock || ln -sf /x /kwrl/run/gateway.sock; ls -l /kwrl/run"
        )
        assert "gateway.sock" in r.stdout and "->" not in r.stdout
        assert env.mcp_url is not None
        port = int(env.mcp_url.split(":")[2].split("/")[0])
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert (await reader.read()).startswith(b"HTTP/1.1 200")
        writer.close()
        # 5: the gateway's environ and memory are closed to agent code; no host secret in them.
        r = await env.exec(
            "for p in /proc/[0-9]*; do tr '\\0' '\\n' < $p/environ 2>/dev/null; done; "
            "pid=$(pgrep -f kwrl.sandbox.gateway.zygote || pgrep python | head -1); "
            "cat /proc/$pid/environ > /dev/null 2>&1 || echo ENVIRON-DENIED"
        )
        assert SECRET not in r.stdout and "ENVIRON-DENIED" in r.stdout
        # Nothing harbor passes to exec (the verifier's env, a judge's key) reaches agent code.
        r = await env.exec("env", env={"OPENAI_API_KEY": SECRET, "KWRL_JUDGE": "x"})
        names = {line.split("=", 1)[0] for line in r.stdout.splitlines()}
        assert names - {"PWD", "SHLVL", "_", "OLDPWD"} == set(base_env("/kwrl/run/gateway.sock"))
        # 8: output is capped, head and tail kept.
        r = await env.exec("echo START; head -c 40M /dev/zero | tr '\\0' x; echo END")
        assert len(r.stdout) < OUTPUT_CAP + 1000
        assert r.stdout.startswith("START") and r.stdout.rstrip().endswith("END")
        assert "bytes of output cut]" in r.stdout
        # 2, 3: /logs/verifier is read-only to agent code; a daemon is left running.
        r = await env.exec(
            "echo 1.0 > /logs/verifier/reward.txt || echo READ-ONLY; "
            "setsid sleep 1000 < /dev/null > /dev/null 2>&1 &"
        )
        assert "READ-ONLY" in r.stdout
        # 8: /logs/agent counts against storage_mb (and no single file outgrows it).
        with pytest.raises(SandboxLimitError, match="disk limit"):
            await env.exec("for i in 1 2 3; do head -c 12M /dev/zero > /logs/agent/f$i; done")
        # 6: the shared zygote survives garbage and goes on forking gateways.
        junks = [b"", b"\xff" * 100, b"[]", b'{"ns_pid": 1}', b"GET / HTTP/1.1\r\n\r\n"]
        junks += [b'{"ns_pid": 2, "cgroup_procs": ["/etc/passwd"], "log": "/x"}']
        junks += [os.urandom(n) for n in (1, 7, 300, 70_000)]
        for junk in junks:
            with socket.socket(socket.AF_UNIX) as s:
                s.connect(zygote._ZYGOTE.path)
                s.sendall(junk)
                s.shutdown(socket.SHUT_WR)
                answer = s.recv(4096)
            assert b"error" in answer or answer == b""
        assert zygote._ZYGOTE.proc is not None and zygote._ZYGOTE.proc.poll() is None
        # The verifier phase: a stale file in /logs/verifier goes (its link not followed), and of
        # the agent phase nothing runs any more (gateway, daemon, init): only the mount holder.
        keep = tmp_path / "host.txt"
        keep.write_text("host file")
        verifier = tmp_path / "trial" / "verifier"
        (verifier / "reward.json").symlink_to(keep)
        await env.upload_dir(task / "tests", "/tests")
        assert list(verifier.iterdir()) == [] and keep.read_text() == "host file"
        cg = env.cgroups
        assert cg is None or len(cg.pids()) == 1, cg.pids()
        r = await env.exec("cat /filesystem/readme.txt; pwd")
        assert r.stdout.split("\n")[-2] == "/" and "Shared drive" in r.stdout
    finally:
        await env.stop(delete=True)
    env2 = make_environment(task, tmp_path / "trial2", sandbox_dir=str(tmp_path / "sbx"))
    await env2.start(force_build=False)
    await env2.stop(delete=True)
    _assert_no_secret(tmp_path)


def test_trial_run_exits_non_zero_on_a_failed_trial_and_bad_limits(tmp_path: Path) -> None:
    """Attack 10: bad task.toml limits are a named ConfigError (data validate; `kwrl trial run`
    exits 2 on them, tests/integration/test_grader_budget.py); a trial without reward exits 1."""
    from kwrl.cli import app

    world = make_world(tmp_path).name
    bad = make_task(tmp_path, "bad-limits", world_id=world)
    toml = bad / "task.toml"
    toml.write_text(toml.read_text().replace("memory_mb = 1024", "memory_mb = -5"))
    problems, _ = validate_task(bad)
    assert [(p.file, p.field) for p in problems] == [
        ("bad-limits/task.toml", "environment.memory_mb")
    ]
    runner = CliRunner()
    broken = make_task(tmp_path, "no-reward", world_id=world)
    (broken / "tests" / "test.sh").write_text("#!/usr/bin/env bash\nexit 3\n")
    r = runner.invoke(
        app,
        ["trial", "run", str(broken), "--out", str(tmp_path / "o"), "--sandbox.gateway", "false"],
    )
    text = r.output.replace("\n", "")
    assert r.exit_code == 1 and "cause verifier" in text and "RewardFileNotFound" in text, r.output


@pytest.fixture(scope="module")
def side_effects(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[dict[str, TrialRecord], list[str]]]:
    """Issue 35's grading side effects as real trials (one rollout): a workbook whose picture and
    WEBSERVICE formula point at a loopback listener this test runs, computed by the grader's
    LibreOffice (a third criterion reads its formula's value); agent code writing through the
    sandbox init's fds and ptracing it. Yields the records and the paths the listener was asked."""
    root = tmp_path_factory.mktemp("side")
    world = make_world(root).name
    with loopback_listener() as (url, hits):
        links = make_task(
            root, "lo-links", world_id=world, grader="kwrl", solve=linked_workbook(url)
        )
        tests = links / "tests" / "verifiers.json"
        verifiers = json.loads(tests.read_text())
        check = {"kind": "xlsx_cell", "path": "/book.xlsx", "cell": "A2", "value": 41}
        verifiers.append(
            {"verifier_id": "c3", "verifier_index": 2,
             "verifier_values": {"criteria": "book.xlsx A2 is 41", "kwrl_check": check}}
        )  # fmt: skip
        tests.write_text(json.dumps(verifiers))
        init = make_task(root, "init-log", world_id=world, grader="kwrl", solution="init_log")
        cfg = RolloutConfig(agent="oracle", concurrency=2, retries=0)
        records = asyncio.run(run_rollout([links, init], cfg, root / "out")).records
        yield {r.task: r for r in records}, hits


def test_libreoffice_grading_a_linked_workbook_sends_nothing_in_the_verifier_or_kwrl_grade(
    side_effects: tuple[dict[str, TrialRecord], list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """LibreOffice computed the workbook's formulas (c3 passes) in its network-less sandbox nested
    in the verifier's, and again in `kwrl grade` on the host; the listener heard nothing (before:
    three requests from the verifier phase); the wrong answer is graded and trained."""
    from kwrl.cli import app

    records, hits = side_effects
    rec = records["lo-links"]
    assert rec.cause is FailureCause.NONE, (rec.cause, rec.error)
    assert rec.trained and rec.reward is not None and rec.reward < 0.5
    grades = json.loads((Path(rec.trial_dir) / "verifier" / "grades.json").read_text())["grades"]
    assert [g["score"] for g in grades] == [0, 0, 1], grades
    monkeypatch.delenv("KWRL_JUDGE", raising=False)
    r = CliRunner().invoke(app, ["grade", rec.trial_dir])
    assert r.exit_code == 0 and "matches 41" in r.output, r.output
    assert hits == []


def test_agent_code_cannot_write_through_or_ptrace_the_sandbox_init(
    side_effects: tuple[dict[str, TrialRecord], list[str]],
) -> None:
    """The init is non-dumpable: /proc/1/fd, /proc/1/mem, /proc/1/environ and ptrace are denied,
    so the host file sandbox.log neither grows (256 MiB before) nor holds a forged line, and the
    trial is graded instead of blocking on the init's stdout pipe until its timeout."""
    rec = side_effects[0]["init-log"]
    assert rec.cause is FailureCause.NONE, (rec.cause, rec.error)
    assert rec.reward == 0.0 and rec.trained
    trial = Path(rec.trial_dir)
    report = (trial / "agent" / "init.txt").read_text().splitlines()
    assert report[:2] == ["fd2 denied 13", "fd1 denied 13"], report
    assert report[2].startswith("ptrace -1") and report[3:] == [
        "mem denied 13",
        "environ denied 13",
    ]
    log = trial / "sandbox.log"
    assert log.stat().st_size < 64 * 1024 and b"FORGED" not in log.read_bytes()
