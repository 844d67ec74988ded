"""Soak test of the local sandbox: many trials, zero leaks.

    .venv/bin/python benchmarks/soak.py [-n 500] [--concurrency 8] [--no-gateway] [--hostile]

Runs N harbor trials through `kwrl.rollout.runner` in the local sandbox, cycling through three
kinds: the oracle (reward 1), the nop agent (reward 0), and an agent killed by its timeout
(a solve.sh that sleeps past a 1 s agent timeout); `--hostile` mixes in the hostile agents of
`kwrl.sandbox.conformance.testing.ATTACKS` (graded by the real grader, each on a task with the settings it is
meant for, `ATTACK_TASKS`; each must stay below reward 0.5 and be trained, not masked, when its
trial is taken alone (`kwrl.rollout.masking.trial_decision`), else the run prints BROKEN). Then
counts what this process left behind:
processes descending from it (the gateway zygote aside), bwrap processes of its sandboxes, mounts
of its sandbox roots, sandbox root dirs, and trial cgroups. Every count must be zero. With
`--hostile`, a loopback listener at `LISTENER_PORT` must hear nothing (LibreOffice grading
`lo_links`), no trial's sandbox.log may pass 64 KiB (`init_log`), and none may leave a host file
past its bound (`testing.host_file_breach`, `inode_breach`: `log_flood`, `output_flood`,
`inode_flood`), else BROKEN too.

`--hostile` also runs the judge attacks (`JUDGE_ATTACKS`: a final answer carrying every breakout
of the judge's prompt, a 300 KB answer for a judge too slow to read it), graded through
`attack_judge()`, a loopback judge that logs every request and says "met" to any breakout; each
must stay below 0.5 and be trained, and no request it logged may hold a breakout
(`kwrl.grading.judges.loopback.breakouts`), else BROKEN.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from collections import Counter
from pathlib import Path

os.environ.setdefault("HARBOR_TELEMETRY", "0")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] == "Z":
            continue
        children.setdefault(int(fields[1]), []).append(int(d.name))
    out, todo = [], [root]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def cmdline(pid: int) -> str:
    try:
        return (
            Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        )
    except OSError:
        return ""


def leaks(sandbox_dir: Path) -> dict[str, int]:
    from kwrl.sandbox.cgroups import leftovers

    me = os.getpid()
    prefix = f"{sandbox_dir}/{me}-"
    procs = [p for p in descendants(me) if "kwrl.sandbox.gateway.zygote" not in cmdline(p)]
    bwraps = [
        d.name for d in Path("/proc").iterdir()
        if d.name.isdigit() and cmdline(int(d.name)).startswith("bwrap") and prefix in cmdline(int(d.name))
    ]  # fmt: skip
    mounts = [line for line in Path("/proc/mounts").read_text().splitlines() if prefix in line]
    roots = list(sandbox_dir.glob(f"{me}-*")) if sandbox_dir.is_dir() else []
    cgroups = leftovers(me)  # every hierarchy, v1 or v2
    return {
        "processes": len(procs),
        "bwrap": len(bwraps),
        "mounts": len(mounts),
        "temp_dirs": len(roots),
        "cgroups": len(cgroups),
    }


async def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("-n", type=int, default=500)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--no-gateway", action="store_true")
    ap.add_argument("--hostile", action="store_true", help="mix in the hostile agents (ATTACKS)")
    args = ap.parse_args()
    from kwrl.grading.judges import judge_env
    from kwrl.grading.judges.loopback import breakouts
    from kwrl.rollout.masking import trial_decision
    from kwrl.rollout.runner import RolloutConfig, run_trial
    from kwrl.sandbox.conformance.testing import (
        ATTACK_TASKS,
        ATTACKS,
        JUDGE_ATTACKS,
        LISTENER_PORT,
        attack_judge,
        host_file_breach,
        inode_breach,
        loopback_listener,
        make_task,
        make_world,
    )

    port = LISTENER_PORT if args.hostile else 0
    with (
        tempfile.TemporaryDirectory(prefix="kwrl-soak-") as d,
        loopback_listener(port) as (_, heard),
        attack_judge() as judge,
    ):
        tmp = Path(d)
        sandbox_dir = tmp / "sbx"
        world = make_world(tmp).name
        kinds = {
            "oracle": (make_task(tmp, "oracle", world_id=world), "oracle"),
            "nop": (make_task(tmp, "nop", world_id=world), "nop"),
            "timeout": (
                make_task(tmp, "timeout", world_id=world, solution="sleep", agent_timeout_sec=1),
                "oracle",
            ),
        }
        judged = set(JUDGE_ATTACKS) if args.hostile else set()
        hostile = set(ATTACKS) | judged if args.hostile else set()
        for name in sorted(hostile):
            task = make_task(
                tmp,
                name,
                world_id=world,
                solution=name,
                grader="kwrl",
                **ATTACK_TASKS.get(name, {}),
            )
            kinds[name] = (task, "oracle")
        env_kwargs = {"gateway": not args.no_gateway, "sandbox_dir": str(sandbox_dir)}
        broken: list[str] = []
        judge_broken: list[str] = []  # the judge attacks' share of `broken`
        print(f"before: {leaks(sandbox_dir)}")
        sem = asyncio.Semaphore(args.concurrency)
        outcomes: Counter[str] = Counter()
        t0 = time.perf_counter()

        async def one(i: int) -> None:
            kind = list(kinds)[i % len(kinds)]
            task, agent = kinds[kind]
            verifier_env = judge_env(judge.spec, {}) if kind in judged else {}
            cfg = RolloutConfig(
                agent=agent, retries=0, environment_kwargs=env_kwargs, verifier_env=verifier_env
            )
            async with sem:
                rec = await run_trial(task, cfg, tmp / "trials", f"{kind}-{i:04d}")
            outcomes[f"{kind}:{rec.cause}:{rec.reward}"] += 1
            log = Path(rec.trial_dir) / "sandbox.log"
            if kind in hostile and log.is_file() and log.stat().st_size > 64 * 1024:
                broken.append(f"{log}: {log.stat().st_size} bytes")
            storage_mb = ATTACK_TASKS.get(kind, {}).get("storage_mb", 10240)
            past = [
                host_file_breach(Path(rec.trial_dir)),
                inode_breach(Path(rec.trial_dir), storage_mb),
            ]
            if kind in hostile and any(past):
                broken.append(f"{rec.trial_dir}: {'; '.join(b for b in past if b)}")
            high = rec.reward is not None and rec.reward >= 0.5
            if kind in hostile and (high or not trial_decision(rec.cause, rec.reward).trained):
                broken.append(f"{rec.trial_dir} ({rec.cause}, {rec.reward})")
                if kind in judged:
                    judge_broken.append(broken[-1])
            done = sum(outcomes.values())
            if done % 50 == 0:
                print(f"  {done} trials done, {time.perf_counter() - t0:.0f} s", flush=True)

        await asyncio.gather(*(one(i) for i in range(args.n)))
        if heard:
            broken.append(f"the loopback listener was asked for {heard}")
        escaped = [b for r in judge.requests for b in breakouts(r["body"])]
        if escaped:
            judge_broken.append(
                f"the judge read agent text outside its block: {sorted(set(escaped))}"
            )
            broken.append(judge_broken[-1])
        secs = time.perf_counter() - t0
        after = leaks(sandbox_dir)
        print(
            f"{args.n} trials in {secs:.0f} s ({args.n / secs:.2f}/s), concurrency {args.concurrency}"
        )
        for k, v in sorted(outcomes.items()):
            print(f"  {k}: {v}")
        print(f"after:  {after}")
        print("LEAKS: none" if not any(after.values()) else f"LEAKS: {after}")
        if hostile:
            print(f"BROKEN: {broken}" if broken else "hostile agents: every reward < 0.5, trained")
            runs = sum(v for k, v in outcomes.items() if k.split(":")[0] in judged)
            print(
                f"judge attacks BROKEN: {judge_broken}"
                if judge_broken
                else f"judge attacks ({', '.join(sorted(judged))}): {runs} trials, every reward "
                f"< 0.5, trained; {len(judge.requests)} judge requests, none with a breakout"
            )


if __name__ == "__main__":
    asyncio.run(main())
