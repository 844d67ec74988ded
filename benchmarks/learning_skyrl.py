"""SkyRL's own trainer learns on one GPU: kwrl's SFT warm start, SkyRL 0.3.0's loop, held-out gain.

    python benchmarks/learning_skyrl.py [--out runs/learning-skyrl] [--skyrl-steps 20]
        [--export-every 5] [--kwrl-record docs/results/learning_gpu-h100-s24.json]
        [--time-budget-s S] [--allow-missing-limits] [learning_gpu.py's flags]

The recipe's cluster path (SkyRL + Ray, `python -m kwrl.train.skyrl.main_train`) run as a user who
outgrows one machine runs it, against the same bar as kwrl's own trainer
(`benchmarks/learning_gpu.py`), one command that resumes:
1. the data and the SFT warm start of `learning_gpu.py` (its stages and flags: the same seed gives
   the same training and held-out worlds; an OUT shared with a `learning_gpu.py` run reuses its
   SFT model);
2. the SFT model on the held-out tasks: kwrl's evaluation (vLLM in a child process, one seeded
   sample a task, `--eval-seed`: common random numbers), OUT/eval-sft-...;
3. SkyRL's synchronous, colocated trainer (`scripts/skyrl/smoke_1gpu.sh`: vLLM and the FSDP learner
   share the GPU) from the SFT model on the same training tasks (the held-out family left out),
   with kwrl's generator, agent settings, sandbox and grader, the same group size and batch
   (`--prompts-per-step` x `--samples-per-prompt`), learning rate and LoRA rank and alpha, GRPO
   without std normalisation and DPPO (the recipe's hyperparameters), an HF export every
   `--export-every` steps; its console log is OUT/skyrl/train.log and the GPU's busy share is
   polled (`nvidia-smi`) while it runs;
4. the last export (a LoRA adapter, merged into the SFT model with peft) evaluated as in 2
   (OUT/eval-skyrl-stepN-...), paired by task with the SFT evaluation (`kwrl report --compare`);
   with time left, SkyRL's own `main_eval` (scripts/skyrl/eval_apex.sh) on the same export;
5. OUT/learning_skyrl.json and .html: SFT and SkyRL held-out means, the paired difference with its
   95% interval, SkyRL's per-step training reward, step time split (generation, learner, weight
   sync, the rest), logprob gap between its vLLM and its learner, GPU busy, graded trials per
   GPU-hour, and, with `--kwrl-record`, the same figures of kwrl's own run side by side.

What differs from kwrl's trainer is listed in the record (`differences`). `--time-budget-s` cuts
SkyRL's stage where the evaluation of its last export would no longer fit; the rerun of the same
command goes on from what exists (SkyRL itself is not resumed: its stage counts as done once cut).
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse
import contextlib
import html
import json
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))

import learning_gpu as G
import skyrl_steps

from kwrl.io import write_json, write_text
from kwrl.train.learning import Stages, curve_svg, interval, paired_subset

REPO = Path(__file__).resolve().parents[1]
EVAL_RESERVE_S = 240.0
"""Seconds kept (by default) for merging and evaluating the last export after SkyRL's stage is cut."""
DIFFERENCES = [
    "loop: SkyRL's synchronous trainer, vLLM and the FSDP learner colocated (sleep/wake between "
    "generation and training); kwrl's run overlaps generation with the learner (async, staleness 1)",
    "no dynamic sampling or pass-rate steering: SkyRL's zero-variance filter drops the groups that "
    "scored alike (their loss masked) instead of refilling the batch",
    "learner: FSDP2 in bf16 mixed precision with padded micro-batches (no FlashAttention-2 on the "
    "lent image); kwrl's learner is a plain torch module in fp32 with gradient checkpointing",
    "optimizer: the recipe's AdamW betas (0.9, 0.98), weight decay 0.01, grad clip 1.0 "
    "(kwrl: betas (0.9, 0.999), no weight decay, grad clip 1.0)",
    "loss reduction: SkyRL's prompt_mean (each group's tokens averaged, then groups); kwrl averages "
    "per trajectory",
    "weights reach vLLM as a LoRA adapter (SkyRL's FSDP LoRA sync) instead of merged weights",
]


