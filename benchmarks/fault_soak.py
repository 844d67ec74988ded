"""Fault-injection soak: infrastructure faults must never reach the gradient, nor lose a trial.

    .venv/bin/python benchmarks/fault_soak.py [-n 10000] [--rate 0.05] [--kills 5] [--work DIR]
        [--concurrency 8] [--retries 4] [--pool 8] [--policy-share 0.03] [--synth 2] [--seed 0]

Builds, once, in `--work` (rerun the same command on the same dir to resume a run this script did
not finish), a dataset of cheap tasks: `gold` (the oracle's answer, a shell grader), `judged-<i>`
(the oracle's answer, one criterion only a judge grades), `nop` (a solution that does nothing),
hostile tasks (`kwrl.sandbox.conformance.testing.ATTACKS`, graded by kwrl's grader) and tasks `kwrl data synth`
generated (their gold calls replayed through the gateway). Then runs `kwrl eval --model oracle`
over it (about N trials: -k N / tasks) and `kwrl eval` of a scripted KwrlAgent policy over HTTP
(`kwrl.llm.loopback.LoopbackPolicy`, about `--policy-share` of N) on `gold`, both with the fault
injector on (`KWRL_FAULTS`, `kwrl.rollout.faults`: every kind at `--rate` per trial attempt where
it applies) and a loopback judge (`kwrl.grading.judges.loopback.LoopbackJudge`, whose fault routes
play the judge's faults). Each eval process is SIGKILLed `--kills` times at seeded points (a
`process_kill` each) and resumed by running it again, until it ends.

Prints: trials run (attempts) and samples, faults injected by kind, how each was classified,
samples whose final attempt was faulted and still trained (a fault the trial absorbed) and of
those scored other than the same trial unfaulted would be, an oracle below 1.0 (must be 0),
samples lost or counted twice across the kills (must be 0), retries, samples still without a
score after their retries (<= `--max-unscored`, 1%), leaks (processes, mounts, cgroups, sandbox
dirs) after the run, and the rewards of the trials not faulted: oracle (1.0), nop (0.0), hostile
(< 0.5, trained). The last line is `SOAK: ok` or `SOAK: BROKEN (...)`; exit 0 or 1.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

os.environ.setdefault("HARBOR_TELEMETRY", "0")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

HOSTILE = ("hijack", "daemons", "gold_link", "kill_all", "disk", "clock", "hedge", "negation")
"""Cheap attacks of `ATTACKS` (each its own task with its `ATTACK_TASKS` settings)."""
NOP = "#!/usr/bin/env bash\ntrue\n"
JUDGED = 3
"""Tasks graded by the judge alone (`make_task(judged=True)`)."""
JUDGE_SETTINGS = {"KWRL_JUDGE_TIMEOUT_S": "3", "KWRL_JUDGE_MAX_RETRIES": "1",
                  "KWRL_JUDGE_BACKOFF_S": "0"}  # fmt: skip
"""The judge's settings in the soak: a hung judge costs seconds, not minutes."""
TOKENIZER = "qwen2.5-coder-0.5b"


def build(work: Path, synth_tasks: int) -> dict[str, str]:
    """The dataset at `work/data` (once) and each task's expected reward: "1", "0" or "<0.5"."""
    from kwrl.sandbox.conformance.testing import ATTACK_TASKS, make_task, make_world

    data, marker = work / "data", work / "data" / "expected.json"
    if marker.is_file():
        return json.loads(marker.read_text())
    data.mkdir(parents=True, exist_ok=True)
    world = make_world(data).name
    small: dict[str, Any] = {"storage_mb": 64, "memory_mb": 512}
    expected: dict[str, str] = {}
    make_task(data, "gold", world_id=world, **small)
    make_task(data, "nop", world_id=world, solve=NOP, **small)
    expected.update(gold="1", nop="0")
    for i in range(JUDGED):  # the judge's five faults apply only to these
        make_task(data, f"judged-{i}", world_id=world, grader="kwrl", judged=True, **small)
        expected[f"judged-{i}"] = "1"
    for name in HOSTILE:
        settings: dict[str, Any] = {**small, **ATTACK_TASKS.get(name, {})}
        make_task(data, name, world_id=world, solution=name, grader="kwrl", **settings)
        expected[name] = "<0.5"
    synth = work / "synth"
    argv = [sys.executable, "-m", "kwrl.cli", "data", "synth", "--out", str(synth),
            "--worlds", "1", "--tasks_per_world", str(synth_tasks), "--seed", "0"]  # fmt: skip
    if synth_tasks:
        subprocess.run(argv, check=True, capture_output=True)
    for part in ("worlds", "tasks") if synth_tasks else ():
        for d in (synth / part).iterdir():
            d.rename(data / part / d.name)
            if part == "tasks":
                expected[d.name] = "1"
    marker.write_text(json.dumps(expected))
    return expected


