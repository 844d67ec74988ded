"""The docker preset for real: harbor trials in containers built from kwrl's task dirs.

Needs a running docker engine, compose v2 and the base image (`scripts/docker/setup.sh`); skips
naming what is missing otherwise (CI starts no dockerd). Marked `docker`. On the 2-core VM with
the images built: about 75 s for the module, none of its tests over 45 s (the first run after a
kwrl change rebuilds the runtime image, a few seconds; a fresh engine builds the python image
too, ~50 s).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from test_judge_trial import (  # the local sandbox's judged task
    GOLD,
    KEY,
    KEY_VAR,
    answer_task,
    host_env,
    kwrl,
    make_apex,
    write_solve,
)
from test_verifier_egress import _lines, _probe  # the same probe as the local sandbox's

from fake_judge import FakeJudge
from kwrl.errors import SandboxLimitError
from kwrl.sandbox.conformance.testing import (
    loopback_listener,
    make_environment,
    make_task,
    make_world,
)
from kwrl.sandbox.docker import DockerEnvironment
from kwrl.sandbox.docker.environment import STORAGE_MOUNTS
from kwrl.sandbox.docker.images import docker_missing
from kwrl.synth.generate import SynthConfig, generate
from kwrl.tasks.taskdir import SANDBOX_UID, task_dirs

_MISSING = docker_missing()
pytestmark = [
    pytest.mark.docker,
    pytest.mark.skipif(_MISSING is not None, reason=_MISSING or ""),
]

HARBOR = str(Path(sys.executable).parent / "harbor")


@pytest.fixture(scope="module")
def overlay_task(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("docker") / "d"
    generate(SynthConfig(out=out, worlds=1, tasks_per_world=12, control=False), progress=False)
    return next(t for t in task_dirs(out / "tasks") if (t / "environment" / "overlay").is_dir())


def _harbor_run(task: Path, agent: str, cwd: Path) -> float:
    env = {**os.environ, "HARBOR_TELEMETRY": "0"}
    proc = subprocess.run(
        [
            HARBOR,
            "run",
            "-p",
            str(task),
            "-a",
            agent,
            "-e",
            "kwrl.sandbox.docker:DockerEnvironment",
        ],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    results = [
        p for p in (cwd / "jobs").rglob("result.json") if p.parent.name.startswith(task.name)
    ]
    assert len(results) == 1, proc.stdout[-3000:]
    result = json.loads(results[0].read_text())
    assert result.get("exception_info") is None, result["exception_info"]
    trial = results[0].parent
    report = json.loads((trial / "sandbox.json").read_text())
    assert report["events"] == {"pids_max": 0, "oom_kill": 0, "disk_full": 0}
    return result["verifier_result"]["rewards"]["reward"]


def test_harbor_run_as_typed_scores_the_oracle_1_and_nop_0(
    overlay_task: Path, tmp_path: Path
) -> None:
    """`harbor run -p TASK -a oracle -e kwrl.sandbox.docker:DockerEnvironment` from a working dir
    (harbor's relative jobs/), on a task whose overlay the oracle's answer depends on."""
    (tmp_path / "o").mkdir()
    (tmp_path / "n").mkdir()
    assert _harbor_run(overlay_task, "oracle", tmp_path / "o") == 1.0
    assert _harbor_run(overlay_task, "nop", tmp_path / "n") == 0.0


def _environment(task_dir: Path, trial_dir: Path) -> DockerEnvironment:
    """A `DockerEnvironment` outside a harbor trial, with harbor's /logs mounts."""
    env = make_environment(task_dir, trial_dir, cls=DockerEnvironment)
    assert isinstance(env, DockerEnvironment)
    return env


async def test_the_agent_side_has_no_network_no_root_and_a_gateway_the_verifier_phase_ends(
    overlay_task: Path, tmp_path: Path
) -> None:
    env = _environment(overlay_task, tmp_path / "trial")
    paths = env.trial_paths
    await env.start(force_build=False)
    try:
        assert env.mcp_url is not None
        async with httpx.AsyncClient(timeout=10) as client:  # the relay runs in this loop
            health = (await client.get(env.mcp_url.replace("/mcp/", "/health"))).json()
        assert health["missing_apps"] == [] and "excel" in health["apps"]
        assert env.gateway_fate() is None

        who = await env.exec("id -u; touch /filesystem/ok && echo world-writable")
        assert who.stdout is not None and who.stdout.split() == [str(SANDBOX_UID), "world-writable"]
        for path in ("/kwrl/initial/world/x", "/kwrl/initial/overlay/x", "/kwrl/run/x", "/usr/x"):
            r = await env.exec(f"touch {path}")
            assert r.return_code != 0, path
        # The root is read-only, even to root; agent commands hold no capability and cannot
        # gain one (no_new_privs), and root inside holds only `CAPABILITIES`.
        for path in ("/x", "/etc/ld.so.preload", "/var/tmp/x", "/run/lock/x", "/dev/x"):
            r = await env.exec(f"touch {path}", user="root")
            assert r.return_code != 0 and "Read-only file system" in (r.stdout or ""), path
        caps = await env.exec("grep -E '^(CapEff|CapBnd|NoNewPrivs)' /proc/self/status")
        assert (caps.stdout or "").split() == [
            "CapEff:", "0000000000000000", "CapBnd:", "00000000000000c5", "NoNewPrivs:", "1"
        ], caps  # fmt: skip
        absent = await env.exec("[ -e /tests ] || echo absent")
        assert (absent.stdout or "").strip() == "absent"
        await env.exec("touch /tmp/.bashrc /tmp/planted")
        net = await env.exec(
            "python3 -c \"import socket; socket.create_connection(('1.1.1.1', 53), timeout=3)\""
        )
        assert net.return_code != 0 and "Network is unreachable" in (net.stderr or net.stdout or "")
        # The overlay is over the world and, read-only, at /kwrl/initial/overlay.
        rel = next(
            p.relative_to(overlay_task / "environment" / "overlay").as_posix()
            for p in (overlay_task / "environment" / "overlay").rglob("*")
            if p.is_file()
        )
        seen = await env.exec(
            f"cmp '/{rel}' '/kwrl/initial/overlay/{rel}' && echo same", user="root"
        )
        assert (seen.stdout or "").strip() == "same", seen

        await env.exec("nohup sleep 1000 >/dev/null 2>&1 &")
        tests = tmp_path / "tests"
        tests.mkdir()
        (tests / "probe.txt").write_text("x\n")
        await env.upload_dir(tests, "/tests")  # the verifier phase starts
        left = await env.exec(f"ps -o pid= -u {SANDBOX_UID} | wc -l; id -u")
        assert (left.stdout or "").split() == ["0", "0"]
        # The grader's /tmp holds nothing of the agent's; /tests came from the host.
        seen = await env.exec("ls -A /tmp; cat /tests/probe.txt")
        assert (seen.stdout or "").split() == ["x"], seen
        assert env.gateway_fate() is None  # kwrl ended it, not the agent
    finally:
        await env.stop(delete=True)
    assert DockerEnvironment.leftovers() == []
    assert (paths.trial_dir / "gateway.log").read_text().startswith("kwrl-gateway ready")


async def test_what_the_agent_writes_is_bounded_and_reaches_the_host_and_the_grader_as_files(
    tmp_path: Path,
) -> None:
    """Every dir the agent may write is a tmpfs of storage_mb (once /logs/agent, /logs/artifacts
    and /logs/verifier were harbor's host dirs, /var/tmp the container's layer: unbounded on the
    host's disk); the agent's outputs reach harbor's dir as plain files, and the grader finds
    there what the host wrote (kwrl's agent writes the final answer on the host)."""
    root = tmp_path / "hand"
    task = make_task(root, "outputs", world_id=make_world(root).name, storage_mb=64)
    env = _environment(task, tmp_path / "trial")
    host = env.trial_paths.agent_dir
    await env.start(force_build=False)
    try:
        kinds = await env.exec(f"stat -f -c %T {' '.join(STORAGE_MOUNTS)}")
        assert (kinds.stdout or "").split() == ["tmpfs"] * len(STORAGE_MOUNTS), kinds
        closed = await env.exec("touch /logs/verifier/x")
        assert closed.return_code != 0
        fsize = await env.exec(
            f"grep 'Max file size' /proc/$(pgrep -o -u {SANDBOX_UID})/limits", user="root"
        )
        assert (fsize.stdout or "").split()[3:5] == [str(64 * 2**20)] * 2, fsize  # the gateway
        await env.exec(
            "echo mine > /logs/agent/note.txt; echo agent > /logs/agent/final_answer.txt; "
            "ln -s /kwrl/initial /logs/agent/link; mkdir /logs/artifacts/a; echo x > /logs/artifacts/a/f"
        )
        (host / "final_answer.txt").write_text("host\n")  # as kwrl's agent writes it
        await env.prepare_logs_for_host()
        assert (host / "note.txt").read_text() == "mine\n"
        assert (host / "final_answer.txt").read_text() == "host\n"
        assert not (host / "link").exists() and not (host / "link").is_symlink()
        [artifact] = env.trial_paths.artifacts_dir.rglob("f")
        assert artifact.read_text() == "x\n"
        with pytest.raises(SandboxLimitError, match=r"disk limit.*/logs/agent"):
            await env.exec("head -c 100M /dev/zero > /logs/agent/big")
        await env.exec("rm /logs/agent/big")

        tests = tmp_path / "tests"
        tests.mkdir()
        (tests / "probe.txt").write_text("x\n")
        await env.upload_dir(tests, "/tests")  # the verifier phase starts
        seen = await env.exec(
            "cat /logs/agent/final_answer.txt /logs/agent/note.txt; "
            "[ -e /logs/agent/link ] || echo no-link; touch /logs/verifier/x && echo writable"
        )
        assert (seen.stdout or "").split() == ["host", "mine", "no-link", "writable"], seen
    finally:
        await env.stop(delete=True)
    report = json.loads((env.trial_paths.trial_dir / "sandbox.json").read_text())
    assert report["dropped"] == ["/logs/agent/link"]
    assert report["events"]["disk_full"] == 1


async def test_the_verifier_reaches_the_judge_on_the_hosts_loopback_and_nothing_else(
    overlay_task: Path, tmp_path: Path
) -> None:
    """The container has no network; the grader's one way out is the egress proxy on
    /kwrl/run/egress.sock, which admits the judge (`kwrl.sandbox.network.egress`, as the local sandbox)."""
    with loopback_listener() as (judge, judge_hits), loopback_listener() as (other, other_hits):
        env = _environment(overlay_task, tmp_path / "trial")
        await env.start(force_build=False)
        try:
            await env.upload_dir(overlay_task / "tests", "/tests")
            judged = {"KWRL_JUDGE": f"{judge}/v1#judge"}
            for url, expected in ((judge, "404"), (other, "403")):
                r = await env.exec(_probe(url), env=judged)
                seen = _lines(r.stdout or "")
                assert seen.get("via-proxy") == expected, r
                assert seen.get("direct") in ("ConnectionRefusedError", "OSError"), r
        finally:
            await env.stop(delete=True)
    assert judge_hits == ["/probe"] and other_hits == []
    report = json.loads((tmp_path / "trial" / "sandbox.json").read_text())
    assert report["egress"]["connected"] == [judge.removeprefix("http://")]


def test_a_judged_apex_task_is_graded_through_the_loopback_judge(
    tmp_path: Path, judge: FakeJudge
) -> None:
    """`kwrl trial run --sandbox.environment docker --judge URL` on an APEX-layout task: each
    criterion's verdict is the loopback judge's, reached from the network-less container through
    the egress proxy, with the judge's key; the same task and judge as test_judge_trial's local
    run (reward 0.5)."""
    env = host_env(KWRL_JUDGE_API_KEY_ENV=KEY_VAR, KWRL_JUDGE_MAX_RETRIES="1", **{KEY_VAR: KEY})
    ds = tmp_path / "ds"
    r = kwrl("data", "convert", "--from", "apex-hf", make_apex(tmp_path / "apex"), "--out", ds,
             "--quiet", env=env)  # fmt: skip
    assert r.returncode == 0, r.stderr
    task = answer_task(ds)
    write_solve(task, f"echo '{GOLD}' > /logs/agent/final_answer.txt\n")
    out = tmp_path / "trials"
    r = kwrl("trial", "run", task, "--model", "oracle", "--judge", f"{judge.url}#m",
             "--sandbox.environment", "docker", "--out", out, env=env)  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    assert "reward 0.5" in r.stdout, r.stdout[-3000:]
    assert len(judge.requests) == 2
    assert {q["auth"] for q in judge.requests} == {f"Bearer {KEY}"}
    [trial] = out.iterdir()
    report = json.loads((trial / "sandbox.json").read_text())
    assert report["egress"]["connected"] == [judge.url.removeprefix("http://").split("/")[0]]
