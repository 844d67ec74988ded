"""A real harbor trial: KwrlAgent, `kwrl serve` with SmolLM2-135M on CPU, kwrl's LocalEnvironment."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from agent_helpers import policy_server

pytestmark = pytest.mark.slow

MAX_TOKENS = 40


def _turn_starts(mask: list[int]) -> list[tuple[int, int]]:
    """(start, end) of each run of mask-1 positions."""
    runs: list[tuple[int, int]] = []
    i = 0
    while i < len(mask):
        if mask[i]:
            j = i
            while j < len(mask) and mask[j]:
                j += 1
            runs.append((i, j))
            i = j
        else:
            i += 1
    return runs


async def test_kwrl_agent_completes_a_harbor_trial_with_tito_arrays(tmp_path: Path) -> None:
    from harbor.models.trajectories import Trajectory
    from harbor.models.trial.config import AgentConfig, TaskConfig, TrialConfig, VerifierConfig
    from harbor.trial.trial import Trial

    from kwrl.llm.base import SamplingParams
    from kwrl.llm.openai_completions import OpenAICompletionsClient
    from kwrl.sandbox.conformance.testing import make_dataset
    from kwrl.sandbox.presets import environment_config

    (task_dir,) = make_dataset(tmp_path / "data", 1, grader="shell", agent_timeout_sec=900)
    with policy_server() as base_url:
        cfg = TrialConfig(
            task=TaskConfig(path=task_dir.resolve()),
            trial_name="kwrl-agent-smoke",
            trials_dir=tmp_path / "trials",
            agent=AgentConfig(
                import_path="kwrl.agent:KwrlAgent",
                model_name=f"{base_url}#smollm2-135m",
                kwargs={
                    "tools": ["filesystem_read_text_file", "filesystem_list_files"],
                    "max_steps": 3,
                    "max_tokens_per_turn": MAX_TOKENS,
                    "temperature": 0.0,
                    "context_window": 8192,
                },
            ),
            environment=environment_config("local"),
            verifier=VerifierConfig(),
        )
        trial = await Trial.create(cfg)
        result = await trial.run()
        trial_dir = tmp_path / "trials" / "kwrl-agent-smoke"
        traj_path = trial_dir / "agent" / "trajectory.json"
        assert result.exception_info is None, (
            result.exception_info,
            traj_path.read_text()[-3000:] if traj_path.exists() else "no trajectory",
        )
        meta: dict[str, Any] = result.agent_result.metadata  # type: ignore[union-attr]

        prompt, resp = meta["prompt_token_ids"], meta["response_ids"]
        mask, lps = meta["loss_mask"], meta["rollout_logprobs"]
        assert len(resp) == len(mask) == len(lps) > 0 and len(prompt) > 0
        assert meta["stop_reason"] in ("stop", "length", "max_steps")
        assert all(lp == 0.0 for lp, m in zip(lps, mask, strict=True) if not m)

        trial_dir = tmp_path / "trials" / "kwrl-agent-smoke"
        traj = Trajectory.model_validate(
            json.loads((trial_dir / "agent" / "trajectory.json").read_text())
        )
        agent_steps = [s for s in traj.steps if s.source == "agent"]
        assert len(agent_steps) == meta["n_turns"] >= 1
        assert (trial_dir / "agent" / "final_answer.txt").read_text() == meta["final_answer"]

        # Mask 1 exactly on the sampled tokens of each turn (every tool output and template token
        # is mask 0); each turn's tokens and logprobs are what the server returns for its prompt.
        full = prompt + resp
        runs = _turn_starts(mask)
        sampled = [t for s in agent_steps for t in (s.metrics.completion_token_ids or [])]  # type: ignore[union-attr]
        assert [resp[i] for a, b in runs for i in range(a, b)] == sampled
        client = OpenAICompletionsClient(base_url, "smollm2-135m", timeout_s=300)
        try:
            for step in agent_steps:
                ids = step.metrics.completion_token_ids  # type: ignore[union-attr]
                recorded = step.metrics.logprobs  # type: ignore[union-attr]
                start = next(a for a, b in runs if resp[a:b] == ids) + len(prompt)
                again = await client.complete(
                    full[:start], SamplingParams(max_tokens=MAX_TOKENS, temperature=0.0)
                )
                assert again.token_ids == ids
                assert again.logprobs == pytest.approx(recorded, abs=1e-4)
        finally:
            await client.aclose()
    drift = meta["tito_drift"]
    assert drift["n_recorded"] >= len(full) and 0.0 <= drift["rate"] <= 1.0