def gold_script(_prompt: str) -> list[str]:
    call = {"name": "code_execution_code_exec",
            "arguments": {"code": "echo 42 > /filesystem/answer.txt"}}  # fmt: skip
    return [f"<tool_call>\n{json.dumps(call)}\n</tool_call>", "The answer is 42."]


def run_eval(argv: list[str], env: dict[str, str], out: Path, total: int, kills: int,
             seed: int, log: Path, owners: list[int]) -> int:  # fmt: skip
    """Run `argv` (a `kwrl eval` writing `out`) to its end, SIGKILLing its process group `kills`
    times: the k-th kill once trials.jsonl holds about (k+1)/(kills+1) of `total` lines, at a
    seeded moment after that (mid-trial). Returns how many kills landed."""
    from kwrl.rollout.faults import unit

    landed = 0
    while True:
        with open(log, "a") as f:
            proc = subprocess.Popen(argv, env=env, stdout=f, stderr=f, start_new_session=True)
        owners.append(proc.pid)
        target = (landed + 1) * total // (kills + 1) if landed < kills else None
        while proc.poll() is None:
            if target is not None and _lines(out / "trials.jsonl") >= target:
                time.sleep(3 * unit(seed, str(out), str(landed)))
                if proc.poll() is not None:
                    # it ended on its own before the kill (its last trials, or a run already
                    # done): restarting it would meet the same target at once, for ever
                    return landed
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                landed += 1
                print(f"  killed {out.name} at {_lines(out / 'trials.jsonl')} samples "
                      f"({landed}/{kills})", flush=True)  # fmt: skip
                break
            time.sleep(0.5)
        else:
            return landed


def _lines(path: Path) -> int:
    try:
        return sum(1 for line in path.read_text().splitlines() if line.strip())
    except OSError:
        return 0


def leaks(sandbox_dir: Path, owners: list[int]) -> dict[str, int]:
    """What the run's eval processes (`owners`) left: processes of their sandboxes and zygotes,
    mounts, sandbox dirs (a trial's state is a dir named after its owner's pid; the files beside
    them are the per-host cache of compiled helpers, `init-<hash>` and `enter-<hash>`, kept on
    purpose; other processes' sandboxes are theirs), trial cgroups."""
    from kwrl.sandbox import cgroups

    procs = 0
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if str(sandbox_dir) in cmd or any(f" {pid} " in f" {cmd} " for pid in owners):
            procs += 1
    mounts = sum(str(sandbox_dir) in line for line in Path("/proc/mounts").read_text().splitlines())
    mine = {str(p) for p in owners}  # a sandbox dir is named `<owner pid>-...`
    dirs = (
        sum(d.is_dir() and d.name.split("-", 1)[0] in mine for d in sandbox_dir.iterdir())
        if sandbox_dir.is_dir()
        else 0
    )
    sup = cgroups.support()
    stale = [d for base in sup.bases.values() if base.is_dir() for d in base.iterdir()
             if d.is_dir() and d.name.split("-", 1)[0] in {str(p) for p in owners}]  # fmt: skip
    return {"processes": procs, "mounts": mounts, "sandbox_dirs": dirs, "cgroups": len(stale)}