def build_parser() -> argparse.ArgumentParser:
    ap = G.build_parser(__doc__)
    ap.set_defaults(out=Path("runs/learning-skyrl"), base_eval=False)
    ap.add_argument("--skyrl-steps", type=int, default=20, help="SkyRL training steps")
    ap.add_argument("--export-every", type=int, default=5, help="SkyRL HF export every N steps")
    ap.add_argument("--skyrl-lr", type=float, default=None, help="default: --rl-lr")
    ap.add_argument("--skyrl-micro-batch", type=int, default=4, help="SkyRL micro-batch per GPU")
    ap.add_argument("--skyrl-vllm-memory", type=float, default=0.5, help="SkyRL vLLM's GPU share")
    ap.add_argument(
        "--skyrl-eval", action=argparse.BooleanOptionalAction, default=True,
        help="also SkyRL's main_eval on the last export, when the budget leaves time",
    )  # fmt: skip
    ap.add_argument(
        "--skyrl-loop-eval", action=argparse.BooleanOptionalAction, default=True,
        help="SkyRL's trainer evaluates the held-out tasks at its last step (trainer.eval(), the "
        "evaluation main_eval runs, on the engine already up)",
    )  # fmt: skip
    ap.add_argument(
        "--kv-cache-gib", type=float, default=8.0,
        help="a fixed KV cache (GiB) for SkyRL's vLLM and kwrl's evaluation engines, so two can "
        "share the GPU: vLLM then skips its free-memory profile, which another process's "
        "release of memory would fail; 0: size it from the GPU share instead",
    )  # fmt: skip
    ap.add_argument(
        "--overlap-sft-eval", action=argparse.BooleanOptionalAction, default=True,
        help="evaluate the SFT model while SkyRL starts and trains (needs --kv-cache-gib)",
    )  # fmt: skip
    ap.add_argument(
        "--eval-reserve-s", type=float, default=EVAL_RESERVE_S,
        help="with --time-budget-s: seconds kept after SkyRL's stage for merging and evaluating "
        "its last export (SkyRL itself takes 3-4 minutes to start on an H100: Ray, vLLM's "
        "compile and CUDA graphs, the FSDP learner)",
    )  # fmt: skip
    ap.add_argument(
        "--skyrl-fallback-full", action=argparse.BooleanOptionalAction, default=True,
        help="if SkyRL with LoRA exits before its first step, run it again on full weights",
    )  # fmt: skip
    ap.add_argument(
        "--kwrl-record", type=Path, default=None,
        help="a learning_gpu.json of kwrl's own trainer, shown side by side",
    )  # fmt: skip
    return ap


def skyrl_overrides(
    a: argparse.Namespace, tools: list[str], root: Path, eval_tasks: int | None = None
) -> list[str]:
    """The overrides over scripts/skyrl/smoke_1gpu.sh that make SkyRL's run kwrl's GPU run.
    `eval_tasks`: the held-out prompts, evaluated as one batch (SkyRL's eval waits for each batch's
    slowest trial; kwrl.concurrency still bounds the trials at once)."""
    trials = a.prompts_per_step * a.samples_per_prompt
    seqs = max(trials, a.eval_concurrency) if a.skyrl_loop_eval else trials
    ov = [
        f"trainer.max_training_steps={a.skyrl_steps}",
        f"trainer.train_batch_size={a.prompts_per_step}",
        f"trainer.policy_mini_batch_size={a.prompts_per_step}",
        f"generator.n_samples_per_prompt={a.samples_per_prompt}",
        f"trainer.micro_train_batch_size_per_gpu={a.skyrl_micro_batch}",
        f"trainer.micro_forward_batch_size_per_gpu={a.skyrl_micro_batch}",
        f"trainer.policy.optimizer_config.lr={a.skyrl_lr or a.rl_lr}",
        f"trainer.seed={a.seed}",
        f"generator.sampling_params.max_generate_length={a.max_tokens_per_turn}",
        f"trainer.max_prompt_length={a.context_window}",
        f"generator.max_input_length={a.context_window}",
        "trainer.ckpt_interval=100000",
        f"trainer.hf_save_interval={a.export_every}",
        f"kwrl.concurrency={seqs}",
        # no more sequences than trials at once: fewer CUDA graphs to capture at vLLM's start
        f"generator.inference_engine.max_num_seqs={seqs}",
        f"kwrl.agent.max_steps={a.max_steps}",
        f"kwrl.agent.max_tokens_per_turn={a.max_tokens_per_turn}",
        "kwrl.agent.tool_prompt=compact",
        f"kwrl.agent.tool_result_max_chars={a.tool_result_max_chars}",
        "kwrl.agent.tools=[" + ",".join(tools) + "]",
    ]
    if a.kv_cache_gib > 0:
        # the startup check only needs this much free; the cache itself is the fixed size
        ov += [
            "generator.inference_engine.gpu_memory_utilization=0.15",
            "generator.inference_engine.engine_init_kwargs.kv_cache_memory_bytes="
            f"{int(a.kv_cache_gib * 2**30)}",
        ]
    else:
        ov.append(f"generator.inference_engine.gpu_memory_utilization={a.skyrl_vllm_memory}")
    if a.skyrl_loop_eval:
        ov += [
            f"data.val_data=['{root / 'heldout.parquet'}']",
            f"trainer.eval_interval={a.skyrl_steps}",
            "trainer.eval_before_train=false",
            f"trainer.eval_batch_size={eval_tasks or a.eval_concurrency}",
            "generator.eval_n_samples_per_prompt=1",
            f"generator.eval_sampling_params.max_generate_length={a.max_tokens_per_turn}",
            f"generator.eval_sampling_params.temperature={a.eval_temperature}",
        ]
    if a.lora_rank > 0:
        ov += [
            f"trainer.policy.model.lora.rank={a.lora_rank}",
            f"trainer.policy.model.lora.alpha={a.lora_alpha}",
            f"trainer.policy.model.lora.lora_sync_path={root / 'lora-sync'}",
        ]
    if a.allow_missing_limits:
        ov.append("kwrl.sandbox.allow_missing_limits=true")
    return ov


