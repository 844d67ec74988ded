"""Does RL after the SFT warm start beat the SFT checkpoint on held-out generated tasks? (CPU)

    .venv/bin/python benchmarks/learning.py [--out runs/learning] [--seed 0] [--train-worlds 4]
        [--heldout-worlds 24] [--rl-steps 8] [--rl-lr 1e-4] [--lora-rank 16]
        [--micro-batch-size 4] [--eval-samples 1] [--eval-temperature 1.0] [--eval-seed 0]
        [--concurrency 8] [--json OUT]

Everything runs through the real path, as `kwrl smoke` does: `kwrl data synth` worlds (easy
tier), the SFT warm start of the packaged SmolLM2-135M on gold trajectories of the training
worlds' tasks, then GRPO + DPPO steps of the single-machine trainer over real harbor trials
(local sandbox, KwrlAgent, in-process engine), and two evaluations on tasks of *other* worlds
(another synth seed: other companies, people, files and figures), with the same samples and
settings: the SFT checkpoint and the RL checkpoint. RL trains LoRA adapters (rank 16, lr 1e-4)
by default: with 16 trials a step, full fine-tuning moved every weight along mostly-noise
gradients and the held-out score did not rise (`--lora-rank 0 --rl-lr 2e-5` runs it; see
docs/results/HISTORY.md). Both checkpoints are evaluated as the policy RL trains, sampling at the
rollouts' temperature (1.0), one trial on each of the 24 held-out worlds' tasks: RL raises the
expected score of the distribution it samples from, and that is what this measures. Greedy
decoding (`--eval-temperature 0`) measures the argmax policy instead, which RL moves less. Both
evaluations are seeded alike (`--eval-seed`: trial (task, k) draws from the same seed under
either checkpoint, common random numbers), so where the two policies agree their trials agree.
The comparison is paired by task (`kwrl report --compare`): the mean over tasks of (RL mean
score - SFT mean score), with a 95% bootstrap interval over tasks. It passes when the
interval's lower end is above zero.

A rerun with the same --out keeps what finished (data, SFT checkpoint, evaluations) and resumes
RL from its last checkpoint (so a larger --rl-steps continues the same run); evaluations go to
folders named by checkpoint and settings (OUT/eval-sft-t1x1-seed0,
OUT/eval-rl-step8-t1x1-seed0), so other --eval-* settings evaluate anew. Prints a table and
writes OUT/learning.json, the paired plot (OUT/eval-rl-stepN-tTxK-seedS/compare.html) and the
two evaluation reports. Sizes default to what fits the 60-minute CPU budget on 2 cores.
"""

from __future__ import annotations

import os

# As the `kwrl` command does (kwrl/cli.py): idle OpenMP workers sleep, before torch is imported.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from kwrl.agent.config import AgentConfig
from kwrl.io import write_json
from kwrl.train.learning import Stages, interval, make_splits
from kwrl.train.smoke import SMOKE_TOOLS, easy_only, evaluate_engine, rl_steps


def agent_settings(a: argparse.Namespace) -> dict[str, Any]:
    return {
        "tools": SMOKE_TOOLS,
        "max_steps": a.max_steps,
        "max_tokens_per_turn": a.max_tokens_per_turn,
        "context_window": 4096,
        "tool_prompt": "compact",
        "tool_result_max_chars": a.tool_result_max_chars,
    }


