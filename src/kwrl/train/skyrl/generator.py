"""`KwrlHarborGenerator`: SkyRL's generator interface over kwrl's harbor trials.

`await generate(GeneratorInput) -> GeneratorOutput`, one output row per input row, same order.
Each row's env extras name a task dir (`task_path`, written by `kwrl.train.skyrl.data`); the row
runs as one harbor trial (a job of `kwrl.rollout.runner.run_batch`: KwrlAgent, the configured
sandbox preset, the task's grader), retried on infrastructure failures, at most the section's `concurrency`
at a time across the generator's concurrent batches (one semaphore shared by them). The agent samples from
SkyRL's inference endpoint (the router URL + `/v1`, spec `URL#MODEL`) over TITO completions, with a
per-attempt session id (sticky routing) and the batch's weight version as cache salt.

Output rows are trajectory-level TITO arrays (one strictly appending token list per trial, read
from the trial dir by `kwrl.train.batch.trajectories_from_records`), not step-wise rows:
`prompt_token_ids` = the first prompt, `response_ids` = everything after it (tool observations
included, loss mask 0 on them), `rollout_logprobs` aligned with `response_ids`.

Masking (`kwrl.rollout.masking`), applied by the batch runner
(`kwrl.rollout.runner.apply_group_decisions`) per prompt group (`instance_id`) in the training
phase: a masked trial becomes a one-token placeholder row with loss mask [0] (the row
stays so SkyRL's group sizes hold, it carries no gradient) whose reward is the mean of its group's
trained members (0 when none is). SkyRL's GRPO (`compute_grpo_outcome_advantage`) puts every row of
a prompt's uid in the baseline, and the uids come from the prompts, not from this output; at the
group's own mean the placeholder leaves the scored members' mean, and so their advantages, as
they are (kwrl trains without std normalisation, `grpo_norm_by_std=false`; with it the
placeholder would narrow the group's std), as kwrl's own trainer leaves masked trials out
(`grpo_advantages(valid_B=)`); SkyRL's zero-variance filter skips it (no live loss mask);
failures the policy causes (context overflow, a cut last turn, its own timeout, a limit hit:
`kwrl.rollout.masking.TRAINED_ZERO`) keep their tokens with reward 0, and no timeout masks its
group. In the eval phase nothing is
masked: a failed trial scores its reward or 0, and its cause is counted in the metrics.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from skyrl.train.generators.base import (
    GeneratorInput,
    GeneratorInterface,
    GeneratorOutput,
    TrajectoryID,
)

from kwrl.agent.meta import AgentMeta
from kwrl.errors import ConfigError
from kwrl.rollout.failures import FailureCause
from kwrl.rollout.runner import (
    BatchJob,
    RolloutConfig,
    TrialRecord,
    build_rollout_config,
    run_batch,
)
from kwrl.rollout.trial import criterion_key, read_trial
from kwrl.train.algorithms import placeholder_rewards
from kwrl.train.batch import Trajectory, trajectories_from_records
from kwrl.train.skyrl.config import KwrlSection, kwrl_section


def _server_of(tool: str) -> str:
    from kwrl.worlds.apps import APPS

    for app in sorted(APPS, key=len, reverse=True):
        if tool.startswith(app + "_"):
            return app
    return "other"


def served_policy_name(cfg: Any) -> str:
    """The name SkyRL's inference servers know the policy by: with LoRA on FSDP the trainer
    registers its adapter (`skyrl-lora`) and a request naming the base model would sample from
    the weights before training; otherwise the served alias or the model path. SkyRL's own
    `resolve_policy_model_name` decides."""
    from skyrl.backends.skyrl_train.inference_servers.utils import resolve_policy_model_name

    return str(resolve_policy_model_name(cfg))


class KwrlHarborGenerator(GeneratorInterface):
    """SkyRL generator whose rollouts are kwrl harbor trials (see the module doc)."""

    def __init__(
        self,
        section: KwrlSection,
        *,
        policy_url: str,
        policy_model: str,
        tokenizer: str,
        pad_token_id: int = 0,
        inference_engine_client: Any = None,
        use_cache_salt: bool = True,
    ) -> None:
        self.section = section
        self.policy_spec = f"{policy_url.rstrip('/')}#{policy_model}"
        self.tokenizer = tokenizer
        self.pad_token_id = pad_token_id
        self.client = inference_engine_client
        self.use_cache_salt = use_cache_salt
        self._sem: asyncio.Semaphore | None = None
        self._sem_loop: asyncio.AbstractEventLoop | None = None

    @classmethod
    def from_skyrl(
        cls, cfg: Any, tokenizer: Any, inference_engine_client: Any
    ) -> KwrlHarborGenerator:
        """Build from a `KwrlSkyRLConfig`, SkyRL's tokenizer and its inference client."""
        section = kwrl_section(cfg)
        url = section.policy_url
        if url is None:
            if inference_engine_client is None:
                raise ConfigError("kwrl.policy_url: no inference client; set the policy URL")
            url = inference_engine_client.get_endpoint_url().rstrip("/") + "/v1"
        model = section.policy_model or served_policy_name(cfg)
        pad = getattr(tokenizer, "pad_token_id", None)
        if pad is None:
            pad = getattr(tokenizer, "eos_token_id", None) or 0
        return cls(
            section,
            policy_url=url,
            policy_model=str(model),
            tokenizer=section.tokenizer or cfg.trainer.policy.model.path,
            pad_token_id=int(pad),
            inference_engine_client=inference_engine_client,
            use_cache_salt=cfg.generator.use_cache_salt,
        )

    # ------------------------------------------------------------------ trials

    def weight_version(self) -> int | None:
        if not self.use_cache_salt or self.client is None:
            return None
        v = getattr(self.client, "weight_version", None)
        return int(v) if v is not None else None

    def _semaphore(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        if self._sem is None or self._sem_loop is not loop:
            self._sem = asyncio.Semaphore(self.section.concurrency)
            self._sem_loop = loop
        return self._sem

    def agent_sampling(self, sampling: dict[str, Any] | None) -> dict[str, Any]:
        """Agent settings from SkyRL's sampling params: temperature and top_p always (the
        trainer scales logits by the same temperature), max tokens per turn unless the kwrl
        section sets it."""
        if not sampling:
            return {}
        out: dict[str, Any] = {}
        for key in ("temperature", "top_p"):
            if sampling.get(key) is not None:
                out[key] = sampling[key]
        agent_set = self.section.agent.model_fields_set
        if sampling.get("max_tokens") and "max_tokens_per_turn" not in agent_set:
            out["max_tokens_per_turn"] = int(sampling["max_tokens"])
        return out

    def rollout_config(
        self, session_id: str, weight_version: int | None, sampling: dict[str, Any] | None = None
    ) -> RolloutConfig:
        s = self.section
        trials = s.model_copy(update={"verifier_env": s.verifier_environment()})
        kwargs = {
            **self.agent_sampling(sampling),
            "session_id": session_id,
            "weight_version": weight_version,
        }
        return build_rollout_config(
            trials, self.policy_spec, agent=s.harbor_agent, agent_kwargs=kwargs,
            tokenizer=self.tokenizer,
        )  # fmt: skip

    # ------------------------------------------------------------------ generate

    async def generate(
        self, input_batch: GeneratorInput, disable_tqdm: bool = False
    ) -> GeneratorOutput:
        n = len(input_batch["prompts"])
        extras = input_batch.get("env_extras") or [{} for _ in range(n)]
        tids = input_batch.get("trajectory_ids") or [TrajectoryID(str(i), 0) for i in range(n)]
        if len(extras) != n or len(tids) != n:
            raise ConfigError(
                f"generator input: {n} prompts, {len(extras)} env_extras, {len(tids)} ids"
            )
        task_dirs = []
        for i, ex in enumerate(extras):
            path = (ex or {}).get("task_path")
            if not path:
                raise ConfigError(
                    f"generator input row {i}: env_extras has no task_path (kwrl prompts parquet)"
                )
            task_dirs.append(Path(path))
        meta = input_batch.get("batch_metadata")
        phase = meta.training_phase if meta is not None else "train"
        step = meta.global_step if meta is not None and meta.global_step is not None else 0
        tag = f"{phase}-s{step:06d}-{uuid.uuid4().hex[:8]}"
        trials_dir = self.section.trials_path() / tag
        trials_dir.mkdir(parents=True, exist_ok=True)
        version = self.weight_version()
        sampling = input_batch.get("sampling_params")

        jobs = [
            BatchJob(
                t, tid.repetition_id,
                self.rollout_config(f"{tag}-{tid.to_string()}", version, sampling),
                tid.instance_id,
            )
            for t, tid in zip(task_dirs, tids, strict=True)
        ]  # fmt: skip
        results = await run_batch(
            jobs, trials_dir, concurrency=self._semaphore(), train=phase == "train"
        )
        finals = [r.final for r in results]
        history = [a for r in results for a in r.attempts]
        seconds = [r.seconds for r in results]
        files = [read_trial(r.trial_dir) for r in finals]
        trajs = trajectories_from_records(finals, version or 0, files)
        metas = [f.agent_meta for f in files]
        out = self.build_output(trajs, finals, metas, list(tids), seconds)
        out["rollout_metrics"] = {
            **self.metrics(finals, history, metas),
            **_skyrl_metrics(out),
        }
        return out

    def build_output(
        self,
        trajs: list[Trajectory],
        records: list[TrialRecord],
        metas: list[AgentMeta],
        tids: list[TrajectoryID],
        seconds: list[float],
    ) -> GeneratorOutput:
        """SkyRL's GeneratorOutput from trajectories; masked rows become 1-token placeholders."""
        prompts: list[list[int]] = []
        responses: list[list[int]] = []
        masks: list[list[int]] = []
        logprobs: list[list[float]] = []
        rewards: list[float] = []
        stops: list[str] = []
        # kwrl's one reward-to-advantage path (`trained_advantages`): SkyRL keeps every row in
        # its GRPO baseline, so a masked row carries its group's trained mean
        row_rewards = placeholder_rewards(
            [float(r.train_reward or 0.0) for r in records],
            [tid.instance_id for tid in tids],
            [bool(r.trained) for r in records],
        )
        for t, r, m, reward in zip(trajs, records, metas, row_rewards, strict=True):
            if t.trainable and t.response_ids and t.prompt_ids:
                prompts.append(list(t.prompt_ids))
                responses.append(list(t.response_ids))
                masks.append([int(x) for x in t.loss_mask])
                logprobs.append(list(t.logprobs))
                rewards.append(reward)
                stops.append(m.stop_reason or "stop")
            else:
                prompts.append([self.pad_token_id])
                responses.append([self.pad_token_id])
                masks.append([0])
                logprobs.append([0.0])
                rewards.append(reward)
                stops.append("error" if r.cause is not FailureCause.NONE else "masked")
        return GeneratorOutput(
            prompt_token_ids=prompts,
            response_ids=responses,
            rewards=rewards,
            loss_masks=masks,
            stop_reasons=stops,
            rollout_metrics=None,
            rollout_logprobs=logprobs,
            trajectory_ids=tids,
            trajectory_generation_times=seconds,
            rollout_expert_indices=None,
            is_last_step=None,
            env_metrics=[
                {"cause": str(r.cause), "reward": r.reward, "trial": r.trial_name} for r in records
            ],
            pixel_values=None,
            image_grid_thw=None,
        )

    @staticmethod
    def metrics(
        finals: list[TrialRecord], history: list[TrialRecord], metas: list[AgentMeta]
    ) -> dict[str, float]:
        """kwrl rollout metrics: rewards, per-criterion pass rates, tools, failure causes."""
        m: dict[str, float] = {}
        n = len(finals)
        graded = [r for r in finals if r.reward is not None]
        m["kwrl/trials"] = n
        m["kwrl/retries"] = len(history) - n
        m["kwrl/graded"] = len(graded)
        m["kwrl/trained"] = sum(r.trained for r in finals)
        if graded:
            m["kwrl/mean_reward"] = sum(float(r.reward or 0.0) for r in graded) / len(graded)
            m["kwrl/pass_rate"] = sum(bool(r.passed) for r in graded) / len(graded)
        crit: dict[str, list[float]] = defaultdict(list)
        for r in graded:
            for k, v in r.criteria.items():
                crit[criterion_key(k)].append(v)
        all_scores = [v for vs in crit.values() for v in vs]
        if all_scores:
            m["kwrl/criterion_pass_rate"] = sum(v >= 0.99 for v in all_scores) / len(all_scores)
        for k, vs in crit.items():
            m[f"kwrl/{k}"] = sum(v >= 0.99 for v in vs) / len(vs)
        for cause, c in Counter(str(r.cause) for r in finals).items():
            m[f"kwrl/cause/{cause}"] = c
        tools: Counter[str] = Counter()
        calls = ok = turns = malformed = 0
        for meta in metas:
            for turn in meta.turn_stats:
                turns += 1
                malformed += turn.malformed
                for call in turn.tool_calls:
                    calls += 1
                    ok += call.ok
                    tools[_server_of(call.name)] += 1
        m["kwrl/turns_per_trial"] = turns / n if n else 0.0
        m["kwrl/tool_calls"] = calls
        if turns:
            m["kwrl/malformed_turn_rate"] = malformed / turns
        if calls:
            m["kwrl/tool_call_success"] = ok / calls
            for server, c in tools.items():
                m[f"kwrl/tool_mix/{server}"] = c / calls
        return m


def _skyrl_metrics(out: GeneratorOutput) -> dict[str, Any]:
    """SkyRL's own rollout metrics (token counts, rewards), over the rows that train."""
    from skyrl.train.generators.utils import get_rollout_metrics

    return get_rollout_metrics(out["response_ids"], out["rewards"], loss_masks=out["loss_masks"])
