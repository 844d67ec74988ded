"""Gold trajectories for the SFT warm start: the real agent loop over the real gateway, the real
SmolLM2 tokenizer, and GoldPolicy in place of the model."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from kwrl.train.smoke import SMOKE_TOOLS


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from kwrl.synth.generate import SynthConfig, generate

    out = tmp_path_factory.mktemp("synth") / "d"
    generate(SynthConfig(out=out, worlds=1, tasks_per_world=12, seed=3), progress=False)
    return out


@pytest.fixture(scope="module")
def tokenizer() -> object:
    from transformers import AutoTokenizer

    from kwrl.llm.packaged import ensure_model

    return AutoTokenizer.from_pretrained(ensure_model("smollm2-135m"))


def test_gold_trajectory_masks_only_the_policy_turns(dataset: Path, tokenizer: object) -> None:
    from kwrl.train.local.sft import gold_trajectory

    easy = [
        d
        for d in sorted((dataset / "tasks").iterdir())
        if json.loads((d / "archipelago.json").read_text()).get("difficulty") == "easy"
    ]
    task = easy[0]
    calls = json.loads((task / "solution" / "gold_calls.json").read_text())
    traj = asyncio.run(gold_trajectory(task, tokenizer, {"tools": SMOKE_TOOLS}))
    assert traj is not None
    n = len(traj.response_ids)
    assert len(traj.loss_mask) == n == len(traj.logprobs)
    policy = [t for t, m in zip(traj.response_ids, traj.loss_mask, strict=True) if m]
    other = [t for t, m in zip(traj.response_ids, traj.loss_mask, strict=True) if not m]
    policy_text = tokenizer.decode(policy)  # type: ignore[attr-defined]
    other_text = tokenizer.decode(other)  # type: ignore[attr-defined]
    assert policy_text.count("<tool_call>") == len(calls)
    assert calls[0]["tool"] in policy_text
    golden = json.loads((task / "tests" / "golden_responses.json").read_text())[0]
    assert golden["golden_text_response"] in policy_text  # the final answer is trained
    assert "<tool_response>" in other_text and "<tool_response>" not in policy_text
    assert len(traj.prompt_ids) < 6000  # the tool subset keeps the prompt small


def test_tasks_without_gold_calls_give_no_trajectory(tmp_path: Path, tokenizer: object) -> None:
    from kwrl.train.local.sft import gold_trajectory

    (tmp_path / "instruction.md").write_text("x")
    assert asyncio.run(gold_trajectory(tmp_path, tokenizer, {})) is None