def skyrl_env(a: argparse.Namespace, model: Path, root: Path, run: str) -> dict[str, str]:
    """What scripts/skyrl/common.sh and smoke_1gpu.sh read."""
    return {
        **os.environ,
        "KWRL_SKYRL_ROOT": str(root),
        "RUN": run,
        "PYTHON": sys.executable,
        "MODEL": str(model),
        "TOOL_CALL_PARSER": "hermes",
        "DATASET": str(a.out / "data-train"),
        "MAX_MODEL_LEN": str(a.context_window),
        "SKYRL_DUMP_INFRA_LOG_TO_STDOUT": "1",
        "PYTHONUNBUFFERED": "1",
        "KWRL_JUDGE": "",
    }


class BusyPoll:
    """The GPU's busy share (`nvidia-smi`, the NVML figure kwrl's trainer polls), with times."""

    def __init__(self, period_s: float = 1.0) -> None:
        self.samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(period_s,), daemon=True)
        if shutil.which("nvidia-smi"):
            self._thread.start()

    def _run(self, period_s: float) -> None:
        cmd = ["nvidia-smi", "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits"]
        while not self._stop.wait(period_s):
            with contextlib.suppress(OSError, ValueError, subprocess.SubprocessError):
                v = subprocess.run(cmd, capture_output=True, text=True, timeout=10).stdout
                self.samples.append((time.time(), float(v.split()[0])))

    def mean(self, t0: float, t1: float) -> float | None:
        got = [v for t, v in self.samples if t0 <= t <= t1]
        return round(sum(got) / len(got) / 100.0, 3) if got else None

    def close(self) -> None:
        self._stop.set()


