"""benchmarks/learning_gpu.py end to end as a real process, on CPU at a tiny size.

The GPU run's logic with the in-process engine for vLLM and a tiny random Llama for the packaged
Qwen (`--rollout-engine engine --device cpu --model DIR`): real synth data of every tier, the
base evaluation in its child process, SFT, RL with the trainer's held-out evaluations, the time
budget stopping the run cleanly and the same command resuming it to the end. The same script with
vLLM on a GPU is the `gpu`-marked test below (skipped without CUDA and vLLM).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from train_helpers import ENV, save_tiny_llama

from gpu_helpers import cuda_and_vllm

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "learning_gpu.py"
TINY = [
    "--train-worlds", "1", "--heldout-worlds", "1", "--tasks-per-world", "4",
    "--eval-every", "2", "--prompts-per-step", "2", "--samples-per-prompt", "2",
    "--concurrency", "4", "--eval-concurrency", "4", "--max-steps", "2",
    "--max-tokens-per-turn", "16", "--context-window", "4096", "--sft-epochs", "1",
    "--sft-batch-size", "2", "--lora-rank", "4", "--micro-batch-size", "2",
    # the sync loop and exact batch shapes here; tests/unit/train/local covers the levers' logic
    # and test_the_levers_run_end_to_end below runs them
    "--mode", "sync", "--no-dynamic", "--no-steer", "--heldout-family", "",
]  # fmt: skip


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), *TINY, *args], capture_output=True, text=True, env=ENV,
        check=False, timeout=900,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


@pytest.mark.slow
def test_a_budget_stops_the_run_cleanly_and_the_same_command_finishes_it(tmp_path: Path) -> None:
    model = save_tiny_llama(tmp_path / "tiny-llama")
    out = tmp_path / "run"
    argv = ["--out", str(out), "--model", str(model), "--rollout-engine", "engine"]
    argv += ["--device", "cpu", "--rl-steps", "6"]

    # Data, base eval and SFT take ~15 s here, each RL step ~3 s and each held-out evaluation
    # ~4 s: 45 s of the 80 are kept for writing, so the trainer stops after a few steps.
    first = _run(*argv, "--time-budget-s", "80")
    part = json.loads((out / "learning_gpu.json").read_text())
    assert not part["complete"] and "rerun the same command" in first.stdout
    done_steps = [m["step"] for m in part["rl_steps"]]
    assert 1 <= len(done_steps) < 6 and not (out / "rl" / "DONE").exists()
    assert (out / "rl" / "checkpoints" / f"step-{done_steps[-1]:06d}").is_dir()
    assert (out / "learning_gpu.html").is_file()

    _run(*argv)
    result = json.loads((out / "learning_gpu.json").read_text())
    assert result["complete"] and "eval-base-t1x1-seed0" in result["resumed_stages"]
    assert [m["step"] for m in result["rl_steps"]] == [1, 2, 3, 4, 5, 6]
    # the curve: the warm start, every 2 steps, the last (and the step the budget stopped at:
    # its weights are evaluated when an evaluation still fits)
    curve = [h["step"] for h in result["heldout_curve"]]
    assert set(curve) - {done_steps[-1]} == {0, 2, 4, 6}
    assert all(h["n_trials"] == result["heldout_tasks"] for h in result["heldout_curve"])
    tiers = set(result["breakdown"]["sft"]["tier"])
    assert tiers <= {"easy", "medium", "hard"} and len(tiers) >= 2
    assert set(result["scores"]) == {"base", "sft", "rl"} and all(result["scores"].values())
    assert result["paired_diff"] is not None and result["tasks_up_down_same"] is not None
    for run in ("sft", "rl"):
        checks = result["answer_checks"][run]
        assert 0.0 <= checks["multi_candidate_share"] <= 1.0
        assert 0.0 <= checks["timeout_or_limit_share"] <= 1.0
    step = result["rl_steps"][0]
    assert step["trials"] == 4 and step["graded"] == 4
    assert step["sample_s"] > 0 and step["trial_grading_s"] > 0 and step["trial_setup_s"] > 0
    assert step["trial_policy_s"] > 0 and step["completion_tokens"] > 0
    assert step["gpu_busy"] is None  # no GPU: not measured, not an error
    assert result["rl_time"]["graded_trials_per_gpu_hour"] > 0
    assert result["rl_time"]["bound_by"].startswith(("sampling", "learner"))
    writes = ("create", "add", "send", "post", "reply")  # the gold's file/mail/chat tools offered
    assert any(t.split("_", 1)[1].startswith(writes) for t in result["tools"])
    page = (out / "learning_gpu.html").read_text()
    assert "<svg" in page and "RL steps: where the time went" in page


@pytest.mark.slow
def test_the_levers_run_end_to_end(tmp_path: Path) -> None:
    """Async, dynamic sampling, steering, discovery and a held-out family, as the GPU run's
    defaults, at a tiny size: the run completes and the record holds what they add."""
    model = save_tiny_llama(tmp_path / "tiny-llama")
    out = tmp_path / "run"
    levers = ["--mode", "async", "--dynamic", "--steer", "--heldout-family", "edit-doc"]
    _run(
        *levers, "--out", str(out), "--model", str(model), "--rollout-engine", "engine",
        "--device", "cpu", "--rl-steps", "3", "--no-base-eval", "--tasks-per-world", "6",
    )  # fmt: skip
    result = json.loads((out / "learning_gpu.json").read_text())
    assert result["complete"] and result["levers"]["mode"] == "async"
    assert all(m["tasks_sampled"] >= 3 for m in result["rl_steps"])  # 1.5 x 2 tasks at least
    assert all(m["staleness"] <= 1 for m in result["rl_steps"])
    assert result["heldout_family"]["family"] == "edit-doc"
    assert result["noop_control_heldout"]["criteria_passed"] == 0
    assert set(result["family_curves"]) == set(result["breakdown"]["sft"]["family"])
    trained = tomllib.loads((out / "rl" / "config.toml").read_text())["tasks"]
    assert trained and not any(t.endswith("-edit-doc") for t in trained)  # held out of training


@pytest.mark.gpu
@pytest.mark.skipif(not cuda_and_vllm(), reason="needs a CUDA GPU and vLLM (docs/gpu.md)")
def test_the_gpu_run_at_a_tiny_size(tmp_path: Path) -> None:  # pragma: no cover - GPU only
    out = tmp_path / "run"
    _run(
        "--out", str(out), "--model", "smollm2-135m", "--rl-steps", "2",
        "--allow-missing-limits", "--vllm-memory", "0.2",
    )  # fmt: skip
    result = json.loads((out / "learning_gpu.json").read_text())
    assert result["complete"] and [h["step"] for h in result["heldout_curve"]] == [0, 2]
    assert result["rl_steps"][0]["gpu_busy"] is not None
