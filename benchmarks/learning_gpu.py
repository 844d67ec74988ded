"""Learning you can see on one GPU: RL after the SFT warm start, held-out worlds, all tiers.

    python benchmarks/learning_gpu.py [--out runs/learning-gpu] [--model qwen2.5-coder-0.5b]
        [--train-worlds 8] [--heldout-worlds 9] [--tasks-per-world 24] [--rl-steps 36]
        [--eval-every 9] [--prompts-per-step 8] [--samples-per-prompt 8] [--concurrency 96]
        [--time-budget-s S] [--no-base-eval] [--rollout-engine vllm|engine] [--device cuda:0]
        [--mode async|sync] [--max-staleness 1] [--[no-]dynamic] [--oversample 1.5]
        [--max-sample-factor 3] [--[no-]steer] [--[no-]discover] [--heldout-family chat-post]

The GPU version of `benchmarks/learning.py`, one command, every stage the real one:
1. `kwrl data synth` training worlds (seed S) and held-out worlds (seed S+1000: other companies,
   people, files, figures; no world in both), every tier (easy, medium, hard) and every family,
   those that produce files (sheets, documents, decks, mail, chat posts) included;
2. the base model evaluated on the held-out tasks (`--no-base-eval` skips it), in a child
   process, so its engine leaves the GPU before the trainer's starts;
3. the SFT warm start of the packaged Qwen2.5-Coder-0.5B-Instruct on gold trajectories of the
   training tasks, on the GPU (`SFTConfig.device`);
4. GRPO + DPPO steps of `kwrl train` (sync) with `rollout_engine = "vllm"`: vLLM in this process
   on the learner's GPU, real harbor trials in the local sandbox, the grader's machine checks;
   the trainer evaluates the held-out tasks with its own engine (`[heldout]`) at step 0 (the warm
   start), every `--eval-every` steps and at the last: the learning curve;
5. the paired comparison (`kwrl report --compare`, common random numbers via `--eval-seed`):
   last RL checkpoint minus warm start, mean over held-out tasks with a 95% bootstrap interval.

The levers, all on by default (`--no-...` turns each off): async generation overlapping the
learner (`--mode async`, staleness at most `--max-staleness`); dynamic sampling (`--dynamic`:
1.5x the tasks a step, the groups that scored alike dropped, refills up to 3x); pass-rate
steering (`--steer`: tasks whose recent trials all scored alike drawn less, never dropped); SFT on
gold trajectories with their discovery calls (`--discover`: the folders of a file the instruction
does not name are listed and the mail searched before the gold calls, as an agent must); and one
task family left out of SFT and RL altogether (`--heldout-family`), whose held-out tasks the
record compares at SFT and at the end. The record also holds per-family curves, informative
groups per step and the no-op control on the held-out set.

The agent is offered the tools the training tasks' gold solutions call plus the smoke's read tools
(`tools_for`), listed compactly (one line each: ~850 prompt tokens for 18 tools with Qwen's
tokenizer, so a 6,144-token window holds a whole trial); gold trajectories are at most ~2,900
tokens with their discovery calls and their longest turn ~210 tokens, hence 8 turns (the
longest discovered gold solution, reply-figure's, takes 7) of at most 320 tokens.

RL trains LoRA adapters (rank 32, lr 2e-4) by default: on CPU (learning.py, HISTORY.md) full
fine-tuning at a few dozen trials a step moved every weight along mostly-noise gradients and
the held-out score did not rise, while LoRA at 1e-4 did; adapters also keep the learner's
optimizer state and checkpoints small (a resumable run writes several). `--lora-rank 0
--rl-lr 1e-5` trains every weight. The defaults are the run docs/gpu.md reports (lent H100,
2026-12-06, session 22: 36 steps at lr 2e-4, RL - SFT +0.162 [0.123, 0.199] on 216 held-out
tasks of 9 worlds).

Resume: rerunning the same command with the same --out keeps what finished (data, base eval, SFT
checkpoint) and resumes RL from its last checkpoint, held-out evaluations included (a killed
evaluation reruns only its missing trials). `--time-budget-s` stops cleanly before the budget
runs out: the trainer skips a step (or evaluation) that its predecessors' durations say would
not end in time, writes its checkpoint, and this script writes the JSON and HTML of what exists;
the next command goes on from there.

Writes OUT/learning_gpu.json (base, SFT and RL scores overall, per tier and per family, the paired
difference, each RL step's time split and graded trials per GPU-hour, answer checks of SFT and RL,
a sample of RL answers that passed) and OUT/learning_gpu.html (the curve and those tables), and
prints a table. On CPU, `--rollout-engine engine --device cpu --model DIR` runs the same logic at
a tiny size (tests/integration/test_learning_gpu.py).
"""