def run_skyrl(
    a: argparse.Namespace, model: Path, tools: list[str], train_tasks: list[str], console: Console
) -> dict[str, Any]:
    """Stage 3: SkyRL's trainer from `model`, cut at the deadline less EVAL_RESERVE_S. Returns
    what the stage saw: exit code, wall time, when each step's metrics block appeared, GPU busy."""
    from kwrl.train.skyrl.data import write_prompts

    root = a.out / "skyrl"
    run = "learn"
    shutil.rmtree(root / run, ignore_errors=True)
    (root / run).mkdir(parents=True)
    n = write_prompts(a.out / "data-train", root / run / "train.parquet", train_tasks)
    n_eval = (
        write_prompts(a.out / "data-heldout", root / "heldout.parquet")
        if a.skyrl_loop_eval
        else None
    )
    cmd = [
        "bash",
        str(REPO / "scripts" / "skyrl" / "smoke_1gpu.sh"),
        *skyrl_overrides(a, tools, root, n_eval),
    ]
    write_text(root / "command.txt", " ".join(cmd) + "\n")
    console.print(f"SkyRL: {n} training prompts, {a.skyrl_steps} steps, log {root / 'train.log'}")
    stop_at = a.deadline - a.eval_reserve_s if a.deadline else None
    busy = BusyPoll()
    seen: dict[int, float] = {}
    partial = ""
    t0 = time.time()
    with (root / "train.log").open("w") as log, (root / "train.log").open(errors="replace") as tail:
        proc = subprocess.Popen(
            cmd, stdout=log, stderr=subprocess.STDOUT, env=skyrl_env(a, model, root, run),
            cwd=REPO, start_new_session=True,
        )  # fmt: skip
        cut = False
        while proc.poll() is None:
            time.sleep(2.0)
            # what the log gained since the last look, its unfinished last line kept for the next
            *lines, partial = (partial + tail.read()).split("\n")
            for line in lines:
                if m := skyrl_steps._STEP.search(skyrl_steps._ANSI.sub("", line)):
                    seen.setdefault(int(m.group(1)), time.time())
            if stop_at is not None and time.time() > stop_at:
                cut = True
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
    busy.close()
    # Ray's workers and vLLM's server outlive the launcher's process group: stop them, so the
    # evaluation's engine finds the GPU free.
    subprocess.run([sys.executable, "-m", "ray.scripts.scripts", "stop", "--force"],
                   capture_output=True, check=False, timeout=120)  # fmt: skip
    t1 = time.time()
    steps = sorted(seen)
    starts = [seen.get(s - 1) for s in steps]
    per_step_busy = {
        s: busy.mean(st, seen[s]) for s, st in zip(steps, starts, strict=True) if st is not None
    }
    stage = {
        "exit": proc.returncode,
        "cut_at_deadline": cut,
        "wall_s": round(t1 - t0, 1),
        "prompts": n,
        "step_seen_s": {str(s): round(seen[s] - t0, 1) for s in steps},
        "gpu_busy_per_step": {str(k): v for k, v in per_step_busy.items()},
        "gpu_busy_mean_steps": (
            busy.mean(seen[steps[0]], seen[steps[-1]]) if len(steps) > 1 else None
        ),
        "gpu_busy_mean_stage": busy.mean(t0, t1),
    }
    write_json(root / "stage.json", stage)
    if cut or proc.returncode == 0 or steps:
        (root / "DONE").touch()  # a run that failed before its first step is tried again
    return stage


def last_export(root: Path) -> tuple[int, Path] | None:
    got = sorted(
        (int(p.parent.name.split("_")[-1]), p)
        for p in root.glob("learn/exports/global_step_*/policy")
        if any(p.iterdir())
    )
    return got[-1] if got else None


def merged(export: Path, base: Path, dest: Path) -> Path:
    """An export as a model folder: a LoRA adapter (SkyRL's FSDP export of a LoRA run) merged
    into `base` with peft, written to `dest` (temp folder, then rename); full weights as they are."""
    if not (export / "adapter_config.json").is_file():
        return export
    if (dest / "config.json").is_file():
        return dest
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    # in the SFT model's own dtype, so both evaluations load the weights alike
    model = AutoModelForCausalLM.from_pretrained(base, dtype="auto")
    model = PeftModel.from_pretrained(model, export).merge_and_unload()
    tmp = dest.with_name(dest.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp, safe_serialization=True)
    AutoTokenizer.from_pretrained(base).save_pretrained(tmp)
    tmp.replace(dest)
    return dest