def tally(run: Path, expected: dict[str, str], samples: int) -> dict[str, Any]:
    """Counts over one eval run dir (its trial dirs and trials.jsonl)."""
    from kwrl.rollout import faults
    from kwrl.rollout.masking import trial_decision
    from kwrl.rollout.runner import record_from_dir

    attempts: dict[str, dict[str, Any]] = {}
    for d in sorted((run / "trials").iterdir()) if (run / "trials").is_dir() else []:
        task, _, rest = d.name.partition("__s")
        rec = record_from_dir(d, task, int(rest.split("__")[0] or 0), 0)
        if rec is None:
            continue
        fault = faults.read(d)
        played = fault is not None and (not fault.get("host") or fault.get("at_s") is not None)
        attempts[d.name] = {"cause": str(rec.cause), "reward": rec.reward,
                            "natural": natural_cause(d),
                            "fault": fault["kind"] if played and fault else None}  # fmt: skip
    lines = [json.loads(x) for x in (run / "trials.jsonl").read_text().splitlines() if x.strip()]
    seen = Counter((o["task"], o["sample"]) for o in lines)
    want = {(t, s) for t in expected for s in range(samples)}
    out: dict[str, Any] = {
        "attempts": len(attempts),
        "samples": len(lines),
        "lost": len(want - set(seen)) if (run / "eval.json").is_file() else 0,
        "pending": 0 if (run / "eval.json").is_file() else len(want - set(seen)),
        "doubled": sum(n - 1 for n in seen.values() if n > 1),
        "faults": Counter(a["fault"] for a in attempts.values() if a["fault"]),
        "classified": Counter(
            f"{a['fault']} -> {a['cause']}"
            + (f" (without fault.json: {a['natural']})" if a["natural"] != a["cause"] else "")
            for a in attempts.values()
            if a["fault"]
        ),
        "faulted_trained": [],
        "faulted_zero": [],
        "unscored": 0,
        "rewards": {},
        "wrong_rewards": [],
    }
    for o in lines:
        final = attempts.get(Path(o["trial_dir"]).name, {})
        decision = trial_decision(faults_cause(o["cause"]), o["reward"])
        if not decision.trained:
            out["unscored"] += 1
        want_r = expected[o["task"]]
        r = o["reward"] if o["reward"] is not None else 0.0
        ok = r == 1.0 if want_r == "1" else r == 0.0 if want_r == "0" else r < 0.5
        if final.get("fault") and decision.trained:  # a fault the trial absorbed, or a mis-score
            out["faulted_trained"].append(o["trial_dir"])
            if not ok:
                out["faulted_zero"].append(f"{o['trial_dir']} ({final['fault']}, {o['reward']})")
        if final.get("fault") or not decision.trained:
            continue
        kind = {"1": "oracle", "0": "nop", "<0.5": "hostile"}[want_r]
        out["rewards"].setdefault(kind, Counter())[o["reward"]] += 1
        if not ok:
            out["wrong_rewards"].append(f"{o['trial_dir']} ({o['cause']}, {o['reward']})")
    return out


def natural_cause(trial_dir: Path) -> str:
    """The trial's cause read without its fault record (what the trial shows from inside)."""
    from harbor.models.trial.result import TrialResult

    from kwrl.rollout.failures import classify_result
    from kwrl.rollout.trial import read_json

    result = TrialResult.model_validate_json((trial_dir / "result.json").read_text())
    sandbox = read_json(trial_dir / "sandbox.json")
    report = sandbox if isinstance(sandbox, dict) else None
    return str(classify_result(result, report, trial_dir, host_faults=False))