from __future__ import annotations

import os

# As the `kwrl` command does (kwrl/cli.py): idle OpenMP workers sleep, before torch is imported.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse
import html
import json
import multiprocessing
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from kwrl.agent.config import AgentConfig
from kwrl.io import write_json, write_text
from kwrl.train.learning import (
    Stages,
    answer_checks,
    breakdown,
    curve_svg,
    family_curves,
    family_of,
    interval,
    make_splits,
    noop_control,
    paired_subset,
)
from kwrl.train.smoke import RL_STEP_KEYS, SMOKE_TOOLS, evaluate_engine, rl_steps

WRITE_RESERVE_S = 45.0
"""Seconds kept free before the budget's end: the trainer's deadline is this much earlier, for the
comparison, the JSON and the HTML (and the trainer's own final checkpoint)."""


def tools_for(dataset: Path) -> list[str]:
    """The tools the dataset's gold solutions call, plus the smoke's read tools (discovery)."""
    tools = set(SMOKE_TOOLS)
    for f in sorted((dataset / "tasks").glob("*/solution/gold_calls.json")):
        tools.update(str(c["tool"]) for c in json.loads(f.read_text()))
    return sorted(tools)


def agent_settings(a: argparse.Namespace, tools: list[str]) -> dict[str, Any]:
    return {
        "tools": tools,
        "max_steps": a.max_steps,
        "max_tokens_per_turn": a.max_tokens_per_turn,
        "context_window": a.context_window,
        "tool_prompt": "compact",
        "tool_result_max_chars": a.tool_result_max_chars,
        "temperature": a.eval_temperature,
    }


def trial_settings(a: argparse.Namespace) -> dict[str, Any]:
    """How every trial runs (`TrialSettings` fields): the trainer's and the evaluations' alike."""
    kw: dict[str, Any] = {"sandbox": {}}
    if a.allow_missing_limits:  # cgroup v2 not delegated (containers, the lent GPU machine)
        kw["sandbox"]["allow_missing_limits"] = True
    return kw


def vllm_settings(a: argparse.Namespace) -> dict[str, Any]:
    got: dict[str, Any] = {
        "gpu_memory_utilization": a.vllm_memory,
        "max_model_len": a.context_window,
        "max_num_seqs": max(a.concurrency, a.eval_concurrency),
    }
    if kv := getattr(a, "kv_cache_gib", 0):
        # a fixed KV cache (learning_skyrl.py --kv-cache-gib): no free-memory profile, so the
        # engine can start beside another; the startup check then only needs this share free
        got["gpu_memory_utilization"] = 0.12
        got["extra"] = {"kv_cache_memory_bytes": int(kv * 2**30)}
    return got


def _evaluate_and_exit(**kw: Any) -> None:
    """The child's work: evaluate, then leave at once (eval.json is written; an in-process vLLM
    engine's threads are not waited for at interpreter exit)."""
    import sys

    evaluate_engine(**kw)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def base_eval(a: argparse.Namespace, model_dir: Path, out: Path, tools: list[str]) -> bool:
    """A model (the base model: OUT/eval-base-...) on the held-out tasks, in a child process;
    False when the deadline cut it (what finished is kept: the next run evaluates only the rest)."""
    kw: dict[str, Any] = dict(
        dataset=a.out / "data-heldout", model_dir=model_dir, out=out,
        agent=AgentConfig(**agent_settings(a, tools)), n_samples=1,
        concurrency=a.eval_concurrency, sample_seed=a.eval_seed, kind=a.rollout_engine,
        policy_config={"vllm": vllm_settings(a)} if a.rollout_engine == "vllm" else None,
        trial_settings=trial_settings(a),
    )  # fmt: skip
    # In a child process (on CPU too, so that path is the one tested): a second vLLM engine in
    # this process would hold its GPU memory to the end; a child's goes when the child exits.
    child = multiprocessing.get_context("spawn").Process(target=_evaluate_and_exit, kwargs=kw)
    child.start()
    child.join(timeout=max(a.deadline - time.time(), 1.0) if a.deadline else None)
    if child.is_alive():
        child.kill()
        child.join()
        return False
    if child.exitcode != 0:
        raise SystemExit(f"base evaluation in {out} failed (exit {child.exitcode})")
    return True