def skyrl_main_eval(a: argparse.Namespace, model: Path, console: Console) -> dict[str, Any]:
    """SkyRL's own `main_eval` (scripts/skyrl/eval_apex.sh) on one model, on the held-out tasks."""
    from kwrl.train.skyrl.data import write_prompts

    root = a.out / "skyrl"
    val = root / "heldout.parquet"
    write_prompts(a.out / "data-heldout", val)
    left = int((a.deadline or time.time() + 600) - time.time() - 20)
    ov = [
        f"data.val_data=['{val}']", "trainer.placement.colocate_all=false",
        "generator.inference_engine.num_engines=1", "generator.inference_engine.tensor_parallel_size=1",
        "generator.inference_engine.gpu_memory_utilization=0.5",
        f"generator.inference_engine.engine_init_kwargs.max_model_len={a.context_window}",
        "generator.eval_n_samples_per_prompt=1",
        f"generator.eval_sampling_params.max_generate_length={a.max_tokens_per_turn}",
        "trainer.eval_batch_size=64", f"trainer.max_prompt_length={a.context_window}",
        f"generator.max_input_length={a.context_window}", "trainer.logger=console",
        "trainer.remove_microbatch_padding=false", "kwrl.sandbox.environment=local",
        f"kwrl.concurrency={a.eval_concurrency}", f"kwrl.agent.max_steps={a.max_steps}",
        f"kwrl.agent.context_window={a.context_window}", "kwrl.agent.tool_call_parser=hermes",
        "kwrl.agent.tool_prompt=compact", f"kwrl.agent.tool_result_max_chars={a.tool_result_max_chars}",
    ]  # fmt: skip
    if a.allow_missing_limits:
        ov.append("kwrl.sandbox.allow_missing_limits=true")
    env = {**skyrl_env(a, model, root, "main-eval"), "SANDBOX": "local"}
    t0 = time.time()
    with (root / "main_eval.log").open("w") as log:
        try:
            rc = subprocess.run(
                ["bash", str(REPO / "scripts" / "skyrl" / "eval_apex.sh"), *ov], stdout=log,
                stderr=subprocess.STDOUT, env=env, cwd=REPO, timeout=max(left, 30), check=False,
            ).returncode  # fmt: skip
        except subprocess.TimeoutExpired:
            rc = None
    subprocess.run([sys.executable, "-m", "ray.scripts.scripts", "stop", "--force"],
                   capture_output=True, check=False, timeout=120)  # fmt: skip
    metrics = eval_metrics(root / "main_eval.log")
    console.print(f"SkyRL main_eval: exit {rc}, {len(metrics)} metrics")
    return {"exit": rc, "wall_s": round(time.time() - t0, 1), "metrics": metrics}


def eval_metrics(log: Path) -> dict[str, float]:
    """SkyRL's `eval/...` metrics in a console log (main_eval's, or the trainer's own eval)."""
    text = log.read_text(errors="replace") if log.is_file() else ""
    return {
        m.group(1): float(m.group(2))
        for m in re.finditer(r"'(eval/[\w/.\-@]+)':\s*'?([-+0-9.eE]+)'?", text)
    }


def loop_eval_cell(loop: dict[str, float], progress: tuple[int, int] | None) -> str:
    """SkyRL's in-loop eval figure, or how far it got when the deadline cut it."""
    if "eval/all/avg_score" in loop:
        return eval_cell(loop)
    if progress and progress[0] < progress[1]:
        return f"cut after {progress[0]}/{progress[1]} eval batches"
    return "-"


def eval_cell(m: dict[str, float]) -> str:
    """SkyRL's `eval/all/avg_score` and, where some trials have no score (an infrastructure
    failure, which SkyRL averages as 0), kwrl's reading: the mean over those with one."""
    from kwrl.train.skyrl.main_eval import scored

    if "eval/all/avg_score" not in m:
        return "-"
    if (
        "eval/all/kwrl/trials" not in m
        or m.get("eval/all/kwrl/graded") == m["eval/all/kwrl/trials"]
    ):
        return str(m["eval/all/avg_score"])
    return f"{m['eval/all/avg_score']} ({scored(m)[0]})"


def skyrl_step_figures(log: Path, stage: dict[str, Any]) -> dict[str, Any]:
    """Per-step reward, time split and logprob gap from SkyRL's console log, and their sums."""
    text = log.read_text(errors="replace") if log.is_file() else ""
    steps = skyrl_steps.parse(text)
    rows = []
    for s in steps:
        part = skyrl_steps.split(s)
        rows.append({
            "step": int(s["step"]),
            "reward_mean": s.get("kwrl/mean_reward"),
            "trials": s.get("kwrl/trials"),
            # SkyRL 0.3.0's name; older releases logged rollout_train_logprobs_abs_diff_mean
            "logprob_gap_mean": s.get(
                "policy/minibatch_rollout_logprobs_abs_diff_mean",
                s.get("policy/rollout_train_logprobs_abs_diff_mean"),
            ),
            "gpu_busy": (stage.get("gpu_busy_per_step") or {}).get(str(int(s["step"]))),
            **{k: round(v, 2) for k, v in part.items()},
        })  # fmt: skip
    total = sum(r["total"] for r in rows)
    trials = sum(int(r["trials"] or 0) for r in rows)
    sums = {k: round(sum(r[k] for r in rows), 1) for k in (*skyrl_steps.PARTS, "other", "total")}
    gaps = [r["logprob_gap_mean"] for r in rows if r["logprob_gap_mean"] is not None]
    return {
        "steps": rows,
        # the last step's metrics block comes after its evaluation: a cut evaluation loses it
        "steps_trained": max(len(rows), skyrl_steps.steps_finished(text)),
        "loop_eval_progress": skyrl_steps.eval_progress(text),
        "sums_s": sums,
        "step_s_mean": round(total / len(rows), 1) if rows else None,
        "graded_trials": trials,
        "graded_trials_per_gpu_hour": round(trials * 3600.0 / total, 1) if total else None,
        "logprob_gap_mean": round(sum(gaps) / len(gaps), 4) if gaps else None,
        "gpu_busy_mean": stage.get("gpu_busy_mean_steps"),
    }


