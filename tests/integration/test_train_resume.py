"""`kwrl train` killed with SIGKILL and rerun resumes exactly: no step lost or repeated.

Real processes throughout: `kwrl data synth` makes a 3-task dataset, `kwrl train` runs in a
subprocess (its own session, killed as a group) with real harbor trials in the local sandbox and
the in-process engine. The one fake is the policy: a randomly initialised 2-layer Llama (hidden 64)
with SmolLM2's tokenizer, saved to tmp as an HF folder. Its turns are cut at 8 tokens, so every
trial gets reward 0: advantages are exactly 0 and the weights change only through AdamW's weight
decay, `w * (1 - lr * wd)` per optimizer step, which counts the steps the weights went through.

- default run: killed while step 2's rollout is running (after the step-1 checkpoint); the rerun
  redoes exactly step 2 (same prompts, fresh trials) and the weights went through 2 steps.
- slow: killed right after the step-2 checkpoint of 4 (plus the metrics lines a kill between a
  step's log and its checkpoint would leave), and killed during step 3's rollout; both compared
  with an uninterrupted run of the same config and seed: same steps, same prompts per step, same
  final trainer state (sampler included). Every group there has zero variance, so every step is
  skipped yet counted.
- LoRA (`lora.rank = 2`): killed during step 2's rollout and resumed onto the base weights. Only
  the adapters train, so only they decay: peft starts B at 0, so B stays 0, the merged model/
  equals the base model bit for bit (full fine-tuning would have decayed it), and A shows the
  steps it went through. The same run dir without LoRA is refused.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from train_helpers import (
    CONFIG,
    ENV,
    LR,
    WD,
    kill_during_rollout,
    latest,
    metrics,
    run_and_kill,
    run_to_end,
    save_tiny_llama,
    synth_dataset,
    train_argv,
    weights,
)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return synth_dataset(tmp_path_factory.mktemp("resume-data") / "ds", tasks_per_world=3)


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_tiny_llama(tmp_path_factory.mktemp("resume-model") / "tiny-llama")


def write_config(path: Path, *, steps: int, samples: int, drop_zero_variance: bool) -> Path:
    drop = str(drop_zero_variance).lower()
    path.write_text(CONFIG.format(steps=steps, samples=samples, drop=drop, lr=LR, wd=WD))
    return path


def final_state(run: Path) -> dict[str, Any]:
    state = json.loads((run / "checkpoints" / latest(run) / "trainer_state.json").read_text())  # type: ignore[operator]
    state.pop("torch_rng")
    return state


def expected_prompts(dataset: Path, steps: int) -> tuple[list[list[str]], dict[str, Any]]:
    """Task ids per step and the sampler state after them, straight from the seeded sampler."""
    from kwrl.train.local.sampler import PromptSampler

    tasks = [p.name for p in (dataset / "tasks").iterdir() if (p / "instruction.md").is_file()]
    sampler = PromptSampler(tasks, seed=0, epochs=2)
    per_step = [sampler.next(1) for _ in range(steps)]
    return per_step, sampler.state.model_dump(mode="json")


def test_a_run_killed_mid_step_redoes_exactly_that_step(
    dataset: Path, tiny_model: Path, tmp_path: Path
) -> None:
    import torch

    run = tmp_path / "run"
    cfg = write_config(tmp_path / "train.toml", steps=2, samples=1, drop_zero_variance=False)
    argv = train_argv(cfg, dataset, tiny_model, run)
    trials2 = kill_during_rollout(argv, run, 2, tmp_path / "killed.log")
    assert latest(run) == "step-000001"  # killed during step 2's rollout, before its checkpoint
    assert [m["step"] for m in metrics(run)] == [1]
    assert not (run / "rollouts" / "batch-000002" / "summary.json").exists()
    assert not (run / "DONE").exists()
    leftover = trials2 / "left-by-the-killed-run"
    leftover.touch()

    out = run_to_end(argv)
    assert not leftover.exists()  # the half-run batch was cleared, not merged into
    assert f"resumed from {run / 'checkpoints' / 'step-000001'} (step 1)" in out
    prompts, sampler_after = expected_prompts(dataset, 2)
    logged = metrics(run)
    assert [m["step"] for m in logged] == [1, 2]
    assert [m["tasks"] for m in logged] == prompts
    assert all(m["trainable_trials"] == 1 and m["trained_tokens"] > 0 for m in logged)
    state = final_state(run)
    assert (state["step"], state["version"], state["sampler"]) == (2, 2, sampler_after)

    summary = json.loads((run / "rollouts" / "batch-000002" / "summary.json").read_text())
    assert summary["trials"] == summary["attempts"] == 1  # a fresh trial, none reused or retried
    assert [p.name for p in trials2.iterdir()] == [f"{prompts[1][0]}__s0"]

    optim = torch.load(run / "checkpoints" / "step-000002" / "optimizer.pt", weights_only=True)
    assert {float(s["step"]) for s in optim["state"].values()} == {2.0}
    # Zero advantages: each optimizer step only decays the weights, so they show 2 steps, not 1 or 3.
    start, end = weights(tiny_model), weights(run / "checkpoints" / "step-000002" / "model")
    for name, w0 in start.items():
        torch.testing.assert_close(end[name], w0 * (1 - LR * WD) ** 2, rtol=1e-5, atol=1e-7)


@pytest.fixture(scope="module")
def uninterrupted(
    dataset: Path, tiny_model: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("resume-ref")
    cfg = write_config(tmp / "train.toml", steps=4, samples=2, drop_zero_variance=True)
    run_to_end(train_argv(cfg, dataset, tiny_model, tmp / "run"))
    return cfg, tmp / "run"


@pytest.mark.slow
def test_a_run_killed_after_a_checkpoint_matches_an_uninterrupted_run(
    dataset: Path, tiny_model: Path, uninterrupted: tuple[Path, Path], tmp_path: Path
) -> None:
    cfg, ref = uninterrupted
    run = tmp_path / "run"
    argv = train_argv(cfg, dataset, tiny_model, run)
    ready = lambda: latest(run) == "step-000002"  # noqa: E731
    run_and_kill(argv, ready, "the step-2 checkpoint", tmp_path / "killed.log")
    assert not (run / "DONE").exists()
    assert {m["step"] for m in metrics(run)} <= {1, 2}
    # What a kill between a step's metrics line and its checkpoint (or mid-write) leaves behind.
    with (run / "metrics.jsonl").open("a") as f:
        f.write(json.dumps({"step": 3, "tasks": ["from-the-killed-run"]}) + '\n{"step": 4, "ta')

    out = run_to_end(argv)
    assert "step-000002 (step 2)" in out
    got, want = metrics(run), metrics(ref)
    assert [m["step"] for m in got] == [m["step"] for m in want] == [1, 2, 3, 4]
    assert [m["tasks"] for m in got] == [m["tasks"] for m in want]
    assert [m["tasks"] for m in want] == expected_prompts(dataset, 4)[0]
    # Every group had zero variance: each step is skipped yet counted, versioned and checkpointed.
    assert all(m["skipped"] and m["version"] == m["step"] for m in got)
    assert final_state(run) == final_state(ref)
    assert final_state(run)["step"] == 4
    assert latest(run) == latest(ref) == "step-000004"
    ckpts = sorted(p.name for p in (run / "checkpoints").iterdir() if p.name.startswith("step-"))
    assert ckpts == [f"step-{i:06d}" for i in (1, 2, 3, 4)]
    end = weights(run / "checkpoints" / "step-000004" / "model")
    for name, w in weights(ref / "checkpoints" / "step-000004" / "model").items():
        assert end[name].equal(w), name


@pytest.mark.slow
def test_a_run_killed_mid_step_matches_an_uninterrupted_run(
    dataset: Path, tiny_model: Path, uninterrupted: tuple[Path, Path], tmp_path: Path
) -> None:
    cfg, ref = uninterrupted
    run = tmp_path / "run"
    argv = train_argv(cfg, dataset, tiny_model, run)
    kill_during_rollout(argv, run, 3, tmp_path / "killed.log")
    assert latest(run) == "step-000002"
    run_to_end(argv)
    assert [(m["step"], m["tasks"]) for m in metrics(run)] == [
        (m["step"], m["tasks"]) for m in metrics(ref)
    ]
    assert final_state(run) == final_state(ref)


def test_resume_falls_back_to_the_highest_complete_checkpoint(tmp_path: Path) -> None:
    from kwrl.train.local.checkpoint import latest_checkpoint

    ckpts = tmp_path / "checkpoints"
    for name in ("step-000001", "step-000002", ".step-000003.old-7", ".step-000004.x1.tmp"):
        (ckpts / name).mkdir(parents=True)
        (ckpts / name / "trainer_state.json").write_text("{}")
    (ckpts / "step-000005").mkdir()  # no trainer_state.json: not a checkpoint
    (ckpts / "latest").write_text("step-000003\n")  # killed while step-000003 was being replaced
    assert latest_checkpoint(tmp_path) == ckpts / "step-000002"
    (ckpts / "latest").write_text("step-000001\n")
    assert latest_checkpoint(tmp_path) == ckpts / "step-000001"


def adapter(ckpt: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(ckpt / "adapter" / "adapter_model.safetensors"))


def test_a_lora_run_killed_mid_step_resumes_its_adapters_onto_the_base(
    dataset: Path, tiny_model: Path, tmp_path: Path
) -> None:
    import torch

    cfg = tmp_path / "train.toml"
    cfg.write_text(
        CONFIG.format(steps=2, samples=1, drop="false", lr=LR, wd=WD) + "\n[lora]\nrank = 2\n"
    )
    run = tmp_path / "run"
    argv = train_argv(cfg, dataset, tiny_model, run)
    kill_during_rollout(argv, run, 2, tmp_path / "killed.log")
    assert latest(run) == "step-000001"
    step1 = run / "checkpoints" / "step-000001"
    a1 = adapter(step1)

    out = run_to_end(argv)
    assert f"resumed from {step1} (step 1)" in out
    assert [m["step"] for m in metrics(run)] == [1, 2]
    step2 = run / "checkpoints" / "step-000002"
    a2 = adapter(step2)
    assert set(a2) == set(a1) and len(a1) == 2 * 7 * 2  # A and B, 7 projections, 2 layers
    for name, w in a1.items():
        if "lora_B" in name:
            assert not w.any() and not a2[name].any(), name
        else:
            assert w.abs().sum() > 0, name
            torch.testing.assert_close(a2[name], w * (1 - LR * WD), rtol=1e-5, atol=1e-8)
    # model/ is a plain model of the base architecture: the merged weights, here the base's own.
    base, merged = weights(tiny_model), weights(step2 / "model")
    assert set(merged) == set(base)
    for name, w0 in base.items():
        assert torch.equal(merged[name], w0), name
    optim = torch.load(step2 / "optimizer.pt", weights_only=True)
    assert len(optim["state"]) == len(a1)  # the frozen weights carry no optimizer state

    # The same run dir without LoRA is refused, not trained as a full model.
    full = tmp_path / "full.toml"
    full.write_text(
        cfg.read_text().replace("rank = 2", "rank = 0").replace("steps = 2", "steps = 3")
    )
    proc = subprocess.run(
        train_argv(full, dataset, tiny_model, run), capture_output=True, text=True, env=ENV,
        timeout=600, check=False,
    )  # fmt: skip
    assert proc.returncode != 0
    assert "adapter/" in proc.stderr + proc.stdout and "lora.rank" in proc.stderr + proc.stdout