def _sft_summary(sft_dir: Path) -> dict[str, Any] | None:
    """What the warm start trained on (its checkpoint's trainer state): trajectories, the ones
    over max_len, whether discovery calls were in."""
    states = sorted(sft_dir.glob("checkpoints/step-*/trainer_state.json"))
    if not states:
        return None
    extra = json.loads(states[-1].read_text()).get("extra", {})
    return {k: extra.get(k) for k in ("trajectories", "skipped_over_max_len", "discover")}


def _eval_json(path: Path) -> dict[str, Any] | None:
    return json.loads((path / "eval.json").read_text()) if (path / "eval.json").is_file() else None


def step_summary(steps: list[dict[str, Any]]) -> dict[str, Any]:
    """RL step time split, summed over steps, and graded trials per GPU-hour of step time."""
    keys = (
        "step_s", "sample_s", "learner_s", "push_s", "trial_setup_s", "trial_agent_s",
        "trial_grading_s", "trial_policy_s", "trial_tools_s", "completion_tokens",
    )  # fmt: skip
    total = {k: round(sum(float(m.get(k) or 0.0) for m in steps), 2) for k in keys}
    graded = sum(int(m.get("graded") or 0) for m in steps)
    total["graded_trials"] = graded
    total["graded_trials_per_gpu_hour"] = (
        round(graded * 3600.0 / total["step_s"], 1) if total["step_s"] else None
    )
    groups = sum(int(m.get("groups") or 0) for m in steps)
    informative = sum(int(m.get("informative_groups") or 0) for m in steps)
    sampled = sum(int(m.get("tasks_sampled") or m.get("groups") or 0) for m in steps)
    informative_sampled = sum(
        int(m.get("informative_sampled", m.get("informative_groups")) or 0) for m in steps
    )
    total["groups_trained"] = groups
    total["informative_groups"] = informative
    total["informative_share_trained"] = round(informative / groups, 3) if groups else None
    total["tasks_sampled"] = sampled
    total["informative_share_sampled"] = (
        round(informative_sampled / sampled, 3) if sampled else None
    )
    total["informative_per_step"] = round(informative / len(steps), 2) if steps else None
    busy = [m["gpu_busy"] for m in steps if m.get("gpu_busy") is not None]
    total["gpu_busy_mean"] = round(sum(busy) / len(busy), 3) if busy else None
    # Which part bounds a step: the larger of sampling and learning, and inside sampling the
    # trials' largest phase (their sums: trials overlap).
    if total["step_s"]:
        learn = total["learner_s"] + total["push_s"]
        phases = {
            "generation": total["trial_policy_s"],
            "tool calls": total["trial_tools_s"],
            "grading": total["trial_grading_s"],
            "sandbox set-up": total["trial_setup_s"],
        }
        top = max(phases, key=lambda k: phases[k])
        # async steps overlap sampling with the learner: their shares add up to more than 1
        total["bound_by"] = (
            f"learner ({learn / total['step_s']:.0%} of step time)"
            if learn > total["sample_s"]
            else f"sampling ({total['sample_s'] / total['step_s']:.0%} of step time"
            + (", overlapping the learner" if total["sample_s"] + learn > total["step_s"] else "")
            + f"; of the trials' own time, {top} is the largest part)"
        )
    return total


STEP_KEYS = (
    *RL_STEP_KEYS, "step_s", "sample_s", "learner_s", "push_s", "trial_setup_s", "trial_agent_s",
    "trial_grading_s", "trial_policy_s", "trial_tools_s", "completion_tokens", "graded",
    "graded_trials_per_hour", "gpu_busy", "gpu_busy_sample", "gpu_busy_learn", "causes",
    "staleness", "groups", "informative_groups", "tasks_sampled", "trials_sampled",
    "sample_waves", "informative_sampled", "sampler_passed_over", "reward_sampled_mean",
    "task_rewards",
)  # fmt: skip
"""What the record keeps of each RL step's metrics line: reward, loss and the time split."""


