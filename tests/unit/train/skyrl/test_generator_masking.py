"""KwrlHarborGenerator's masking (DESIGN §7) and its output through SkyRL's own consumers.

The trial seam is faked (the batch runner's `run_with_retries` writes a harbor-shaped result.json
per trial with the agent's TITO metadata); the generator, kwrl's batch runner and masking, and
SkyRL's validation / zero-variance filter / tensor conversion / GRPO advantages are the real code.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from kwrl.rollout import runner as runner_mod
from kwrl.rollout.failures import FailureCause
from kwrl.rollout.runner import RolloutConfig, TrialRecord
from kwrl.train.skyrl.config import KwrlSection
from kwrl.train.skyrl.generator import KwrlHarborGenerator

PAD = 7


def _meta(n_prompt: int, n_resp: int, stop: str = "stop") -> dict[str, Any]:
    mask = [1 if i % 3 != 2 else 0 for i in range(n_resp)]
    return {
        "prompt_token_ids": list(range(100, 100 + n_prompt)),
        "response_ids": list(range(200, 200 + n_resp)),
        "loss_mask": mask,
        "rollout_logprobs": [-0.5 if m else 0.0 for m in mask],
        "stop_reason": stop,
        "turn_stats": [
            {"tool_calls": [{"name": "filesystem_list_files", "ok": True}], "malformed": False},
            {"tool_calls": [{"name": "code_execution_code_exec", "ok": False}], "malformed": True},
        ],
    }


class FakeTrials:
    """Outcomes by "task:sample" (else "task"): (cause, reward, meta) per attempt, in order;
    the last one repeats."""

    def __init__(
        self, outcomes: dict[str, list[tuple[FailureCause, float | None, dict[str, Any]]]]
    ):
        self.outcomes = {k: list(v) for k, v in outcomes.items()}
        self.configs: list[RolloutConfig] = []

    async def __call__(
        self, task_dir: Path, cfg: RolloutConfig, trials_dir: Path, sample: int
    ) -> list[TrialRecord]:
        self.configs.append(cfg)
        key = f"{task_dir.name}:{sample}"
        queue = self.outcomes[key if key in self.outcomes else task_dir.name]
        attempts = []
        for attempt in range(cfg.retries + 1):
            cause, reward, meta = queue.pop(0) if len(queue) > 1 else queue[0]
            name = f"{task_dir.name}__s{sample}" + (f"__r{attempt}" if attempt else "")
            tdir = trials_dir / name
            tdir.mkdir(parents=True)
            (tdir / "result.json").write_text(json.dumps({"agent_result": {"metadata": meta}}))
            rewards = {"reward": reward} if reward is not None else {}
            attempts.append(
                TrialRecord(
                    task=task_dir.name,
                    sample=sample,
                    attempt=attempt,
                    trial_name=name,
                    trial_dir=str(tdir),
                    cause=cause,
                    reward=reward,
                    rewards=rewards,
                    criteria={"c1": reward} if reward is not None else {},
                    passed=None if reward is None else reward == 1.0,
                )
            )
            if cause not in (FailureCause.SANDBOX, FailureCause.MODEL, FailureCause.VERIFIER):
                break
        return attempts


def _input(tasks: list[str], root: Path, n: int, phase: str = "train") -> dict[str, Any]:
    from skyrl.train.generators.base import BatchMetadata, TrajectoryID

    rows = [(t, i) for t in tasks for i in range(n)]
    return {
        "prompts": [[{"role": "user", "content": t}] for t, _ in rows],
        "env_classes": ["kwrl"] * len(rows),
        "env_extras": [{"task_path": str(root / t)} for t, _ in rows],
        "sampling_params": {"temperature": 1.0, "top_p": 1.0, "max_tokens": 64},
        "trajectory_ids": [TrajectoryID(instance_id=t, repetition_id=i) for t, i in rows],
        "batch_metadata": BatchMetadata(global_step=3, training_phase=phase),  # type: ignore[arg-type]
    }


@pytest.fixture
def generator(tmp_path: Path) -> KwrlHarborGenerator:
    section = KwrlSection(trials_dir=str(tmp_path / "trials"), concurrency=4, retries=2)
    client = type("Client", (), {"weight_version": 5})()
    return KwrlHarborGenerator(
        section,
        policy_url="http://127.0.0.1:1/v1",
        policy_model="policy",
        tokenizer="smollm2-135m",
        pad_token_id=PAD,
        inference_engine_client=client,
    )


OK = FailureCause.NONE


async def test_an_infra_error_in_a_group_zeroes_the_whole_groups_loss_masks(
    generator: KwrlHarborGenerator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeTrials({
        "a": [(OK, 1.0, _meta(4, 9))],
        "b": [(OK, 0.5, _meta(5, 6))],
        "b:1": [(FailureCause.SANDBOX, None, {})],  # every attempt fails: 2 retries, group masked
    })  # fmt: skip
    monkeypatch.setattr(runner_mod, "run_with_retries", fake)
    out = await generator.generate(_input(["a", "b"], tmp_path, 2))  # type: ignore[arg-type]

    assert out["loss_masks"][0] == _meta(4, 9)["loss_mask"]
    assert out["rewards"][:2] == [1.0, 1.0]
    assert out["loss_masks"][2] == [0] and out["loss_masks"][3] == [0]
    assert out["response_ids"][2] == [PAD] and out["rewards"][2:] == [0.0, 0.0]
    assert out["stop_reasons"][3] == "error"
    m = out["rollout_metrics"] or {}
    assert m["kwrl/retries"] == 2 and m["kwrl/cause/sandbox"] == 1
    assert m["kwrl/tool_call_success"] == 0.5
    assert m["kwrl/tool_mix/filesystem"] == 0.5 and m["kwrl/tool_mix/code_execution"] == 0.5


async def test_failures_the_policy_causes_train_with_reward_zero_and_no_timeout_masks_a_group(
    generator: KwrlHarborGenerator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outcomes = {
        "cut": [(FailureCause.MAX_TOKENS, None, _meta(3, 5, "length"))],
        "slow": [(FailureCause.AGENT_TIMEOUT, 1.0, _meta(3, 4))],
        "hung:0": [(OK, 1.0, _meta(2, 6))],
        "hung:1": [(FailureCause.POLICY_TIMEOUT, None, _meta(2, 2))],
    }
    fake = FakeTrials(outcomes)
    monkeypatch.setattr(runner_mod, "run_with_retries", fake)
    out = await generator.generate(_input(["cut", "slow", "hung"], tmp_path, 2))  # type: ignore[arg-type]

    assert out["rewards"][:4] == [0.0, 0.0, 0.0, 0.0]
    assert out["loss_masks"][0] == _meta(3, 5)["loss_mask"]  # still trained
    # two timeouts of the policy's own: trained on their trajectories with 0, the group kept
    assert out["loss_masks"][2:4] == [_meta(3, 4)["loss_mask"]] * 2
    # the endpoint's timeout masks that trial alone (its placeholder at the group's trained mean)
    assert out["rewards"][4:] == [1.0, 1.0]
    assert out["loss_masks"][4] == _meta(2, 6)["loss_mask"] and out["loss_masks"][5] == [0]
    # per-trial session ids, the batch's weight version, SkyRL's temperature
    sessions = {c.agent_kwargs["session_id"] for c in fake.configs}
    assert len(sessions) == 6 and all(s.startswith("train-s000003-") for s in sessions)
    assert {c.agent_kwargs["weight_version"] for c in fake.configs} == {5}
    assert {c.agent_settings.agent.temperature for c in fake.configs if c.agent_settings} == {1.0}
    assert {c.model for c in fake.configs} == {"http://127.0.0.1:1/v1#policy"}


async def test_eval_phase_masks_nothing(
    generator: KwrlHarborGenerator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeTrials({"x": [(FailureCause.AGENT_TIMEOUT, 0.25, _meta(3, 4))]})
    monkeypatch.setattr(runner_mod, "run_with_retries", fake)
    out = await generator.generate(_input(["x"], tmp_path, 2, phase="eval"))  # type: ignore[arg-type]
    assert out["rewards"] == [0.25, 0.25]
    assert out["loss_masks"][0] == _meta(3, 4)["loss_mask"]


async def test_output_passes_skyrls_validation_filter_conversion_and_grpo(
    generator: KwrlHarborGenerator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from skyrl.backends.skyrl_train.utils import ppo_utils
    from skyrl.train.config import AlgorithmConfig
    from skyrl.train.dataset.preprocess import convert_prompts_responses_to_batch_tensors
    from skyrl.train.utils.trainer_utils import validate_generator_output, zero_variance_filter

    fake = FakeTrials({
        "var:0": [(OK, 1.0, _meta(4, 9))],
        "var:1": [(OK, 0.0, _meta(2, 5))],
        "flat": [(OK, 0.5, _meta(6, 3))],
        "bad": [(FailureCause.VERIFIER, None, {})],
    })  # fmt: skip
    monkeypatch.setattr(runner_mod, "run_with_retries", fake)
    batch = _input(["var", "flat", "bad"], tmp_path, 2)
    out = await generator.generate(batch)  # type: ignore[arg-type]
    out.pop("rollout_metrics")
    validate_generator_output(len(batch["prompts"]), out)  # type: ignore[arg-type]

    uids = [t.instance_id for t in batch["trajectory_ids"]]
    kept = zero_variance_filter(out["rewards"], uids, loss_masks=out["loss_masks"], tol=1e-6)  # type: ignore[arg-type]
    assert sorted({uids[i] for i in kept}) == ["bad", "var"]  # 'flat' has no signal: dropped

    class Tok:
        pad_token_id = PAD
        eos_token_id = PAD

    per_token = []
    for r, resp in zip(out["rewards"], out["response_ids"], strict=True):
        row = [0.0] * len(resp)
        row[-1] = float(r)  # type: ignore[arg-type]
        per_token.append(row)
    seqs, _attn, resp_mask, rewards_t, loss_mask_t, logprobs_t, _ = convert_prompts_responses_to_batch_tensors(
        Tok(), out["prompt_token_ids"], out["response_ids"], per_token, out["loss_masks"],
        out["rollout_logprobs"], None,
    )  # fmt: skip
    assert seqs.shape[0] == 6 and loss_mask_t.shape == resp_mask.shape == logprobs_t.shape
    assert loss_mask_t[4:].sum() == 0  # the masked group
    adv, _ = ppo_utils.compute_advantages_and_returns(
        token_level_rewards=rewards_t, response_mask=resp_mask, index=np.array(uids),
        adv_estimator="grpo", config=AlgorithmConfig(), values=None, gamma=1.0, lambd=1.0, grpo_norm_by_std=False,
    )  # fmt: skip
    assert torch.isfinite(adv).all()
    # GRPO without std norm: reward 1 vs 0 in 'var' -> +0.5 / -0.5 on every response token
    assert adv[0][resp_mask[0].bool()].unique().tolist() == [0.5]
    assert adv[1][resp_mask[1].bool()].unique().tolist() == [-0.5]


async def test_a_masked_member_does_not_move_its_groups_grpo_advantages(
    generator: KwrlHarborGenerator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A group [1.0, masked, 0.0] (the middle one's policy endpoint timed out: masked alone)
    through SkyRL's own GRPO as kwrl runs it (no std normalisation; uids as SkyRL builds them, one
    per prompt): the scored members get the advantages of [1.0, 0.0] alone, +0.5 and -0.5 (a
    placeholder reward 0 made them +0.67 and -0.33), the placeholder 0."""
    from skyrl.backends.skyrl_train.utils.ppo_utils import compute_grpo_outcome_advantage

    fake = FakeTrials({
        "g:0": [(OK, 1.0, _meta(4, 9))],
        "g:1": [(FailureCause.POLICY_TIMEOUT, None, _meta(2, 2))],
        "g:2": [(OK, 0.0, _meta(3, 5))],
    })  # fmt: skip
    monkeypatch.setattr(runner_mod, "run_with_retries", fake)
    batch = _input(["g"], tmp_path, 3)
    out = await generator.generate(batch)  # type: ignore[arg-type]
    assert out["loss_masks"][1] == [0]

    def advantages(rewards: list[float]) -> list[float]:
        token_rewards = torch.tensor([[r] for r in rewards])
        uids = np.array(["g"] * len(rewards))
        adv, _ = compute_grpo_outcome_advantage(
            token_rewards, torch.ones_like(token_rewards), uids, grpo_norm_by_std=False
        )
        return adv[:, 0].tolist()

    rewards = [float(r) for r in out["rewards"]]  # type: ignore[arg-type]
    with_mask = advantages(rewards)
    assert [with_mask[0], with_mask[2]] == advantages([1.0, 0.0]) == [0.5, -0.5]
    assert with_mask[1] == 0.0