def faults_cause(cause: str) -> Any:
    from kwrl.rollout.failures import FailureCause

    return FailureCause(cause)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    ap.add_argument("-n", type=int, default=10000, help="trials (samples) in all, about")
    ap.add_argument("--rate", type=float, default=0.05, help="chance of each fault kind a trial")
    ap.add_argument("--kills", type=int, default=5, help="SIGKILLs of each eval process")
    ap.add_argument("--work", type=Path, default=Path("/tmp/kwrl-fault-soak"))
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--retries", type=int, default=4, help="retries of an infrastructure failure")
    ap.add_argument(
        "--max-unscored",
        type=float,
        default=0.01,
        help="share of samples allowed without a score after their retries",
    )
    ap.add_argument("--pool", type=int, default=8, help="spare sandboxes (--sandbox.pool)")
    ap.add_argument("--policy-share", type=float, default=0.03,
                    help="share of N run by KwrlAgent over the loopback policy (0: none)")  # fmt: skip
    ap.add_argument("--synth", type=int, default=2, help="generated tasks (kwrl data synth)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--report", action="store_true", help="only count what --work holds")
    args = ap.parse_args()

    from kwrl.agent.tokenizer import load_tokenizer
    from kwrl.grading.judges.loopback import LoopbackJudge
    from kwrl.llm.loopback import LoopbackPolicy
    from kwrl.rollout.faults import FaultKind, FaultSettings

    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    expected = build(work, args.synth)
    sandbox_dir = work / "sbx"
    t0 = time.perf_counter()
    k = max(1, round(args.n * (1 - args.policy_share) / len(expected)))
    k_policy = round(args.n * args.policy_share)
    print(
        f"dataset: {len(expected)} tasks; oracle run -k {k} ({k * len(expected)} samples), "
        f"KwrlAgent run -k {k_policy} on gold; fault rate {args.rate:g} per kind",
        flush=True,
    )
    rates = {kind: args.rate for kind in FaultKind if kind is not FaultKind.PROCESS_KILL}
    tokenizer = load_tokenizer(TOKENIZER) if k_policy else None
    with LoopbackJudge() as judge, LoopbackPolicy(tokenizer, gold_script) as pol:
        settings = FaultSettings(seed=args.seed, rates=rates, judge=judge.spec, policy=pol.spec)
        env = {**os.environ, **settings.to_env(), **JUDGE_SETTINGS}
        common = ["--retries", str(args.retries), "-c", str(args.concurrency), "--judge",
                  judge.spec, "--sandbox.sandbox_dir", str(sandbox_dir), "--sandbox.pool",
                  str(args.pool), "--bootstrap.n_boot", "100"]  # fmt: skip
        kwrl = [sys.executable, "-m", "kwrl.cli", "eval"]
        runs = {
            "oracle": ([*kwrl, str(work / "data"), "--model", "oracle", "-k", str(k),
                        "--out", str(work / "run-oracle"), *common], k),
            "policy": ([*kwrl, str(work / "data" / "tasks" / "gold"), "--model", pol.spec,
                        "-k", str(k_policy), "--out", str(work / "run-policy"),
                        "--tokenizer", TOKENIZER, "--agent.tools", '["code_execution_*"]',
                        "--agent_timeout_sec", "60", "--agent.tool_call_timeout_s", "10", *common], k_policy),
        }  # fmt: skip
        if not k_policy:
            del runs["policy"]
        owners: list[int] = []  # the eval processes' pids (their sandboxes carry them)
        record = work / "kills.json"  # across resumed runs of this script
        kills: Counter[str] = Counter(json.loads(record.read_text()) if record.is_file() else {})
        for name, (argv, samples) in runs.items() if not args.report else ():
            total = samples * (len(expected) if name == "oracle" else 1)
            kills[name] += run_eval(argv, env, work / f"run-{name}", total, args.kills,
                                    args.seed, work / f"{name}.log", owners)  # fmt: skip
            record.write_text(json.dumps(kills))
    secs = time.perf_counter() - t0
    t = {"oracle": tally(work / "run-oracle", expected, k)}
    if k_policy:
        t["policy"] = tally(work / "run-policy", {"gold": "1"}, k_policy)
    left = leaks(sandbox_dir, owners)
    samples = sum(x["samples"] for x in t.values())
    attempts = sum(x["attempts"] for x in t.values())
    faults = sum((x["faults"] for x in t.values()), Counter())
    faults["process_kill"] = sum(kills.values())
    classified = sum((x["classified"] for x in t.values()), Counter())
    print(f"\n{attempts} trials run ({samples} samples) in {secs:.0f} s "
          f"({attempts / secs:.2f} trials/s), concurrency {args.concurrency}")  # fmt: skip
    print(f"faults injected: {dict(sorted(faults.items()))}")
    print("classified (fault -> cause of that attempt, and without the host's fault.json):")
    for key, n in sorted(classified.items()):
        print(f"  {key}: {n}")
    faulted_trained = [p for x in t.values() for p in x["faulted_trained"]]
    faulted_zero = [p for x in t.values() for p in x["faulted_zero"]]
    lost = sum(x["lost"] for x in t.values())
    doubled = sum(x["doubled"] for x in t.values())
    unscored = sum(x["unscored"] for x in t.values())
    print(
        f"samples whose final attempt was faulted and still trained: {len(faulted_trained)} "
        f"(the fault absorbed: a slow policy, a fault after the answer); of those scored other "
        f"than the same trial unfaulted (an oracle below 1.0): {len(faulted_zero)}"
    )
    print(f"samples lost: {lost}, counted twice: {doubled} (after {sum(kills.values())} kills)")
    pending = sum(x["pending"] for x in t.values())
    if pending:
        print(f"INCOMPLETE: {pending} samples not run yet (an eval still to finish: rerun)")
    print(
        f"retries: {attempts - samples}; samples without a score after retries: {unscored} "
        f"({100 * unscored / max(samples, 1):.2f}%)"
    )
    print(f"leaks: {left}")
    for name, x in t.items():
        for kind, rewards in sorted(x["rewards"].items()):
            shown = dict(sorted(rewards.items(), key=lambda kv: str(kv[0])))
            print(f"rewards not faulted ({name} run, {kind}): {shown}")
    wrong = [w for x in t.values() for w in x["wrong_rewards"]]
    broken = []
    if faulted_zero:
        broken.append(f"faulted and scored: {faulted_zero[:5]}")
    if lost or doubled:
        broken.append(f"lost {lost}, doubled {doubled}")
    if unscored > args.max_unscored * samples:
        broken.append(f"{unscored} samples without a score")
    if any(left.values()):
        broken.append(f"leaks {left}")
    if wrong:
        broken.append(f"wrong rewards: {wrong[:5]}")
    if pending:
        broken.append(f"{pending} samples not run yet")
    print("SOAK: ok" if not broken else f"SOAK: BROKEN ({'; '.join(broken)})")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
