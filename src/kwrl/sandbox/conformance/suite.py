"""The conformance suite: does an environment run kwrl trials as the contract says?

    kwrl sandbox conform --sandbox.environment kwrl.sandbox.local:LocalEnvironment [--full]
        [--sandbox.kwargs key=value ...]

`conform(env, work)` runs real harbor trials (harbor's oracle and nop agents, the real grader) in
the environment named by `env` (an import path `module:Class` or a preset of
`kwrl.sandbox.presets`) on tasks it generates under `work`, and returns one `Check` per contract
point (`kwrl.sandbox.contract`):

- `oracle` / `nop`: generated tasks (`kwrl data synth`: a few in the default run, one per task
  family with `full`) and a hand-made one (`kwrl.sandbox.conformance.testing`) score 1.0 with the gold
  solution and 0.0 doing nothing;
- `attack:<name>`: the hostile solutions of `kwrl.sandbox.conformance.testing.ATTACKS` (a fast few, all with
  `full`), each on the task settings it is meant for, score below 0.5, or end on the agent's
  own limit (`SandboxLimitError`); one run on a small storage_mb also leaves no file of more than
  that in any dir it wrote (`disk_anywhere`'s report) and the trial dir on the host under twice it;
  none leaves a host file past its bound (`testing.host_file_breach`: gateway.log and sandbox.log
  under `outputs.LOG_CAP` after `log_flood`, the trial dir under the output caps after
  `output_flood`), nor more files in /filesystem than its inode bound (`inode_flood`);
- `egress`: a probe verifier asks the egress proxy for a listener on the host's loopback under
  every IPv6 form that embeds 127.0.0.1 (and a decimal spelling, 192.0.0.8): each is refused (403)
  and the listener hears nothing;
- `verifier_phase`: a probe (its own test.sh) finds, in the verifier phase, the initial copy
  read-only and right at `/kwrl/initial/*`, the agent's changes in the world, a reward the agent
  planted gone, no agent process alive, and `/tests` absent in the agent phase;
- `root:read_only`: agent code creates nothing outside the mounts a trial must write (the world,
  `/tmp`, `/dev/shm`, `/logs/agent`, `/logs/artifacts`, `/solution`): not `/x`, `/etc/x`,
  `/usr/x`, nor in any other dir of the root or the host paths bound in; nor does the verifier
  phase's command write its root;
- `root:preload`: a library agent code builds and plants where a dynamic loader would read it
  (`/etc/ld.so.preload`, `/etc/ld.so.conf.d`) and binaries that would shadow a tool on `PATH` are
  never loaded with a capability or without no_new_privs by what kwrl runs later in the agent
  phase (harbor's artifact collection); its library is built on the host (skipped without cc);
- `diff`: the grader's `changes.tar.gz` lists exactly what the agent created, modified, deleted;
- `limits`: a memory hog ends on `SandboxLimitError` (or the environment refuses the limit by
  name), and a task.toml limit no sandbox can apply is refused naming the field;
- `gateway`: the environment is a `KwrlEnvironment`; `mcp_url` lists the world's tools, and once
  agent code kills every process it may, `gateway_fate()` says so;
- `leftovers`: after every trial, nothing of them is left: the environment's own `leftovers()`,
  no new mount of the suite's dirs on the host, no process this one started.

Trials run through harbor's `Trial` directly (not `kwrl.rollout`, which sits above this folder);
each trial's dir stays under `work/trials` for a look when a check fails.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import stat
import subprocess
import tarfile
import time
from collections.abc import Awaitable, Callable, Collection
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kwrl.sandbox.conformance.testing import (
    ATTACK_TASKS,
    ATTACKS,
    host_file_breach,
    inode_breach,
    loopback_listener,
    make_task,
    make_world,
)

FAST_ATTACKS: tuple[str, ...] = (
    "hijack", "gold_link", "kill_all", "daemons", "disk", "disk_anywhere",
    "log_flood", "output_flood", "inode_flood",
)  # fmt: skip
"""The attacks of the default run: each tests one duty (grader isolation, links, signals, the end
of the agent phase, storage, files on the host); `full` runs every one of ATTACKS."""
FAST_SYNTH_TASKS = 3
"""Generated tasks in the default run (one world); `full` takes one per family of three worlds."""

_PROBE_SOLVE = r"""#!/usr/bin/env bash
p=/logs/agent/probe.txt
: > "$p"
[ -e /tests ] && echo tests_visible_in_agent_phase >> "$p"
[ -f /filesystem/overlay.txt ] || echo overlay_missing_in_agent_phase >> "$p"
echo changed > /filesystem/reports/q3.txt
rm -f /filesystem/readme.txt
echo '{"reward": 1.0}' > /logs/verifier/reward.json 2>/dev/null
printf 'while :; do date +%%s%%N >> /filesystem/hb.txt; sleep 0.05; done\n' > /filesystem/.hb.sh
setsid bash /filesystem/.hb.sh < /dev/null > /dev/null 2>&1 &
until [ -s /filesystem/hb.txt ]; do sleep 0.01; done
echo 'The answer is 42.' > /logs/agent/final_answer.txt
"""
_PROBE_TEST_SH = r"""#!/usr/bin/env bash
set -u
f=()
if [ -f /logs/agent/probe.txt ]; then
  while read -r l; do [ -n "$l" ] && f+=("$l"); done < /logs/agent/probe.txt