def page(result: dict[str, Any], svg: str) -> str:
    """learning_gpu.html: the curve and the record's tables, one self-contained file."""
    e = html.escape

    def table(head: list[str], rows: list[list[Any]]) -> str:
        th = "".join(f"<th>{e(str(h))}</th>" for h in head)
        trs = "".join("<tr>" + "".join(f"<td>{e(str(c))}</td>" for c in r) + "</tr>" for r in rows)
        return f"<table><tr>{th}</tr>{trs}</table>"

    def f3(x: Any) -> str:
        return f"{x:.3f}" if isinstance(x, int | float) else "-"

    runs = [k for k in ("base", "sft", "rl") if result["scores"].get(k)]
    parts = [
        "<!doctype html><meta charset='utf-8'><title>kwrl learning on one GPU</title>",
        "<style>body{font-family:sans-serif;max-width:1000px;margin:2em auto}"
        "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;"
        "padding:2px 8px;text-align:right}pre{white-space:pre-wrap;background:#f6f6f6;"
        "padding:6px}</style>",
        f"<h1>Learning on one GPU: {e(result['args']['model'])}</h1>",
        f"<p>{e(result['status'])}</p>",
        svg,
        "<h2>Held-out mean score</h2>",
        table(
            ["what", "value"],
            [[k, interval(result["scores"].get(k))] for k in runs]
            + [["RL - SFT (paired, 95% CI over tasks)", interval(result.get("paired_diff"))]],
        ),
        "<h2>Curve</h2>",
        table(
            ["step", "held-out mean score", "trials", "seconds"],
            [
                [h["step"], interval(h["mean_score"]), h["n_trials"], f3(h.get("seconds"))]
                for h in result["heldout_curve"]
            ],
        ),
    ]
    for kind in ("tier", "family"):
        keys = sorted({k for r in runs for k in result["breakdown"][r][kind]})
        parts += [
            f"<h2>By {kind}</h2>",
            table(
                [kind, *runs, "n"],
                [
                    [k]
                    + [f3(result["breakdown"][r][kind].get(k, {}).get("mean")) for r in runs]
                    + [max(result["breakdown"][r][kind].get(k, {}).get("n", 0) for r in runs)]
                    for k in keys
                ],
            ),
        ]
    fam_curves = result.get("family_curves") or {}
    curve_steps = sorted({int(pt[0]) for pts in fam_curves.values() for pt in pts})
    parts += [
        "<h2>Per-family held-out curves</h2>",
        table(
            ["family", *[f"step {st}" for st in curve_steps]],
            [
                [fam] + [f3(dict((int(x), y) for x, y in pts).get(st)) for st in curve_steps]
                for fam, pts in fam_curves.items()
            ],
        ),
    ]
    fam = result.get("heldout_family")
    if fam:
        parts += [
            f"<h2>Held-out family {e(fam['family'])} (left out of SFT and RL)</h2>",
            table(
                ["tasks", "SFT", "RL", "RL - SFT (paired, 95% CI)", "up / down / same"],
                [[fam["tasks"], f3(fam["other"]), f3(fam["run"]), interval(fam["diff"]),
                  " / ".join(map(str, fam["up_down_same"]))]],
            ),
        ]  # fmt: skip
    parts += [
        "<h2>Levers, the no-op control, the warm start</h2>",
        f"<pre>{e(json.dumps({k: result.get(k) for k in ('levers', 'noop_control_heldout', 'sft')}, indent=1))}</pre>",
    ]
    checks = result["answer_checks"]
    check_rows = [
        [r, f3(c["multi_candidate_share"]), f3(c["timeout_or_limit_share"]),
         json.dumps(c["stop_reasons"])]
        for r, c in checks.items()
    ]  # fmt: skip
    step_head = [
        "step", "reward (sampled)", "informative/sampled groups", "trained/trials", "step s",
        "sample s", "learner s", "push s", "gen s (sum)", "grading s (sum)", "GPU busy",
        "trials/h",
    ]  # fmt: skip
    step_rows = [
        [m["step"], f3(m.get("reward_sampled_mean", m.get("reward_mean"))),
         f"{m.get('informative_groups')}/{m.get('tasks_sampled', m.get('groups'))}",
         f"{m.get('trainable_trials')}/{m.get('trials')}",
         f3(m.get("step_s")), f3(m.get("sample_s")), f3(m.get("learner_s")), f3(m.get("push_s")),
         f3(m.get("trial_policy_s")), f3(m.get("trial_grading_s")), f3(m.get("gpu_busy")),
         m.get("graded_trials_per_hour")]
        for m in result["rl_steps"]
    ]  # fmt: skip
    parts += [
        "<h2>Answer checks</h2>",
        table(["run", "names >1 candidate", "timeout or limit", "stop reasons"], check_rows),
        "<h2>RL steps: where the time went</h2>",
        table(step_head, step_rows),
        f"<pre>{e(json.dumps(result['rl_time'], indent=1))}</pre>",
    ]
    sample = (checks.get("rl") or {}).get("passed_sample") or []
    if sample:
        parts.append("<h2>RL answers that passed (sample)</h2>")
        parts += [f"<h3>{e(s['task'])}</h3><pre>{e(s['answer'])}</pre>" for s in sample]
    parts.append(f"<h2>Command</h2><pre>{e(result['command'])}</pre>")
    return "\n".join(parts)


