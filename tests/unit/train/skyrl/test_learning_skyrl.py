"""benchmarks/learning_skyrl.py's CPU parts: the SkyRL run it launches is kwrl's GPU run (SkyRL's own
config loader reads the launch script's argv with its overrides), the step figures come from a
real SkyRL log, a LoRA export becomes a model folder with peft, and kwrl's record is read beside it.
The run itself needs Ray, vLLM and a GPU (`scripts/device/gpu_run.sh skyrl-learn-start`)."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[4]
LOG = ROOT / "docs" / "results" / "skyrl_smoke-h200.log"
KWRL_RECORD = ROOT / "docs" / "results" / "learning_gpu-h100-s24.json"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        return importlib.import_module("learning_skyrl")
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))


@pytest.fixture(autouse=True)
def _wandb_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WANDB_API_KEY", "test")  # SkyRL's validation only checks it is set


def test_the_launched_skyrl_run_has_kwrls_batch_lr_lora_and_agent(
    bench: ModuleType, tmp_path: Path
) -> None:
    from kwrl.train.skyrl.config import kwrl_section
    from kwrl.train.skyrl.generator import served_policy_name
    from kwrl.train.skyrl.main_train import load

    a = bench.build_parser().parse_args(["--out", str(tmp_path), "--allow-missing-limits"])
    a.out = a.out.resolve()
    tools = ["fs_read_file", "mail_send_message"]
    model = tmp_path / "sft-model"
    env = {
        **bench.skyrl_env(a, model, tmp_path / "skyrl", "learn"),
        "KWRL_DRY_RUN": "1",
    }
    script = ROOT / "scripts" / "skyrl" / "smoke_1gpu.sh"
    argv = subprocess.run(
        ["bash", str(script), *bench.skyrl_overrides(a, tools, tmp_path / "skyrl", 216)],
        env=env, check=True, capture_output=True, text=True,
    ).stdout.splitlines()  # fmt: skip
    cfg = load(argv)
    t = cfg.trainer
    # the held-out set as one eval batch: SkyRL's eval waits for each batch's slowest trial (three
    # batches of 96 took 72 s each on the H100), kwrl.concurrency (96) still bounds trials at once
    assert t.eval_batch_size == 216
    assert t.policy.model.path == str(model)
    assert (t.train_batch_size, cfg.generator.n_samples_per_prompt) == (8, 8)
    assert t.policy_mini_batch_size == 8 and t.max_training_steps == 20
    assert t.policy.optimizer_config.lr == 2e-4
    assert (t.policy.model.lora.rank, t.policy.model.lora.alpha) == (32, 64)
    assert served_policy_name(cfg) == "skyrl-lora"  # the adapter, not the SFT weights
    assert t.hf_save_interval == 5 and t.placement.colocate_all
    a_ = t.algorithm
    assert a_.advantage_estimator == "grpo" and a_.grpo_norm_by_std is False
    assert a_.policy_loss_type == "dppo" and a_.temperature == 1.0
    k = kwrl_section(cfg)
    assert k.concurrency == 96 and k.agent.tools == tools  # 64 trials a step; 96 in its eval
    assert (k.agent.max_steps, k.agent.max_tokens_per_turn, k.agent.context_window) == (
        8,
        320,
        6144,
    )
    assert k.agent.tool_prompt == "compact" and k.sandbox.allow_missing_limits
    assert cfg.generator.sampling_params.max_generate_length == 320
    # a fixed KV cache, so kwrl's evaluation engine can start beside SkyRL's (no free-memory
    # profile), and SkyRL's own evaluation of the held-out tasks at its last step
    ie = cfg.generator.inference_engine
    assert ie.engine_init_kwargs["kv_cache_memory_bytes"] == 8 * 2**30
    assert ie.gpu_memory_utilization == 0.15 and ie.max_num_seqs == 96
    assert (t.eval_interval, t.eval_before_train) == (20, False)
    assert cfg.data.val_data == [str(tmp_path / "skyrl" / "heldout.parquet")]
    ev = cfg.generator.eval_sampling_params
    assert ev is not None and (ev.temperature, ev.max_generate_length) == (1.0, 320)
    assert cfg.generator.eval_n_samples_per_prompt == 1
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import learning_gpu
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    from kwrl.llm.engines.vllm import VLLMConfig

    vllm = VLLMConfig(**learning_gpu.vllm_settings(a))
    assert vllm.extra == {"kv_cache_memory_bytes": 8 * 2**30}

    full = bench.build_parser().parse_args(
        ["--out", str(tmp_path), "--lora-rank", "0", "--kv-cache-gib", "0", "--no-skyrl-loop-eval"]
    )
    argv = subprocess.run(
        ["bash", str(script), *bench.skyrl_overrides(full, tools, tmp_path / "skyrl")],
        env=env, check=True, capture_output=True, text=True,
    ).stdout.splitlines()  # fmt: skip
    cfg = load(argv)
    assert served_policy_name(cfg) == "policy"
    assert cfg.generator.inference_engine.gpu_memory_utilization == 0.5
    assert "kv_cache_memory_bytes" not in cfg.generator.inference_engine.engine_init_kwargs
    assert cfg.trainer.eval_interval == -1 and cfg.data.val_data == []
    assert VLLMConfig(**learning_gpu.vllm_settings(full)).extra == {}


def test_step_figures_come_from_a_real_skyrl_log(bench: ModuleType) -> None:
    stage = {"gpu_busy_per_step": {"2": 0.41}, "gpu_busy_mean_steps": 0.4}
    figs = bench.skyrl_step_figures(LOG, stage)
    assert [r["step"] for r in figs["steps"]] == [1, 2]
    one = figs["steps"][0]
    assert (one["generate"], one["policy_train"], one["sync_weights"]) == (18.72, 9.46, 1.26)
    assert one["trials"] == 16 and one["reward_mean"] == 0.0 and one["gpu_busy"] is None
    assert figs["steps"][1]["gpu_busy"] == 0.41 and figs["gpu_busy_mean"] == 0.4
    total = sum(r["total"] for r in figs["steps"])
    assert figs["graded_trials"] == 32
    # SkyRL 0.3.0's name of the gap between its vLLM's and its learner's logprobs
    assert [r["logprob_gap_mean"] for r in figs["steps"]] == [0.0455, 0.0509]
    assert figs["logprob_gap_mean"] == 0.0482
    assert figs["graded_trials_per_gpu_hour"] == round(32 * 3600 / total, 1)
    assert bench.skyrl_step_figures(LOG.parent / "no-such.log", {})["steps"] == []


def test_a_run_cut_in_its_last_evaluation_still_counts_its_last_step(bench: ModuleType) -> None:
    # the H100 run of 2026-12-07: 20 steps, step 20 exported and evaluated by kwrl, then SkyRL's
    # own evaluation cut by the deadline after one of three batches, before step 20's metrics block
    log = ROOT / "docs" / "results" / "learning_skyrl-h100-s27-skyrl.log"
    figs = bench.skyrl_step_figures(log, {})
    assert [r["step"] for r in figs["steps"]] == list(range(1, 20))
    assert figs["steps_trained"] == 20 and figs["loop_eval_progress"] == (1, 3)
    assert bench.loop_eval_cell({}, figs["loop_eval_progress"]) == "cut after 1/3 eval batches"
    assert bench.loop_eval_cell({"eval/all/avg_score": 0.45}, (3, 3)) == "0.45"
    assert bench.loop_eval_cell({}, None) == "-"
    # a main_eval whose trials had no score: SkyRL's 0.0 and why it measured nothing
    none = {"eval/all/avg_score": 0.0, "eval/all/kwrl/trials": 72.0, "eval/all/kwrl/graded": 0.0,
            "eval/all/kwrl/cause/sandbox": 72.0}  # fmt: skip
    assert bench.eval_cell(none).startswith("0.0 (no trial of 72 has a score")
    assert bench.eval_cell({}) == "-"
    # the H200 smoke: every step's block present, no evaluation
    smoke = bench.skyrl_step_figures(LOG, {})
    assert smoke["steps_trained"] == 2 and smoke["loop_eval_progress"] is None


def test_a_lora_export_is_merged_into_the_sft_model(
    bench: ModuleType, tmp_path: Path, tiny_model_dir: Path
) -> None:
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    peft = get_peft_model(base, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj"]))
    with torch.no_grad():
        for name, p in peft.named_parameters():
            if "lora_B" in name:
                p.fill_(0.05)  # a trained adapter: B is no longer zero
    export = tmp_path / "exports" / "global_step_5" / "policy"
    peft.save_pretrained(export)
    assert (export / "adapter_config.json").is_file()

    dest = bench.merged(export, tiny_model_dir, tmp_path / "merged-step5")
    assert dest == tmp_path / "merged-step5" and (dest / "config.json").is_file()
    assert (dest / "tokenizer_config.json").is_file()
    got = AutoModelForCausalLM.from_pretrained(dest).state_dict()
    was = AutoModelForCausalLM.from_pretrained(tiny_model_dir).state_dict()
    key = "model.layers.0.self_attn.q_proj.weight"
    assert not torch.allclose(got[key], was[key])
    assert torch.allclose(
        got["model.layers.0.mlp.up_proj.weight"], was["model.layers.0.mlp.up_proj.weight"]
    )
    # full weights (a run without LoRA) are a model folder as they are
    assert bench.merged(tiny_model_dir, tiny_model_dir, tmp_path / "x") == tiny_model_dir
    assert bench.last_export(tmp_path / "none") is None
    os.makedirs(tmp_path / "skyrl" / "learn" / "exports" / "global_step_10" / "policy")
    (tmp_path / "skyrl" / "learn" / "exports" / "global_step_10" / "policy" / "x").touch()
    os.makedirs(tmp_path / "skyrl" / "learn" / "exports" / "global_step_15" / "policy")  # empty
    step, path = bench.last_export(tmp_path / "skyrl")
    assert step == 10 and path.parent.name == "global_step_10"


def test_kwrls_own_record_is_read_at_the_nearest_evaluated_step(bench: ModuleType) -> None:
    side = bench.kwrl_side(KWRL_RECORD, 20)
    record = json.loads(KWRL_RECORD.read_text())
    assert side["nearest_step"] == 24 and side["last_step"] == len(record["rl_steps"])
    assert side["sft"] == record["scores"]["sft"] and side["device"] == record["device"]
    assert side["graded_trials_per_gpu_hour"] == record["rl_time"]["graded_trials_per_gpu_hour"]
    assert bench.kwrl_side(None, 20) is None