def kwrl_side(record: Path | None, step: int | None) -> dict[str, Any] | None:
    """kwrl's own run's figures (a learning_gpu.json): its curve point nearest `step`."""
    if record is None or not record.is_file():
        return None
    r = json.loads(record.read_text())
    curve = r.get("heldout_curve") or []
    near = min(curve, key=lambda h: abs(h["step"] - (step or 0))) if curve else None
    rt = r.get("rl_time") or {}
    steps = r.get("rl_steps") or []
    return {
        "record": str(record),
        "device": r.get("device"),
        "sft": (r.get("scores") or {}).get("sft"),
        "rl": (r.get("scores") or {}).get("rl"),
        "paired_diff_last": r.get("paired_diff"),
        "last_step": len(steps),
        "curve": [{"step": h["step"], "mean": h["mean_score"]["value"]} for h in curve],
        "nearest_step": near["step"] if near else None,
        "nearest_mean": near["mean_score"] if near else None,
        "reward_by_step": [m.get("reward_mean") for m in steps],
        "step_s_mean": round(rt["step_s"] / len(steps), 1) if steps and rt.get("step_s") else None,
        "sample_s": rt.get("sample_s"),
        "learner_s": rt.get("learner_s"),
        "push_s": rt.get("push_s"),
        "gpu_busy_mean": rt.get("gpu_busy_mean"),
        "graded_trials_per_gpu_hour": rt.get("graded_trials_per_gpu_hour"),
    }


def page(result: dict[str, Any], svg: str) -> str:
    e = html.escape
    rows = "".join(
        f"<tr><td>{e(str(k))}</td><td>{e(str(s))}</td><td>{e(str(w))}</td></tr>"
        for k, s, w in result["side_by_side"]
    )
    steps = "".join(
        "<tr>" + "".join(f"<td>{e(str(r.get(k)))}</td>" for k in STEP_COLS) + "</tr>"
        for r in result["skyrl"]["steps"]
    )
    head = "".join(f"<th>{e(k)}</th>" for k in STEP_COLS)
    diffs = "".join(f"<li>{e(d)}</li>" for d in result["differences"])
    return "\n".join([
        "<!doctype html><meta charset='utf-8'><title>SkyRL vs kwrl on one GPU</title>",
        "<style>body{font-family:sans-serif;max-width:70em;margin:auto}td,th{padding:2px 8px;"
        "border-bottom:1px solid #ddd;text-align:right}</style>",
        f"<h1>SkyRL's trainer from kwrl's SFT warm start</h1><p>{e(result['status'])}</p>", svg,
        "<h2>Side by side</h2><table><tr><th>figure</th><th>SkyRL</th><th>kwrl</th></tr>",
        rows, "</table>", f"<h2>SkyRL steps</h2><table><tr>{head}</tr>{steps}</table>",
        f"<h2>What differs</h2><ul>{diffs}</ul>",
        f"<h2>Command</h2><pre>{e(result['command'])}</pre>",
    ])  # fmt: skip


STEP_COLS = ("step", "reward_mean", "generate", "policy_train", "sync_weights", "other", "total",
             "logprob_gap_mean", "gpu_busy")  # fmt: skip


def _f(x: Any) -> str:
    return f"{x:.3f}" if isinstance(x, int | float) else "-"


