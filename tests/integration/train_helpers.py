"""Shared by the trainer's real-process tests: the CLI argv, its environment, a generated dataset
and a tiny randomly initialised policy (2-layer Llama, hidden 64, SmolLM2's tokenizer) saved as an
HF folder, so `kwrl train` / `kwrl smoke` run their real paths in seconds per step on CPU."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tiny_model import save_tiny_llama as save_tiny_llama  # re-exported for the train tests

KWRL = [sys.executable, "-m", "kwrl.cli"]
ENV = {
    **os.environ,
    "HARBOR_TELEMETRY": "0",
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "COLUMNS": "400",
}


def synth_dataset(out: Path, *, worlds: int = 1, tasks_per_world: int = 3) -> Path:
    argv = ["data", "synth", "--out", str(out), "--worlds", str(worlds)]
    argv += ["--tasks_per_world", str(tasks_per_world)]
    proc = subprocess.run([*KWRL, *argv], capture_output=True, text=True, env=ENV, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


# The trainer's real-process runs (test_train_resume.py, test_train_lora.py).

LR, WD = 0.1, 0.5

CONFIG = """\
seed = 0
concurrency = 2
tensorboard = false

[rl]
prompts_per_step = 1
samples_per_prompt = {samples}
steps = {steps}
epochs = 2
ckpt_every = 1
drop_zero_variance = {drop}

[learner]
lr = {lr}
weight_decay = {wd}

[engine]
max_batch_size = 4

[agent]
max_steps = 1
max_tokens_per_turn = 8
context_window = 4096
tools = ["filesystem_list_files"]
"""


def train_argv(config: Path, dataset: Path, model: Path, out: Path) -> list[str]:
    return [*KWRL, "train", str(config), f"dataset={dataset}", f"model={model}", f"out={out}"]


def run_to_end(argv: list[str]) -> str:
    proc = subprocess.run(argv, capture_output=True, text=True, env=ENV, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-4000:] + proc.stdout[-2000:]
    return proc.stdout


def run_and_kill(argv: list[str], ready: Any, what: str, log: Path) -> None:
    """Start `argv` in its own session, SIGKILL the whole group as soon as `ready()` holds."""
    with log.open("wb") as err:
        proc = subprocess.Popen(
            argv, env=ENV, stdout=err, stderr=subprocess.STDOUT, start_new_session=True
        )
        deadline = time.monotonic() + 600
        try:
            while not ready():
                assert proc.poll() is None, f"exited before {what}: {log.read_text()[-3000:]}"
                assert time.monotonic() < deadline, f"no {what} within 600 s"
                time.sleep(0.02)  # polling the run dir of a subprocess, not waiting a fixed time
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == -signal.SIGKILL, log.read_text()[-3000:]


def latest(run: Path) -> str | None:
    marker = run / "checkpoints" / "latest"
    return marker.read_text().strip() if marker.is_file() else None


def metrics(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]


def weights(path: Path) -> dict[str, Any]:
    from safetensors.torch import load_file

    return load_file(str(path / "model.safetensors"))


def kill_during_rollout(argv: list[str], run: Path, step: int, log: Path) -> Path:
    """Run `argv` and SIGKILL it once step `step`'s first trial has started; its trials dir."""
    trials = run / "rollouts" / f"batch-{step:06d}" / "trials"
    started = lambda: trials.is_dir() and any(trials.iterdir())  # noqa: E731
    run_and_kill(argv, started, f"a step-{step} trial", log)
    return trials