else
  f+=(agent_probe_missing)
fi
[ -e /logs/verifier/reward.json ] && f+=(planted_reward_kept)
[ "$(cat /kwrl/initial/world/filesystem/reports/q3.txt 2>&1)" = "Q3 revenue: 42 million" ] || f+=(initial_world_wrong)
[ -f /kwrl/initial/world/filesystem/readme.txt ] || f+=(initial_world_lost_a_file)
[ -f /kwrl/initial/overlay/filesystem/overlay.txt ] || f+=(initial_overlay_wrong)
touch /kwrl/initial/world/filesystem/x 2>/dev/null && f+=(initial_world_writable)
grep -q changed /filesystem/reports/q3.txt 2>/dev/null || f+=(agent_change_lost)
[ -e /filesystem/readme.txt ] && f+=(agent_deletion_lost)
a=$(wc -c < /filesystem/hb.txt); sleep 0.5; b=$(wc -c < /filesystem/hb.txt)
[ "$a" = "$b" ] || f+=(agent_process_alive_in_verifier_phase)
printf '%s\n' "${f[@]}" > /logs/verifier/probe.txt
if [ ${#f[@]} -eq 0 ]; then r=1; else r=0; fi
echo "{\"reward\": $r}" > /logs/verifier/reward.json
"""
# Agent code may write the world, /tmp, /dev/shm, its output dirs and /solution: nothing else.
_RO_SOLVE = r"""#!/usr/bin/env bash
p=/logs/agent/ro-probe.txt
: > "$p"
for d in / /etc /etc/ssl /usr /usr/bin /usr/lib /usr/local/bin /bin /sbin /lib /lib64 /kwrl \
         /kwrl/run /logs /dev /var /var/lib /opt /root /home /srv /mnt /boot \
         "$(dirname "$KWRL_PYTHON")" "$(dirname "$(dirname "$KWRL_PYTHON")")"; do
  f="${d%/}/kwrl-probe"
  if ( : > "$f" ) 2>/dev/null; then echo "created:$f" >> "$p"; rm -f "$f"; fi
  if mkdir "${d%/}/kwrl-probe.d" 2>/dev/null; then echo "created:${d%/}/kwrl-probe.d" >> "$p"; fi
done
ln -s /tmp /kwrl-probe.l 2>/dev/null && echo created:/kwrl-probe.l >> "$p"
for d in /tmp /dev/shm /filesystem /.apps_data /logs/agent /logs/artifacts; do
  ( : > "$d/kwrl-probe-w" ) 2>/dev/null || echo "unwritable:$d" >> "$p"
done
echo checked >> "$p"
echo 'The answer is 42.' > /logs/agent/final_answer.txt
"""
_RO_TEST_SH = r"""#!/usr/bin/env bash
f=()
if [ -f /logs/agent/ro-probe.txt ]; then
  grep -q '^checked$' /logs/agent/ro-probe.txt || f+=(agent_probe_unfinished)
  while read -r l; do [ "$l" != checked ] && [ -n "$l" ] && f+=("agent:$l"); done < /logs/agent/ro-probe.txt
else
  f+=(agent_probe_missing)
fi
for d in / /etc /usr /kwrl /logs /dev; do
  ( : > "${d%/}/kwrl-verifier-probe" ) 2>/dev/null && f+=("verifier:created:${d%/}/kwrl-verifier-probe")
done
printf '%s\n' "${f[@]}" > /logs/verifier/probe.txt
if [ ${#f[@]} -eq 0 ]; then r=1; else r=0; fi
echo "{\"reward\": $r}" > /logs/verifier/reward.json
"""
# A library whose constructor logs who loaded it and with which privileges, planted where a loader
# would read it; later commands kwrl runs in the agent phase (harbor's artifact collection after
# the agent's own commands) must never load it with a capability or without no_new_privs.
_PRELOAD_LIB_C = r"""
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
__attribute__((constructor)) static void kwrl_probe(void) {
    char buf[4096], out[512], comm[64] = "?", caps[32] = "?", nnp[8] = "?";
    int fd = open("/proc/self/status", O_RDONLY), n, c;
    if (fd < 0) return;
    n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return;
    buf[n] = 0;
    char *l = strstr(buf, "CapEff:"), *m = strstr(buf, "NoNewPrivs:"), *k = strstr(buf, "Name:");
    if (l) sscanf(l, "CapEff: %31s", caps);
    if (m) sscanf(m, "NoNewPrivs: %7s", nnp);
    if (k) sscanf(k, "Name: %63s", comm);
    c = snprintf(out, sizeof out, "%s CapEff=%s NoNewPrivs=%s\n", comm, caps, nnp);
    fd = open("/filesystem/.kwrl-preload.log", O_WRONLY | O_APPEND | O_CREAT, 0644);
    if (fd >= 0) { write(fd, out, c); close(fd); }
}
"""
_PRELOAD_SOLVE = r"""#!/usr/bin/env bash
log=/logs/agent/preload.txt
: > "$log"
cp /solution/probe.so /tmp/probe.so && chmod 755 /tmp/probe.so
LD_PRELOAD=/tmp/probe.so /usr/bin/true  # the library loads: one line, no privilege
for f in /etc/ld.so.preload /etc/ld.so.conf.d/kwrl-probe.conf; do
  { echo /tmp/probe.so > "$f"; } 2>/dev/null && echo "planted:$f" >> "$log"
done
IFS=: read -ra dirs <<< "$PATH"
for d in "${dirs[@]}" /usr/local/sbin /usr/local/bin /bin; do
  for b in setpriv nsenter tar cat mkdir bash sh env; do
    if { printf '#!/usr/bin/env bash\necho "shadow:%s $(grep CapEff /proc/self/status)" >> /filesystem/.kwrl-preload.log\nexec /usr/bin/%s "$@"\n' "$d/$b" "$b" > "$d/$b.kwrl-probe"; } 2>/dev/null; then
      echo "planted:$d/$b" >> "$log"
      rm -f "$d/$b.kwrl-probe"
    fi
  done
done
echo done >> "$log"
echo 'The answer is 42.' > /logs/agent/final_answer.txt
"""
_PRELOAD_TEST_SH = r"""#!/usr/bin/env bash
f=()
l=/filesystem/.kwrl-preload.log
grep -q '^done$' /logs/agent/preload.txt 2>/dev/null || f+=(agent_probe_unfinished)
[ -s "$l" ] || f+=(probe_library_never_loaded)
while read -r line; do
  case "$line" in
    *"CapEff=0000000000000000 NoNewPrivs=1") ;;
    *) f+=("privileged_load:${line// /_}") ;;
  esac
done < <(grep -v '^shadow:' "$l" 2>/dev/null)
while read -r line; do
  case "$line" in
    *"CapEff:	0000000000000000") ;;
    *) f+=("privileged_shadow:${line// /_}") ;;
  esac