def build_parser(doc: str | None = None) -> argparse.ArgumentParser:
    """This script's flags (benchmarks/learning_skyrl.py adds its own to the same set)."""
    ap = argparse.ArgumentParser(
        description=doc or __doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    ap.add_argument("--out", type=Path, default=Path("runs/learning-gpu"))
    ap.add_argument("--model", default="qwen2.5-coder-0.5b", help="packaged name or folder")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--train-worlds", type=int, default=8)
    ap.add_argument("--heldout-worlds", type=int, default=9)
    ap.add_argument("--tasks-per-world", type=int, default=24)
    ap.add_argument("--rollout-engine", choices=["vllm", "engine"], default="vllm")
    ap.add_argument("--device", default="cuda:0", help="the learner's and SFT's torch device")
    ap.add_argument("--vllm-memory", type=float, default=0.3, help="vLLM's share of the GPU")
    ap.add_argument("--base-eval", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--sft-epochs", type=int, default=2)
    ap.add_argument("--sft-lr", type=float, default=2e-5)
    ap.add_argument("--sft-batch-size", type=int, default=2)
    ap.add_argument("--rl-steps", type=int, default=36)
    ap.add_argument("--eval-every", type=int, default=9, help="held-out evaluation every N steps")
    ap.add_argument("--prompts-per-step", type=int, default=8)
    ap.add_argument("--samples-per-prompt", type=int, default=8)
    ap.add_argument("--rl-lr", type=float, default=2e-4)
    ap.add_argument("--lora-rank", type=int, default=32, help="0: full fine-tuning")
    ap.add_argument("--lora-alpha", type=int, default=64)
    ap.add_argument("--micro-batch-size", type=int, default=2)
    ap.add_argument("--learner-dtype", choices=["float32", "bfloat16"], default="float32")
    ap.add_argument("--eval-temperature", type=float, default=1.0, help="rollouts' and evals'")
    ap.add_argument(
        "--eval-seed", type=int, default=0,
        help="every evaluation samples trial (task, k) from the same seed (common random numbers)",
    )  # fmt: skip
    ap.add_argument(
        "--mode", choices=["async", "sync"], default="async",
        help="async: the next batch samples while the learner trains on this one",
    )  # fmt: skip
    ap.add_argument("--max-staleness", type=int, default=1, help="async: versions a batch may lag")
    ap.add_argument(
        "--dynamic", action=argparse.BooleanOptionalAction, default=True,
        help="dynamic sampling: oversample tasks, train informative groups, refill",
    )  # fmt: skip
    ap.add_argument(
        "--oversample", type=float, default=1.5, help="dynamic: tasks per missing group"
    )
    ap.add_argument("--max-sample-factor", type=float, default=3.0, help="dynamic: cap a step")
    ap.add_argument(
        "--steer", action=argparse.BooleanOptionalAction, default=True,
        help="draw tasks whose recent trials all scored alike less often (never dropped)",
    )  # fmt: skip
    ap.add_argument(
        "--heldout-family", default="chat-post",
        help="a task family left out of SFT and RL altogether, scored at SFT and at the end "
        "('' trains on every family)",
    )  # fmt: skip
    ap.add_argument(
        "--discover", action=argparse.BooleanOptionalAction, default=True,
        help="SFT on gold trajectories with their discovery calls (list folders, search mail)",
    )  # fmt: skip
    ap.add_argument("--concurrency", type=int, default=96, help="RL trials at once")
    ap.add_argument("--eval-concurrency", type=int, default=96, help="evaluation trials at once")
    ap.add_argument("--max-steps", type=int, default=8)
    ap.add_argument("--max-tokens-per-turn", type=int, default=320)
    ap.add_argument("--context-window", type=int, default=6144)
    ap.add_argument("--tool-result-max-chars", type=int, default=3000)
    ap.add_argument(
        "--allow-missing-limits", action="store_true",
        help="run trials without cgroup limits where cgroup v2 is not delegated",
    )  # fmt: skip
    ap.add_argument(
        "--time-budget-s", type=float, default=None,
        help="stop cleanly (checkpoint, JSON, HTML) this many seconds after starting",
    )  # fmt: skip
    ap.add_argument("--json", type=Path, default=None, help="also write the record here")
    return ap


def warm_start(
    a: argparse.Namespace, stages: Stages, console: Console, time_left: Callable[[], bool]
) -> tuple[dict[str, list[str]], list[str], list[str], Path | None]:
    """Stages 1-3: the data, the base evaluation (unless `--no-base-eval`) and the SFT warm
    start, each kept when it exists. Returns the tasks of each split, the tools offered, the
    training tasks (the held-out family left out) and the SFT model (None when out of time)."""
    import torch

    from kwrl.llm.packaged import resolve_model
    from kwrl.train.local.sft import SFTConfig, sft

    out = a.out
    t = time.perf_counter()
    sets = {"train": (a.train_worlds, a.seed), "heldout": (a.heldout_worlds, a.seed + 1000)}
    tasks, generated = make_splits(out, sets, a.tasks_per_world)
    tools = tools_for(out / "data-train")
    train_tasks = [t for t in tasks["train"] if family_of(t) != a.heldout_family]
    stages.done(
        f"data: {len(train_tasks)} training tasks ({len(tasks['train']) - len(train_tasks)} of "
        f"family {a.heldout_family or '-'} left out), {len(tasks['heldout'])} held-out tasks, "
        f"{len(tools)} tools offered",
        "data", t, generated,
    )  # fmt: skip
    base_dir = out / f"eval-base-{eval_settings(a)}"
    if a.base_eval and time_left():
        t = time.perf_counter()
        ran = not (base_dir / "eval.json").is_file()
        whole = base_eval(a, Path(resolve_model(a.model)), base_dir, tools)
        stages.done("eval base model on held-out tasks", base_dir.name, t, ran and whole)

    sft_model: Path | None = None
    if time_left():
        t = time.perf_counter()
        done_sft = sorted((out / "sft" / "checkpoints").glob("step-*/model"))
        sft_model = done_sft[-1] if done_sft else sft(
            SFTConfig(
                dataset=out / "data-train", out=out / "sft", model=a.model, epochs=a.sft_epochs,
                batch_size=a.sft_batch_size, lr=a.sft_lr, seed=a.seed, device=a.device,
                agent=AgentConfig(**agent_settings(a, tools)), tasks=train_tasks,
                discover=a.discover,
            ),
            console=console,
        )  # fmt: skip
        stages.done("SFT warm start", "sft", t, not done_sft)
        if torch.cuda.is_available():
            torch.cuda.empty_cache()  # the SFT model's memory, before vLLM measures what is free
    return tasks, tools, train_tasks, sft_model


def device_name() -> str:
    import torch

    return torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"


def eval_settings(a: argparse.Namespace) -> str:
    """The evaluation folders' suffix: temperature, samples and sample seed."""
    return f"t{a.eval_temperature:g}x1-seed{a.eval_seed}"


def main() -> None:
    a = build_parser().parse_args()
    import sys

    command = " ".join(["python", *sys.argv])
    t_start = time.time()
    a.out = a.out.resolve()
    a.deadline = t_start + a.time_budget_s - WRITE_RESERVE_S if a.time_budget_s else None

    import torch

    from kwrl.eval.report import write_compare
    from kwrl.train.local import train
    from kwrl.train.local.config import (
        DynamicSampling,
        HeldoutConfig,
        LoRAConfig,
        RLConfig,
        TrainConfig,
    )
    from kwrl.train.local.heldout import finished_steps, heldout_dir, summary_line
    from kwrl.train.local.learner import LearnerConfig
    from kwrl.train.local.sampler import Steering

    torch.set_float32_matmul_precision("high")  # TF32 matmuls on the GPU
    console = Console()
    out = a.out
    out.mkdir(parents=True, exist_ok=True)
    stages = Stages(out, console)

    def time_left() -> bool:
        return a.deadline is None or time.time() < a.deadline

    tasks, tools, train_tasks, sft_model = warm_start(a, stages, console, time_left)
    base_dir = out / f"eval-base-{eval_settings(a)}"

    state_step = 0
    if sft_model is not None and time_left():
        t = time.perf_counter()
        tcfg = TrainConfig(
            dataset=out / "data-train", out=out / "rl", model=str(sft_model), seed=a.seed,
            tasks=train_tasks,
            rl=RLConfig(
                prompts_per_step=a.prompts_per_step, samples_per_prompt=a.samples_per_prompt,
                steps=a.rl_steps, epochs=100, ckpt_every=max(a.eval_every, 1), mode=a.mode,
                max_staleness=a.max_staleness,
                dynamic=DynamicSampling(
                    on=a.dynamic, oversample=a.oversample, max_factor=a.max_sample_factor
                ),
                steer=Steering(on=a.steer),
            ),
            learner=LearnerConfig(
                lr=a.rl_lr, micro_batch_size=a.micro_batch_size, device=a.device,
                dtype=a.learner_dtype,
                gradient_checkpointing=True,  # H100: a 6k-token trial held GBs of attention a layer
                temperature=a.eval_temperature,
            ),
            lora=LoRAConfig(rank=a.lora_rank, alpha=a.lora_alpha),
            agent=AgentConfig(**agent_settings(a, tools)),
            rollout_engine=a.rollout_engine, vllm=vllm_settings(a),
            heldout=HeldoutConfig(
                dataset=out / "data-heldout", every=a.eval_every, sample_seed=a.eval_seed,
                concurrency=a.eval_concurrency,
            ),
            concurrency=a.concurrency, tensorboard=False, **trial_settings(a),
        )  # fmt: skip
        steps_before = max(
            (int(p.name[5:]) for p in (out / "rl" / "checkpoints").glob("step-*")), default=0
        )
        state_step = train(tcfg, deadline=a.deadline).step
        ran = state_step > steps_before or not (out / "rl" / "heldout.jsonl").is_file()
        stages.done(f"RL: {state_step} steps", "rl", t, ran, add=True)

    # ---- the record, from whatever exists
    curve_steps = finished_steps(out / "rl")
    curve = [summary_line(out / "rl", s) for s in curve_steps]
    evals = {
        "base": _eval_json(base_dir),
        "sft": _eval_json(heldout_dir(out / "rl", 0)) if 0 in curve_steps else None,
        "rl": _eval_json(heldout_dir(out / "rl", curve_steps[-1]))
        if curve_steps and curve_steps[-1] > 0
        else None,
    }
    paired, compare_html, ups, data = None, None, None, {}
    if evals["sft"] and evals["rl"]:
        compare_path, data = write_compare(
            heldout_dir(out / "rl", curve_steps[-1]), heldout_dir(out / "rl", 0)
        )
        paired, compare_html = data["paired"]["mean_score"], str(compare_path)
        ups = [data["paired"][k] for k in ("up", "down", "same")]
    family = None
    if data_paired := (data["paired"] if evals["sft"] and evals["rl"] else None):
        family = (
            paired_subset(data_paired["per_task"], a.heldout_family) if a.heldout_family else None
        )
    by_step = {s: _eval_json(heldout_dir(out / "rl", s)) for s in curve_steps}
    noop_path = out / "noop_control.json"
    if not noop_path.is_file():
        write_json(noop_path, noop_control(out / "data-heldout"))
    noop = json.loads(noop_path.read_text())
    steps = rl_steps(out / "rl" / "metrics.jsonl", STEP_KEYS)
    finished = (out / "rl" / "DONE").is_file()
    status = (
        f"complete: {state_step or len(steps)} RL steps"
        if finished
        else "incomplete (time budget): rerun the same command to resume"
    )
    result: dict[str, Any] = {
        "status": status,
        "complete": finished,
        "command": command,
        "seconds": stages.seconds,
        "stages_s": stages.times,
        "this_run_seconds": round(time.time() - t_start, 1),
        "resumed_stages": stages.resumed,
        "device": device_name(),
        "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(a).items()},
        "train_tasks": len(tasks["train"]),
        "heldout_tasks": len(tasks["heldout"]),
        "heldout_worlds": a.heldout_worlds,
        "tools": tools,
        "scores": {
            k: v["metrics"]["overall"]["mean_score"] if v else None for k, v in evals.items()
        },
        "pass_at_1": {
            k: v["metrics"]["overall"]["pass_at_1"] if v else None for k, v in evals.items()
        },
        "paired_diff": paired,
        "tasks_up_down_same": ups,
        "passed": bool(paired and (paired["lo"] or 0.0) > 0),
        "breakdown": {k: breakdown(v) for k, v in evals.items() if v},
        "answer_checks": {k: answer_checks(v) for k, v in evals.items() if v},
        "heldout_curve": curve,
        "family_curves": family_curves({s: e for s, e in by_step.items() if e}),
        "heldout_family": family,
        "noop_control_heldout": noop,
        "levers": {
            "mode": a.mode,
            "max_staleness": a.max_staleness,
            "dynamic": a.dynamic,
            "oversample": a.oversample,
            "max_sample_factor": a.max_sample_factor,
            "steer": a.steer,
            "discover": a.discover,
            "heldout_family": a.heldout_family,
            "max_steps": a.max_steps,
            "concurrency": a.concurrency,
        },
        "sft": _sft_summary(out / "sft"),
        "rl_steps": steps,
        "rl_time": step_summary(steps),
        "compare_html": compare_html,
    }
    svg = curve_svg(curve, steps, f"{a.model}: held-out mean score and training reward")
    write_json(out / "learning_gpu.json", result)
    write_text(out / "learning_gpu.html", page(result, svg))
    if a.json:
        write_json(a.json, result)

    table = Table(title=f"RL vs SFT on held-out generated tasks ({result['device']})")
    table.add_column("what")
    table.add_column("value")
    table.add_row("status", status)
    table.add_row("held-out tasks", f"{result['heldout_tasks']} of {a.heldout_worlds} worlds")
    for k in ("base", "sft", "rl"):
        table.add_row(f"{k} mean score", interval(result["scores"][k]))
    table.add_row("RL - SFT (paired, 95% CI)", interval(paired))
    if ups:
        table.add_row("tasks up / down / same", " / ".join(map(str, ups)))
    table.add_row(
        "curve (step: held-out mean)",
        "  ".join(f"{h['step']}: {h['mean_score']['value']:.3f}" for h in curve),
    )
    table.add_row("RL reward by step", " ".join(f"{m.get('reward_mean') or 0:.2f}" for m in steps))
    rt = result["rl_time"]
    table.add_row(
        "RL time (sums)",
        f"step {rt['step_s']} s = sample {rt['sample_s']} + learner {rt['learner_s']} + push "
        f"{rt['push_s']}; GPU busy {rt['gpu_busy_mean']}",
    )
    table.add_row("graded trials / GPU-hour", str(rt["graded_trials_per_gpu_hour"]))
    table.add_row(
        "informative groups",
        f"{rt['informative_groups']} of {rt['groups_trained']} trained "
        f"({rt['informative_per_step']} a step); of tasks sampled "
        f"{rt['informative_share_sampled']}",
    )
    if family:
        table.add_row(
            f"held-out family {family['family']} ({family['tasks']} tasks)",
            f"SFT {family['other']} -> RL {family['run']}: {interval(family['diff'])}",
        )
    table.add_row("no-op control (held-out criteria passed)", json.dumps(noop))
    table.add_row("bound by", str(rt.get("bound_by")))
    for k, c in result["answer_checks"].items():
        table.add_row(
            f"{k}: >1 candidate / timeout-or-limit",
            f"{c['multi_candidate_share']:.3f} / {c['timeout_or_limit_share']:.3f}",
        )
    table.add_row("time (stages when they ran)", f"{result['seconds']} s {stages.times}")
    table.add_row("record", f"{out / 'learning_gpu.json'}, {out / 'learning_gpu.html'}")
    console.print(table)


if __name__ == "__main__":
    main()