def evaluate(a: argparse.Namespace, dataset: Path, model_dir: Path, out: Path) -> dict[str, Any]:
    agent = AgentConfig(**agent_settings(a), temperature=a.eval_temperature)
    return evaluate_engine(
        dataset, model_dir, out, agent, n_samples=a.eval_samples, concurrency=a.concurrency,
        sample_seed=a.eval_seed,
    )  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path("runs/learning"))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--train-worlds", type=int, default=4)
    ap.add_argument("--heldout-worlds", type=int, default=24)
    ap.add_argument("--tasks-per-world", type=int, default=24)
    ap.add_argument("--sft-epochs", type=int, default=2)
    ap.add_argument("--sft-lr", type=float, default=5e-5)
    ap.add_argument("--rl-steps", type=int, default=8)
    ap.add_argument("--prompts-per-step", type=int, default=4)
    ap.add_argument("--samples-per-prompt", type=int, default=4)
    ap.add_argument("--rl-lr", type=float, default=1e-4)
    ap.add_argument(
        "--micro-batch-size", type=int, default=4,
        help="trials per learner forward/backward (a group's trials in one micro-batch run their "
        "shared prompt once)",
    )  # fmt: skip
    ap.add_argument(
        "--lora-rank", type=int, default=16, help="RL with LoRA adapters (0: full fine-tuning)"
    )
    ap.add_argument("--lora-alpha", type=int, default=32)
    ap.add_argument("--eval-samples", type=int, default=1)
    ap.add_argument(
        "--eval-temperature", type=float, default=1.0, help="1.0: the RL rollouts'; 0: greedy"
    )
    ap.add_argument(
        "--eval-seed", type=int, default=0,
        help="both evaluations sample trial (task, k) from the same seed (common random numbers); "
        "-1: unseeded",
    )  # fmt: skip
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--max-steps", type=int, default=3)
    ap.add_argument("--max-tokens-per-turn", type=int, default=96)
    ap.add_argument("--tool-result-max-chars", type=int, default=1500)
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args()

    from kwrl.eval.report import write_compare
    from kwrl.train.local import train
    from kwrl.train.local.config import LoRAConfig, RLConfig, TrainConfig
    from kwrl.train.local.learner import LearnerConfig
    from kwrl.train.local.sft import SFTConfig, sft

    console = Console()
    out = a.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    t_start = time.perf_counter()
    stages = Stages(out, console)
    done, times, resumed = stages.done, stages.times, stages.resumed

    t = time.perf_counter()
    sets = {"train": (a.train_worlds, a.seed), "heldout": (a.heldout_worlds, a.seed + 1000)}
    tasks, generated = make_splits(out, sets, a.tasks_per_world, easy_only)
    done(
        f"data: {len(tasks['train'])} training, {len(tasks['heldout'])} held-out easy tasks",
        "data",
        t,
        generated,
    )

    t = time.perf_counter()
    done_sft = sorted((out / "sft" / "checkpoints").glob("step-*/model"))
    sft_model = done_sft[-1] if done_sft else sft(
        SFTConfig(
            dataset=out / "data-train", out=out / "sft", model="smollm2-135m",
            epochs=a.sft_epochs, batch_size=4, lr=a.sft_lr, seed=a.seed, agent=agent_settings(a),
        ),
        console=console,
    )  # fmt: skip
    done("SFT warm start", "sft", t, not done_sft)

    t = time.perf_counter()
    if a.eval_seed < 0:
        a.eval_seed = None
    settings = f"t{a.eval_temperature:g}x{a.eval_samples}" + (
        f"-seed{a.eval_seed}" if a.eval_seed is not None else ""
    )
    eval_sft = out / f"eval-sft-{settings}"
    ran = not (eval_sft / "eval.json").is_file()
    before = evaluate(a, out / "data-heldout", sft_model, eval_sft)
    done("eval SFT checkpoint on held-out tasks", eval_sft.name, t, ran)

    t = time.perf_counter()
    tcfg = TrainConfig(
        dataset=out / "data-train", out=out / "rl", model=str(sft_model), seed=a.seed,
        rl=RLConfig(
            prompts_per_step=a.prompts_per_step, samples_per_prompt=a.samples_per_prompt,
            steps=a.rl_steps, epochs=100, ckpt_every=a.rl_steps,
        ),
        learner=LearnerConfig(lr=a.rl_lr, micro_batch_size=a.micro_batch_size),
        lora=LoRAConfig(rank=a.lora_rank, alpha=a.lora_alpha), agent=agent_settings(a),
        concurrency=a.concurrency, tensorboard=True,
    )  # fmt: skip
    steps_before = max(
        (int(p.name[5:]) for p in (out / "rl" / "checkpoints").glob("step-*")), default=0
    )
    state = train(tcfg)
    rl_model = out / "rl" / "checkpoints" / f"step-{state.step:06d}" / "model"
    done(f"RL: {state.step} steps", "rl", t, state.step > steps_before, add=True)

    t = time.perf_counter()
    eval_rl = out / f"eval-rl-step{state.step}-{settings}"  # more --rl-steps: evaluated anew
    ran = not (eval_rl / "eval.json").is_file()
    after = evaluate(a, out / "data-heldout", rl_model, eval_rl)
    done("eval RL checkpoint on held-out tasks", eval_rl.name, t, ran)

    compare_path, data = write_compare(eval_rl, eval_sft)
    paired = data["paired"]["mean_score"]
    metrics = rl_steps(out / "rl" / "metrics.jsonl")
    result = {
        # the benchmark's cost: its stages' seconds when they ran (this run or earlier ones)
        "seconds": round(sum(times.values()), 1),
        "stages_s": times,
        "this_run_seconds": round(time.perf_counter() - t_start, 1),
        "resumed_stages": resumed,
        "cpu_count": os.cpu_count(),
        "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(a).items()},
        "train_tasks": len(tasks["train"]),
        "heldout_tasks": len(tasks["heldout"]),
        "sft_mean_score": before["metrics"]["overall"]["mean_score"],
        "rl_mean_score": after["metrics"]["overall"]["mean_score"],
        "paired_diff": paired,
        "n_shared_tasks": data["paired"]["n_shared_tasks"],
        "tasks_up_down_same": [data["paired"][k] for k in ("up", "down", "same")],
        "diff_by_domain": data["paired"]["by_domain"],
        "rl_steps": metrics,
        "passed": (paired["lo"] or 0.0) > 0,
        "compare_html": str(compare_path),
    }
    write_json(out / "learning.json", result)
    if a.json:
        write_json(a.json, result)

    fmt = interval
    table = Table(title="RL vs SFT on held-out generated tasks (paired by task)")
    table.add_column("what")
    table.add_column("value")
    table.add_row(
        "held-out tasks x samples",
        f"{result['heldout_tasks']} x {a.eval_samples} at temperature {a.eval_temperature:g}",
    )
    table.add_row("SFT checkpoint mean score", fmt(result["sft_mean_score"]))
    table.add_row("RL checkpoint mean score", fmt(result["rl_mean_score"]))
    table.add_row("RL - SFT (95% CI over tasks)", fmt(paired))
    table.add_row("tasks up / down / same", " / ".join(map(str, result["tasks_up_down_same"])))
    table.add_row("RL reward by step", " ".join(f"{m['reward_mean']:.2f}" for m in metrics))
    table.add_row("passed (CI above 0)", str(result["passed"]))
    table.add_row("time (stages when they ran)", f"{result['seconds']} s {times}")
    if resumed:
        table.add_row("kept from earlier runs", ", ".join(resumed))
    table.add_row("compare page", str(compare_path))
    console.print(table)


if __name__ == "__main__":
    main()