done < <(grep '^shadow:' "$l" 2>/dev/null)
printf '%s\n' "${f[@]}" > /logs/verifier/probe.txt
if [ ${#f[@]} -eq 0 ]; then r=1; else r=0; fi
echo "{\"reward\": $r}" > /logs/verifier/reward.json
"""
_DIFF_SOLVE = """#!/usr/bin/env bash
set -e
echo 42 > /filesystem/answer.txt
echo 'Q3 revenue: 43 million' > /filesystem/reports/q3.txt
rm /filesystem/readme.txt
echo 'The answer is 42.' > /logs/agent/final_answer.txt
"""
EMBEDDED_LOOPBACK: tuple[str, ...] = (
    "[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "[::127.0.0.1]", "[::ffff:0:7f00:1]",
    "[64:ff9b::7f00:1]", "[64:ff9b:1:7f00:0:100::]", "[2002:7f00:1::]",
    "[2001:0:4136:e378:8000:63bf:80ff:fffe]", "2130706433", "192.0.0.8",
)  # fmt: skip
"""Hosts the `egress` probe asks the proxy for: 127.0.0.1 embedded in IPv6 (mapped, compatible,
translated, NAT64 /96 and /48, 6to4, Teredo's client), as a decimal number, and an IETF
protocol address Python's `is_global` admits."""
_EGRESS_TEST_SH = r"""#!/usr/bin/env bash
"${KWRL_PYTHON:-python3}" -I - <<'EOF'
import json, urllib.error, urllib.request
got = {}
for host in HOSTS:
    try:
        urllib.request.urlopen(f"http://{host}:PORT/embedded", timeout=20)
        got[host] = "reached"
    except urllib.error.HTTPError as e:
        got[host] = e.code
    except Exception as e:
        got[host] = type(e).__name__
open("/logs/verifier/egress.json", "w").write(json.dumps(got))
ok = all(v == 403 for v in got.values())
open("/logs/verifier/reward.json", "w").write(json.dumps({"reward": 1.0 if ok else 0.0}))
EOF
"""
_DIFF_EXPECTED = {
    "created": ["filesystem/answer.txt"],
    "modified": ["filesystem/reports/q3.txt"],
    "deleted": ["filesystem/readme.txt"],
}


@dataclass
class Check:
    """One contract point, checked."""

    name: str
    passed: bool
    detail: str = ""
    """What the check saw: a reward, an error, the probe's failures."""
    seconds: float = 0.0
    """From the check's start to its verdict, waiting for a trial slot included."""


@dataclass
class Outcome:
    """What one harbor trial ended with."""

    name: str
    trial_dir: Path
    reward: float | None = None
    error_type: str | None = None
    error: str = ""

    def describe(self) -> str:
        said = f"reward {self.reward}" if self.reward is not None else "no reward"
        return said + (f", {self.error_type}: {self.error[:300]}" if self.error_type else "")


@dataclass
class ConformanceReport:
    """Every check of one run of the suite (written as conformance.json by the CLI)."""

    env: str
    checks: list[Check] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(c.passed for c in self.checks)

    def failed(self) -> list[Check]:
        return [c for c in self.checks if not c.passed]

    def as_json(self) -> dict[str, Any]:
        return {"env": self.env, "ok": self.ok, "checks": [asdict(c) for c in self.checks]}


class _Suite:
    """One run: the environment under test, its scratch dir, the trial slots, the report."""

    def __init__(self, env: str, work: Path, env_kwargs: dict[str, Any], concurrency: int) -> None:
        self.env = env
        self.work = work.resolve()
        self.env_kwargs = env_kwargs
        self.sem = asyncio.Semaphore(concurrency)
        self.report = ConformanceReport(env)

    async def trial(self, task_dir: Path, agent: str, name: str) -> Outcome:
        """One harbor trial of `task_dir` with harbor's `agent` (oracle or nop)."""
        from harbor.models.trial.config import AgentConfig, TaskConfig, TrialConfig
        from harbor.trial.trial import Trial

        from kwrl.sandbox.presets import environment_config

        trials = self.work / "trials"
        out = Outcome(name, trials / name)
        cfg = TrialConfig(
            task=TaskConfig(path=task_dir.resolve()),
            trial_name=name,
            trials_dir=trials,
            agent=AgentConfig(name=agent),
            environment=environment_config(self.env, self.env_kwargs),
        )
        async with self.sem:
            try:
                result = await (await Trial.create(cfg)).run()
            except Exception as e:  # refused before the trial ran: the check judges the error
                out.error_type, out.error = type(e).__name__, str(e)
                return out
        rewards = result.verifier_result.rewards if result.verifier_result else None
        if rewards and "reward" in rewards:
            out.reward = float(rewards["reward"])
        if result.exception_info is not None:
            out.error_type = result.exception_info.exception_type
            out.error = result.exception_info.exception_message
        return out

    async def timed(self, name: str, body: Callable[[], Awaitable[tuple[bool, str]]]) -> None:
        t0 = time.monotonic()
        try:
            passed, detail = await body()
        except Exception as e:  # a check that crashes fails, with its error, and the others go on
            passed, detail = False, f"{type(e).__name__}: {e}"
        self.report.checks.append(Check(name, passed, detail, round(time.monotonic() - t0, 2)))

    async def scores(self, name: str, task_dir: Path, agent: str, want: float) -> tuple[bool, str]:
        got = await self.trial(task_dir, agent, name)
        return got.reward == want, got.describe()


async def _synth_tasks(work: Path, full: bool) -> list[Path]:
    """Generated tasks: FAST_SYNTH_TASKS of one world, or with `full` one per family."""
    from kwrl.synth.generate import SynthConfig, generate

    out = work / "synth"
    cfg = SynthConfig(out=out, worlds=3 if full else 1, tasks_per_world=18 if full else FAST_SYNTH_TASKS,
                      seed=0, workers=1, overwrite=True)  # fmt: skip
    await asyncio.to_thread(generate, cfg, progress=False)
    tasks = sorted(p for p in (out / "tasks").iterdir() if p.is_dir())
    by_family: dict[str, Path] = {}
    for t in tasks:  # slugs end in the family's name: <domain>-w0000-000-<family>
        by_family.setdefault(t.name.split("-", 3)[-1], t)
    return sorted(by_family.values())


def _probe_task(root: Path, world: str) -> Path:
    task = make_task(root, "probe", world_id=world, solve=_PROBE_SOLVE)
    overlay = task / "environment" / "overlay" / "filesystem"
    overlay.mkdir(parents=True)
    (overlay / "overlay.txt").write_text("from the task overlay\n")
    (task / "tests" / "test.sh").write_text(_PROBE_TEST_SH)
    return task


def _root_task(root: Path, world: str) -> Path:
    task = make_task(root, "root-ro", world_id=world, solve=_RO_SOLVE)
    (task / "tests" / "test.sh").write_text(_RO_TEST_SH)
    return task


def _preload_task(root: Path, world: str) -> Path | None:
    """The preload probe's task (its library built here, into the task's solution), or None where
    this host has no C compiler. Its task.toml lists an artifact, so harbor collects it with a
    command kwrl runs in the agent phase after the agent's own."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        return None
    task = make_task(root, "root-preload", world_id=world, solve=_PRELOAD_SOLVE)
    src = task / "solution" / "probe.c"
    src.write_text(_PRELOAD_LIB_C)
    subprocess.run(
        [cc, "-shared", "-fPIC", "-O2", "-o", str(task / "solution" / "probe.so"), str(src)],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    src.unlink()
    (task / "tests" / "test.sh").write_text(_PRELOAD_TEST_SH)
    toml = task / "task.toml"
    toml.write_text('artifacts = ["/filesystem/reports"]\n' + toml.read_text())
    return task


async def _root_probe(suite: _Suite, task: Path | None, name: str) -> tuple[bool, str]:
    if task is None:
        return True, "not run: no C compiler on this host to build the probe's library"
    got = await suite.trial(task, "oracle", name)
    failures = suite.work / "trials" / name / "verifier" / "probe.txt"
    said = failures.read_text().split() if failures.is_file() else []
    return got.reward == 1.0, ", ".join(said)[:1500] or got.describe()


def _changes(trial_dir: Path) -> dict[str, Any]:
    with tarfile.open(trial_dir / "verifier" / "changes.tar.gz") as tf:
        member = tf.extractfile("changes.json")
        assert member is not None
        return json.loads(member.read())


def _mounts() -> set[str]:
    return set(Path("/proc/self/mountinfo").read_text().splitlines())


def _descendants() -> set[int]:
    """Pids of this process's descendants (through /proc/*/task/*/children)."""
    found: set[int] = set()
    frontier = [os.getpid()]
    while frontier:
        kids: list[int] = []
        for pid in frontier:
            for f in Path(f"/proc/{pid}/task").glob("*/children"):
                try:
                    kids += [int(c) for c in f.read_text().split()]
                except OSError:
                    continue
        kids = [k for k in kids if k not in found]
        found.update(kids)
        frontier = kids
    return found


async def _gateway(suite: _Suite, task_dir: Path) -> tuple[bool, str]:
    """Start the environment outside a trial: it is a KwrlEnvironment, its gateway lists tools,
    and `gateway_fate()` names the end agent code gave it."""
    from harbor.environments.factory import EnvironmentFactory
    from harbor.models.task.task import Task
    from harbor.models.trial.config import ServiceVolumeConfig
    from harbor.models.trial.paths import TrialPaths

    from kwrl.sandbox.contract import REPORT_NAME, KwrlEnvironment
    from kwrl.sandbox.presets import environment_config
    from kwrl.worlds.client import GatewayClient

    task = Task(task_dir)
    paths = TrialPaths(trial_dir=suite.work / "trials" / "gateway")
    paths.mkdir()
    mounts = [
        ServiceVolumeConfig(type="bind", source=str(d), target=f"/logs/{d.name}")
        for d in (paths.agent_dir, paths.verifier_dir, paths.artifacts_dir)
    ]
    env = EnvironmentFactory.create_environment_from_config(
        environment_config(suite.env, suite.env_kwargs),
        environment_dir=task.paths.environment_dir,
        environment_name=task.short_name,
        session_id="kwrl-conform-gateway__env",
        trial_paths=paths,
        task_env_config=task.config.environment,
        mounts=mounts,
    )
    if not isinstance(env, KwrlEnvironment):
        return False, f"{type(env).__name__} is not a kwrl.sandbox.contract.KwrlEnvironment"
    async with suite.sem:
        await env.start(force_build=False)
        try:
            if env.mcp_url is None:
                return False, "mcp_url is None after start() (the gateway is off?)"
            async with GatewayClient(env.mcp_url, timeout_s=60) as gw:
                tools = await gw.list_tools()
            if not tools or env.gateway_fate() is not None:
                return False, f"{len(tools)} tools, gateway_fate {env.gateway_fate()!r}"
            await env.exec("kill -9 -1; true", timeout_sec=30)
            fate = None
            for _ in range(100):  # the kernel ends the gateway asynchronously
                if (fate := env.gateway_fate()) is not None:
                    break
                await asyncio.sleep(0.05)
            if fate is None:
                return False, "gateway_fate() is None after `kill -9 -1` in the agent phase"
        finally:
            await env.stop(delete=True)
    if not (paths.trial_dir / REPORT_NAME).is_file():
        return False, f"stop() wrote no {REPORT_NAME}"
    return True, f"{len(tools)} tools; after kill -9 -1: {fate}"


async def conform(
    env: str,
    work: Path,
    *,
    env_kwargs: dict[str, Any] | None = None,
    full: bool = False,
    concurrency: int = 4,
    only: Collection[str] = (),
) -> ConformanceReport:
    """Run the suite for environment `env` (import path or preset) with scratch space `work`;
    `only`: run just the checks whose names start with one of these (`attack:`, `diff`, ...),
    besides the first oracle trial and `leftovers`, which always run."""
    suite = _Suite(env, work, dict(env_kwargs or {}), concurrency)
    root = suite.work / "hand"
    world = make_world(root).name
    plain = make_task(root, "plain", world_id=world, grader="kwrl")
    wanted = tuple(only)
    synth = await _synth_tasks(suite.work, full) if _picked(wanted, "oracle:", "nop:") else []

    # The first trial starts whatever the environment keeps warm (a zygote, a daemon); what runs
    # after it and is still running at the end was left behind.
    await suite.timed("oracle:plain", lambda: suite.scores("oracle-plain", plain, "oracle", 1.0))
    mounts, procs = _mounts(), _descendants()

    checks: list[tuple[str, Callable[[], Awaitable[tuple[bool, str]]]]] = [
        ("nop:plain", lambda: suite.scores("nop-plain", plain, "nop", 0.0))
    ]
    for t in synth:
        checks.append((f"oracle:{t.name}", lambda t=t: suite.scores(f"oracle-{t.name}", t, "oracle", 1.0)))  # fmt: skip
        checks.append((f"nop:{t.name}", lambda t=t: suite.scores(f"nop-{t.name}", t, "nop", 0.0)))

    for name in ATTACKS if full else FAST_ATTACKS:
        task = make_task(root, f"attack-{name}", world_id=world, solution=name, grader="kwrl",
                         **ATTACK_TASKS.get(name, {}))  # fmt: skip
        checks.append((f"attack:{name}", lambda n=name, t=task: _attack(suite, n, t)))

    probe = _probe_task(root, world)
    checks.append(("verifier_phase", lambda: _probe(suite, probe)))
    ro = _root_task(root, world)
    checks.append(("root:read_only", lambda: _root_probe(suite, ro, "root-ro")))
    preload = _preload_task(root, world)
    checks.append(("root:preload", lambda: _root_probe(suite, preload, "root-preload")))
    diff = make_task(root, "diff", world_id=world, grader="kwrl", solve=_DIFF_SOLVE)
    checks.append(("diff", lambda: _diff(suite, diff)))
    hog = make_task(root, "memhog", world_id=world, solution="memhog", memory_mb=256)
    checks.append(("limits:memory", lambda: _memory_limit(suite, hog)))
    bad = make_task(root, "bad-limit", world_id=world)
    toml = bad / "task.toml"
    toml.write_text(toml.read_text().replace("cpus = 1\n", "cpus = 0\n", 1))
    checks.append(("limits:refused", lambda: _refused(suite, bad)))
    checks.append(("gateway", lambda: _gateway(suite, plain)))
    checks.append(("egress", lambda: _egress(suite, root, world)))

    picked = [(n, body) for n, body in checks if not wanted or n.startswith(wanted)]
    await asyncio.gather(*(suite.timed(n, body) for n, body in picked))

    async def left() -> tuple[bool, str]:
        from kwrl.sandbox.contract import KwrlEnvironment
        from kwrl.sandbox.presets import environment_config

        cfg = environment_config(env, {})
        found: list[str] = []
        if cfg.import_path:
            from harbor.utils.import_path import import_class

            cls = import_class(cfg.import_path, label="environment")
            if issubclass(cls, KwrlEnvironment):
                await cls.drain()  # what it keeps between trials (spares) is no trial's
                found += cls.leftovers()
        # Other processes of the host mount and unmount meanwhile: only mounts naming the suite's
        # work dir or this process's own dirs (`<pid>-...`, as kwrl names sandbox roots) count.
        ours = (str(suite.work), f"/{os.getpid()}-")
        found += [f"mount: {m}" for m in _mounts() - mounts if any(o in m for o in ours)]
        found += [f"process {p}: {_cmdline(p)}" for p in _descendants() - procs]
        return not found, "; ".join(found[:20]) or "nothing left"

    await suite.timed("leftovers", left)
    return suite.report


def _picked(wanted: tuple[str, ...], *names: str) -> bool:
    return not wanted or any(n.startswith(wanted) or w.startswith(n) for n in names for w in wanted)


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:200]
    except OSError:
        return "(gone)"


async def _attack(suite: _Suite, name: str, task: Path) -> tuple[bool, str]:
    got = await suite.trial(task, "oracle", f"attack-{name}")
    storage_mb = ATTACK_TASKS.get(name, {}).get("storage_mb")
    breach = _storage_breach(got.trial_dir, storage_mb) if storage_mb else ""
    inodes = inode_breach(got.trial_dir, storage_mb or 10240)
    breach = "; ".join(b for b in (breach, host_file_breach(got.trial_dir), inodes) if b)
    if breach:
        said = f" (storage_mb = {storage_mb})" if storage_mb else ""
        return False, f"{breach}{said}; {got.describe()}"
    if got.reward is not None:
        return got.reward < 0.5, got.describe()
    # No reward: only the agent's own limit hit may end a hostile trial (a 0 that trains);
    # anything else would be an infrastructure error, which masks the trial.
    return got.error_type == "SandboxLimitError", got.describe()


def _storage_breach(trial_dir: Path, storage_mb: int) -> str:
    """What an attack on a task of `storage_mb` wrote past it: a dir that took a bigger file
    (`disk_anywhere`'s agent/disk.txt: "<bytes> <dir>" lines), or the trial dir on the host grown
    past twice it (the agent's two output dirs, each bounded apart)."""
    limit = storage_mb * 2**20
    found: list[str] = []
    report = trial_dir / "agent" / "disk.txt"
    if report.is_file() and not report.is_symlink():
        for line in report.read_text(errors="replace").splitlines():
            size, _, where = line.partition(" ")
            if size.isdigit() and int(size) > limit:
                found.append(f"{where} took a file of {int(size) >> 20} MiB")
    total = 0
    for root, _, files in os.walk(trial_dir):
        for f in files:
            with contextlib.suppress(OSError):
                st = os.lstat(os.path.join(root, f))
                total += st.st_size if stat.S_ISREG(st.st_mode) else 0
    if total > 2 * limit:
        found.append(f"the trial dir on the host holds {total >> 20} MiB")
    return "; ".join(found)


async def _egress(suite: _Suite, root: Path, world: str) -> tuple[bool, str]:
    """The verifier phase's proxy refuses every embedded form of the host's loopback."""
    with loopback_listener() as (url, hits):
        port = url.rsplit(":", 1)[1]
        test_sh = _EGRESS_TEST_SH.replace("HOSTS", repr(list(EMBEDDED_LOOPBACK)))
        task = make_task(root, "egress", world_id=world)
        (task / "tests" / "test.sh").write_text(test_sh.replace("PORT", port))
        got = await suite.trial(task, "oracle", "egress")
    seen = got.trial_dir / "verifier" / "egress.json"
    said = seen.read_text() if seen.is_file() else got.describe()
    if hits:
        return False, f"the host's loopback listener was asked for {hits}; {said}"
    return got.reward == 1.0, said


async def _probe(suite: _Suite, task: Path) -> tuple[bool, str]:
    got = await suite.trial(task, "oracle", "probe")
    failures = suite.work / "trials" / "probe" / "verifier" / "probe.txt"
    said = failures.read_text().split() if failures.is_file() else []
    return got.reward == 1.0, ", ".join(said) or got.describe()


async def _diff(suite: _Suite, task: Path) -> tuple[bool, str]:
    got = await suite.trial(task, "oracle", "diff")
    if got.reward != 1.0:
        return False, got.describe()
    changes = _changes(got.trial_dir)
    listed = {k: sorted(changes.get(k, [])) for k in _DIFF_EXPECTED}
    return listed == _DIFF_EXPECTED, json.dumps(listed)


async def _memory_limit(suite: _Suite, task: Path) -> tuple[bool, str]:
    got = await suite.trial(task, "oracle", "memhog")
    refused = got.reward is None and "memory" in got.error.lower()
    return got.error_type == "SandboxLimitError" or refused, got.describe()


async def _refused(suite: _Suite, task: Path) -> tuple[bool, str]:
    got = await suite.trial(task, "oracle", "bad-limit")
    return got.reward is None and "environment.cpus" in got.error, got.describe()