def main() -> None:
    a = build_parser().parse_args()
    command = " ".join(["python", *sys.argv])
    t_start = time.time()
    a.out = a.out.resolve()
    a.deadline = t_start + a.time_budget_s - G.WRITE_RESERVE_S if a.time_budget_s else None
    console = Console()
    a.out.mkdir(parents=True, exist_ok=True)
    stages = Stages(a.out, console)

    def time_left() -> bool:
        return a.deadline is None or time.time() < a.deadline

    from kwrl.eval.report import write_compare

    _, tools, train_tasks, sft_model = G.warm_start(a, stages, console, time_left)
    settings = G.eval_settings(a)
    sft_dir = a.out / f"eval-sft-{settings}"
    root = a.out / "skyrl"
    sft_eval: dict[str, Any] = {}

    def eval_sft() -> None:
        assert sft_model is not None
        t = time.perf_counter()
        ran = not (sft_dir / "eval.json").is_file()
        try:
            sft_eval["whole"] = G.base_eval(a, sft_model, sft_dir, tools)
        except BaseException as e:  # a thread drops its SystemExit: kept to raise after join
            sft_eval["error"] = e
        sft_eval.update(t=t, ran=ran)

    def sft_eval_done() -> None:
        if "error" in sft_eval:
            raise sft_eval["error"]
        if "t" in sft_eval:
            stages.done("eval SFT model on held-out tasks", sft_dir.name, sft_eval["t"],
                        sft_eval["ran"] and sft_eval["whole"])  # fmt: skip

    # The SFT model's evaluation beside SkyRL's start and steps (two engines on one GPU: each
    # with a fixed KV cache, so neither profiles free memory the other changes), or before it.
    overlap = a.overlap_sft_eval and a.kv_cache_gib > 0 and not (root / "DONE").is_file()
    sft_thread = None
    if sft_model is not None and time_left():
        if overlap:
            sft_thread = threading.Thread(target=eval_sft, daemon=True)
            sft_thread.start()
        else:
            eval_sft()
            sft_eval_done()

    if sft_model is not None and not (root / "DONE").is_file() and time_left():
        t = time.perf_counter()
        got = run_skyrl(a, sft_model, tools, train_tasks, console)
        if not (root / "DONE").is_file() and a.lora_rank > 0 and a.skyrl_fallback_full:
            # LoRA on SkyRL's FSDP + vLLM path failed before a step: full weights at kwrl's
            # full-fine-tuning rate, as the record says (`skyrl_stage.fallback`)
            console.print(f"SkyRL with LoRA exited {got['exit']} before a step: full weights")
            a.lora_rank, a.skyrl_lr = 0, 1e-5
            got = run_skyrl(a, sft_model, tools, train_tasks, console)
            got["fallback"] = "full weights, lr 1e-5 (LoRA run exited before its first step)"
            write_json(root / "stage.json", got)
        stages.done("SkyRL trainer", "skyrl", t, True)
    if sft_thread is not None:
        sft_thread.join()
        sft_eval_done()
    stage = json.loads((root / "stage.json").read_text()) if (root / "stage.json").is_file() else {}

    export = last_export(root)
    run_dir, paired, data = None, None, {}
    if export is not None and sft_model is not None:
        step, path = export
        run_dir = a.out / f"eval-skyrl-step{step}-{settings}"
        t = time.perf_counter()
        ran = not (run_dir / "eval.json").is_file()
        model = merged(path, sft_model, root / f"merged-step{step}")
        whole = G.base_eval(a, model, run_dir, tools)
        stages.done(f"eval SkyRL step {step} on held-out tasks", run_dir.name, t, ran and whole)
        if whole and (sft_dir / "eval.json").is_file():
            _, data = write_compare(run_dir, sft_dir)
            paired = data["paired"]
        if (
            a.skyrl_eval
            and not (root / "main_eval.json").is_file()
            and (a.deadline is None or a.deadline - time.time() > 150)
        ):
            write_json(root / "main_eval.json", skyrl_main_eval(a, model, console))

    figs = skyrl_step_figures(root / "train.log", stage)
    evals = {k: G._eval_json(d) if d else None for k, d in (("sft", sft_dir), ("skyrl", run_dir))}
    scores = {k: v["metrics"]["overall"]["mean_score"] if v else None for k, v in evals.items()}
    kwrl = kwrl_side(a.kwrl_record, export[0] if export else None)
    family = (
        paired_subset(paired["per_task"], a.heldout_family) if paired and a.heldout_family else None
    )
    complete = bool(export and paired)
    diff = paired["mean_score"] if paired else None
    loop = eval_metrics(root / "train.log")
    main_eval = (
        json.loads((root / "main_eval.json").read_text())
        if (root / "main_eval.json").is_file()
        else None
    )
    main = main_eval["metrics"] if main_eval else {}
    side = [
        ("device", G.device_name(), kwrl and kwrl["device"]),
        ("steps trained", figs["steps_trained"], kwrl and kwrl["last_step"]),
        ("held-out SFT", interval(scores["sft"]), kwrl and interval(kwrl["sft"])),
        ("held-out after RL (SkyRL: last export; kwrl: last step)", interval(scores["skyrl"]),
         kwrl and interval(kwrl["rl"])),
        ("RL - SFT (paired, 95%)", interval(diff), kwrl and interval(kwrl["paired_diff_last"])),
        (f"kwrl at step {kwrl and kwrl['nearest_step']}", "-",
         kwrl and kwrl["nearest_mean"] and interval(kwrl["nearest_mean"])),
        ("training reward by step", " ".join(_f(r["reward_mean"]) for r in figs["steps"]),
         kwrl and " ".join(_f(x) for x in kwrl["reward_by_step"])),
        ("step time (mean s)", figs["step_s_mean"], kwrl and kwrl["step_s_mean"]),
        ("generation / learner / weight sync / other (s, sums)",
         " / ".join(str(figs["sums_s"].get(k)) for k in ("generate", "policy_train", "sync_weights",
                                                         "other")),
         kwrl and f"{kwrl['sample_s']} / {kwrl['learner_s']} / {kwrl['push_s']} / -"),
        ("GPU busy (mean over steps)", figs["gpu_busy_mean"], kwrl and kwrl["gpu_busy_mean"]),
        ("graded trials / GPU-hour", figs["graded_trials_per_gpu_hour"],
         kwrl and kwrl["graded_trials_per_gpu_hour"]),
        ("logprob gap vLLM vs learner (mean |diff|)", figs["logprob_gap_mean"], "-"),
        ("SkyRL's own eval of the held-out tasks (eval/all/avg_score: in the loop; main_eval)",
         f"{loop_eval_cell(loop, figs['loop_eval_progress'])}; "
         f"{eval_cell(main)}", "-"),
    ]  # fmt: skip
    result: dict[str, Any] = {
        "status": "complete" if complete else "incomplete: rerun the same command to go on",
        "complete": complete,
        "command": command,
        "seconds": stages.seconds,
        "stages_s": stages.times,
        "this_run_seconds": round(time.time() - t_start, 1),
        "device": G.device_name(),
        "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(a).items()},
        "train_tasks": len(train_tasks),
        "scores": scores,
        "paired_diff": diff,
        "tasks_up_down_same": [paired[k] for k in ("up", "down", "same")] if paired else None,
        "passed": bool(diff and (diff.get("lo") or 0.0) > 0),
        "heldout_family": family,
        "export_evaluated": export[0] if export else None,
        "skyrl_stage": stage,
        "skyrl": figs,
        "skyrl_loop_eval": loop or None,
        "skyrl_main_eval": main_eval,
        "kwrl": kwrl,
        "side_by_side": side,
        "differences": DIFFERENCES,
    }
    curve = [{"step": 0, "mean_score": scores["sft"]}] if scores["sft"] else []
    if export and scores["skyrl"]:
        curve.append({"step": export[0], "mean_score": scores["skyrl"]})
    svg = curve_svg(curve, figs["steps"], "SkyRL: held-out mean score and training reward")
    write_json(a.out / "learning_skyrl.json", result)
    write_text(a.out / "learning_skyrl.html", page(result, svg))
    if a.json:
        write_json(a.json, result)

    table = Table(title=f"SkyRL vs kwrl from the same SFT warm start ({result['device']})")
    for col in ("figure", "SkyRL", "kwrl"):
        table.add_column(col)
    for k, s, w in side:
        table.add_row(str(k), str(s), str(w if w is not None else "-"))
    table.add_row("status", result["status"], "")
    table.add_row("record", str(a.out / "learning_skyrl.json"), "")
    console.print(table)


if __name__ == "__main__":
    main()
