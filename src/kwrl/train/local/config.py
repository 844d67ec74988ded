"""The single-machine trainer's configs: `TrainConfig` (`kwrl train CONFIG.toml [key=value ...]`)
and `SFTConfig` (`kwrl train sft CONFIG.toml [key=value ...]`).

Imports no torch, so configs parse (and are tested) cheaply. Defaults are the recipe's hero
hyperparameters scaled to one CPU: DPPO (delta 0.15/0.15), GRPO advantages without std
normalisation, zero-variance groups dropped, prompt_mean reduction, no KL.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from kwrl.agent.config import AgentConfig
from kwrl.config import KwrlConfig, OutputConfig
from kwrl.llm.engines import EngineConfig, VLLMConfig
from kwrl.llm.spec import live_spec
from kwrl.rollout.runner import RolloutConfig, TrialSettings, build_rollout_config
from kwrl.train.local.sampler import Steering
from kwrl.train.losses import DPPOLoss, PolicyLossConfig


class LearnerConfig(KwrlConfig):
    """Optimizer and loss of `kwrl.train.local.learner.Learner` (torch-free, so configs parse
    cheaply; `reduction` takes `kwrl.train.algorithms.Reduction`'s values)."""

    lr: float = 1e-6
    """AdamW learning rate (recipe: 1e-6 for large models; small models need more, e.g. 1e-5)."""
    betas: tuple[float, float] = (0.9, 0.98)
    """AdamW betas."""
    weight_decay: float = 0.01
    """AdamW weight decay."""
    grad_clip: float = 1.0
    """Max global gradient norm."""
    loss: PolicyLossConfig = Field(default_factory=DPPOLoss)
    """Policy loss and its settings, a table keyed by `kind` (`kwrl.train.losses`): `{kind =
    "dppo", delta_low = 0.15, delta_high = 0.15}` (the recipe's) or `{kind = "ppo", eps_low = 0.2,
    eps_high = 0.2}`."""
    reduction: Literal["token_mean", "sequence_mean", "prompt_mean"] = "prompt_mean"
    """Loss reduction: token_mean, sequence_mean or prompt_mean (the recipe's)."""
    kl_coef: float = 0.0
    """Weight of the k3 KL penalty to the initial policy; 0 disables it (the recipe's)."""
    micro_batch_size: int = Field(default=2, ge=1)
    """Sequences per forward/backward pass (with `share_prefix`, a group's trials in one
    micro-batch compute their common prompt once)."""
    device: str = "cpu"
    """torch device of the trained model (batches are moved there per micro-batch)."""
    temperature: float = Field(default=1.0, gt=0.0)
    """Sampling temperature of the rollouts (logits are scaled by it); must equal the agent's
    (`agent.temperature`), which samples them: `TrainConfig` refuses a mismatch, and an
    `agent.top_p` below 1 (the learner models no truncation)."""
    dtype: Literal["float32", "bfloat16"] = "float32"
    """Parameter dtype of the trained model."""
    compile: bool = False
    """torch.compile the decoder layers and the LM-head logprob chunks (GPU: fewer, fused kernels;
    slow first step)."""
    compile_mode: str | None = None
    """torch.compile mode of the decoder layers when `compile` is on, e.g.
    `max-autotune-no-cudagraphs` (searches GEMM kernels: minutes of warm-up, faster steps)."""
    gradient_checkpointing: bool = False
    """Keep only each decoder layer's input for backward and recompute the layer there (transformers'
    gradient checkpointing, non-reentrant): about a third more compute for far less memory. A
    layer's saved activations are ~1.5 MB a token for SmolLM2-135M in float32 (30 layers), so a
    micro-batch of 4 x 2,300 tokens peaked at 22 GB on CPU without it; `kwrl smoke` turns it on."""
    head_checkpoint: bool = True
    """Recompute the LM head's logits in backward instead of keeping them. Off: one head matmul
    less per step, at scored tokens x vocab x 2 bytes (bf16) more memory per micro-batch."""
    head_chunk: int = Field(default=8192, ge=1)
    """Scored positions per LM-head chunk: each chunk's logits (chunk x vocab) exist at once.
    Larger chunks mean fewer, larger matmuls (GPU: e.g. 65536 for a 64k-token batch)."""
    attention: Literal["default", "cudnn", "flash"] = "default"
    """SDPA kernel to prefer in training forwards: PyTorch's default choice, cuDNN's fused
    attention (fastest on Hopper GPUs) or FlashAttention-2; the others stay as fallbacks."""
    gpu_kernels: bool = True
    """With `compile` on a CUDA device: the LM head's logprob reduction and logits gradient run
    as kwrl's Triton kernels (`kwrl.train.local.kernels`: one read of the logits a pass, the
    gradient written over them) instead of torch.compile'd functions."""
    share_prefix: bool = True
    """Run the leading tokens a GRPO group's trials share (the prompt) once per micro-batch
    through the decoder instead of once per trial (`kwrl.train.local.prefix`; SDPA models; exact
    up to float rounding). Groups must sit in adjacent rows, as the trainer collates them, and
    only a micro-batch holding two or more trials of a group gains."""


class DynamicSampling(KwrlConfig):
    """Dynamic sampling: a step's batch holds informative groups (trials that scored differently)
    instead of groups that score alike and train nothing (`kwrl.train.local.dynamic`). The step
    samples `ceil(oversample * prompts_per_step)` tasks, keeps the groups whose trained members'
    rewards differ, and while fewer than `prompts_per_step` are informative samples more tasks
    (as many as are missing, times `oversample`), until the step has sampled `max_factor *
    prompts_per_step` tasks. The learner gets at most `prompts_per_step` groups: the informative
    ones first, then alike ones to fill (they train nothing, as before)."""

    on: bool = False
    """Oversample and refill (off: exactly `prompts_per_step` tasks, as sampled)."""
    oversample: float = Field(default=1.5, ge=1.0)
    """Tasks sampled per missing informative group, first wave and refills alike."""
    max_factor: float = Field(default=3.0, ge=1.0)
    """A step samples at most this many times `prompts_per_step` tasks (the cap on extra
    sampling)."""


class RLConfig(KwrlConfig):
    prompts_per_step: int = Field(default=2, ge=1)
    """Tasks (GRPO groups) per optimizer step (recipe: 16)."""
    samples_per_prompt: int = Field(default=2, ge=1)
    """Trials per task, the group size (recipe: 16)."""
    steps: int = Field(default=2, ge=1)
    """Optimizer steps to run (stops earlier when the epochs are used up)."""
    epochs: int = Field(default=1, ge=1)
    """Passes over the training tasks."""
    mode: Literal["sync", "async", "disaggregated"] = "sync"
    """sync: generate then learn; async: generation overlaps learning, bounded by max_staleness;
    disaggregated: as async, but generation runs in worker processes (see [disaggregated])."""
    max_staleness: int = Field(default=1, ge=0)
    """async, disaggregated: a batch sampled by policy version v trains only while learner
    version - v <= this; in async mode the next batch starts sampling only once the learner is
    at most this many versions ahead of the weights it samples with (1: generation of batch k+1
    overlaps the learner's update on batch k)."""
    norm_adv_by_std: bool = False
    """Divide GRPO advantages by the group's std (the recipe does not)."""
    drop_zero_variance: bool = True
    """Drop groups whose trials all got the same reward (no signal)."""
    ckpt_every: int = Field(default=1, ge=1)
    """Save a checkpoint every this many steps (and at the end)."""
    dynamic: DynamicSampling = Field(default_factory=DynamicSampling)
    """Dynamic sampling (oversample, drop groups that score alike, refill); off by default."""
    steer: Steering = Field(default_factory=Steering)
    """Pass-rate steering of which tasks are drawn (`kwrl.train.local.sampler`); off by default."""


class LoRAConfig(KwrlConfig):
    """peft LoRA adapters on the trained model: only the adapters learn, the engine samples from
    the merged weights, and checkpoints hold both (model/ merged, adapter/ to resume from)."""

    rank: int = Field(default=0, ge=0)
    """Adapter rank; 0 trains every weight (full fine-tuning)."""
    alpha: int = Field(default=32, gt=0)
    """The adapters' update is scaled by alpha / rank."""
    dropout: float = Field(default=0.0, ge=0.0, lt=1.0)
    """Dropout on the adapters' input (0: the learner's logprobs are the sampler's)."""
    target_modules: list[str] = Field(
        default_factory=lambda: [
            "q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"
        ],
        min_length=1,
    )  # fmt: skip
    """Names of the linear layers that get adapters (default: every one in the decoder)."""


class DisaggregatedConfig(KwrlConfig):
    """Generation in worker processes, the learner in the trainer's; weights broadcast after each step."""

    generation_devices: list[str] = Field(default_factory=lambda: ["cpu"], min_length=1)
    """One generation worker process (with its own engine) per entry, e.g. ["cuda:0"]; each
    batch's groups are split across them."""
    backend: Literal["auto", "gloo", "nccl"] = "auto"
    """Weight broadcast: auto = nccl when the learner and every worker sit on distinct GPUs, else
    gloo through host memory (two ranks on one GPU: NCCL refuses a duplicate GPU)."""
    bucket_mb: int = Field(default=256, ge=1)
    """Parameters are flattened into buckets of about this size, one broadcast per bucket."""
    master_port: int = Field(default=0, ge=0, le=65535)
    """TCP port of the process group's rendezvous on 127.0.0.1; 0 picks a free one."""
    worker_threads: int | None = Field(default=None, ge=1)
    """torch CPU threads per worker process (default: torch's choice)."""
    start_timeout_s: float = Field(default=600.0, gt=0)
    """How long workers may take to load their engine and join the process group."""


class HeldoutConfig(KwrlConfig):
    """Evaluation of the policy on held-out tasks while it trains (`kwrl.train.local.heldout`):
    at step 0 (the initial weights), every `every` steps and at the last step, the trainer's own
    engine (the weights it just pushed) runs `n_samples` trials of each task in `dataset` with
    the training agent's settings; each lands in RUN/heldout/step-NNNNNN/ (eval.json,
    report.html) and one line of RUN/heldout.jsonl. Off while `dataset` is unset."""

    dataset: Path | None = None
    """Held-out task-dirs dataset (tasks of worlds the run does not train on); None: no evaluation."""
    every: int = Field(default=0, ge=0)
    """Evaluate every this many steps (0: only at step 0 and at the last step)."""
    n_samples: int = Field(default=1, ge=1)
    """Trials per held-out task at each evaluation."""
    sample_seed: int | None = 0
    """Trial (task, k) samples with the same seed at every evaluation (common random numbers), so
    the evaluations pair by task; None: unseeded."""
    temperature: float | None = None
    """Sampling temperature of the evaluation trials; None: the agent's (the rollouts')."""
    concurrency: int | None = Field(default=None, ge=1)
    """Trials at once; None: the trainer's `concurrency`."""


class TrainConfig(TrialSettings, OutputConfig):
    """Everything one `kwrl train` run needs; saved resolved as RUN/config.toml. How each trial runs
    (concurrency, retries, agent, policy, judge, sandbox) comes from
    `kwrl.rollout.settings.TrialSettings`, as in every verb's config."""

    dataset: Path
    """A task-dirs dataset (DATASET/tasks/<slug>/ and DATASET/worlds/)."""
    out: Path = Path("runs/train")
    """Run dir: checkpoints/, rollouts/, metrics.jsonl, tb/, config.toml. A run dir of an earlier
    `kwrl train` resumes; any other non-empty dir needs `overwrite=true`."""
    model: str = "smollm2-135m"
    """Initial weights: a packaged model name, a local HF folder (e.g. an SFT checkpoint) or a hub id."""
    tokenizer: str | None = None
    """Tokenizer (packaged name or folder); default: the model's."""
    tasks: list[str] | None = None
    """Task slugs to train on; default: every task in the dataset."""
    seed: int = 0
    """Seed of the prompt order and of torch."""
    rl: RLConfig = Field(default_factory=RLConfig)
    """Batch shape, mode and schedule."""
    learner: LearnerConfig = Field(default_factory=lambda: LearnerConfig(lr=1e-5))
    """Optimizer and loss."""
    engine: EngineConfig = Field(default_factory=EngineConfig)
    """The in-process sampling engine (its `model` is set by the trainer; in disaggregated mode
    its `device` by `disaggregated.generation_devices`)."""
    rollout_engine: Literal["engine", "vllm"] = "engine"
    """What the trials sample from: `engine` (kwrl's in-process engine, `[engine]`) or `vllm`
    (vLLM in this process on the learner's GPU, `[vllm]`; needs the `gpu` extra)."""
    vllm: VLLMConfig = Field(default_factory=VLLMConfig)
    """The vLLM engine of `rollout_engine = "vllm"` (its model is set by the trainer)."""
    disaggregated: DisaggregatedConfig = Field(default_factory=DisaggregatedConfig)
    """Worker processes and weight broadcast of `rl.mode = "disaggregated"`."""
    lora: LoRAConfig = Field(default_factory=LoRAConfig)
    """LoRA adapters (`lora.rank > 0`) instead of full fine-tuning."""
    agent: AgentConfig = Field(
        default_factory=lambda: AgentConfig(
            max_steps=6, max_tokens_per_turn=256, context_window=6144
        )
    )
    """KwrlAgent settings, e.g. max_steps, tools, temperature. A config's `[agent]` table replaces
    this default whole: fields it leaves out take AgentConfig's defaults."""
    heldout: HeldoutConfig = Field(default_factory=HeldoutConfig)
    """Held-out evaluations along the run (`[heldout] dataset = ...`; off by default)."""
    tensorboard: bool = True
    """Also write metrics to RUN/tb for TensorBoard."""

    def rollout_config(self, policy_dir: Path, handle: str) -> RolloutConfig:
        """How a batch's trials run: KwrlAgent sampling from the engine the trainer (or a
        generation worker) registered under `handle` (`live:HANDLE`,
        `kwrl.llm.engines.register_engine`; it never loads one of its own), rendering with
        `policy_dir`'s tokenizer, graded by `judge`."""
        return build_rollout_config(
            self, live_spec(handle), n_samples=self.rl.samples_per_prompt,
            tokenizer=str(policy_dir),
        )  # fmt: skip

    @model_validator(mode="after")
    def _lora_modes(self) -> TrainConfig:
        if self.rollout_engine == "vllm" and self.rl.mode == "disaggregated":
            raise ValueError(
                "rollout_engine = 'vllm' runs in the trainer's process; use rl.mode sync or async"
            )
        if self.heldout.dataset is not None and self.rl.mode == "disaggregated":
            raise ValueError(
                "heldout.dataset: held-out evaluations run on the trainer's engine, in rl.mode "
                "sync or async (disaggregated workers hold their own); unset it or use one of those"
            )
        if self.lora.rank > 0 and self.rl.mode == "disaggregated":
            raise ValueError(
                "lora.rank > 0 is not supported with rl.mode = 'disaggregated' (its workers "
                "receive the model's own parameters); use sync or async"
            )
        return self

    @model_validator(mode="after")
    def _on_policy_temperature(self) -> TrainConfig:
        """The learner scores each sampled token at `learner.temperature`; the rollouts sampled it
        at `agent.temperature`. Unequal, every ratio and the DPPO/PPO trust region compare against
        a policy that never sampled: training goes off-policy without an error."""
        if self.agent.temperature != self.learner.temperature:
            raise ValueError(
                f"agent.temperature = {self.agent.temperature} but learner.temperature = "
                f"{self.learner.temperature}: the learner would score the rollouts at another "
                "temperature than they were sampled at (off-policy); set both to the same value"
            )
        return self

    @model_validator(mode="after")
    def _on_policy_top_p(self) -> TrainConfig:
        """The learner scores each sampled token under the whole distribution at
        `learner.temperature` (it has no top_p); rollouts sampled with `agent.top_p` < 1 came from
        the nucleus alone, a policy the learner never scores: off-policy without an error."""
        if self.agent.top_p != 1.0:
            raise ValueError(
                f"agent.top_p = {self.agent.top_p} but the learner scores the whole distribution "
                "at learner.temperature (it models no top_p): the rollouts would be sampled from "
                "a truncated distribution it never scores (off-policy); set agent.top_p = 1.0"
            )
        return self


class SFTConfig(OutputConfig):
    """`kwrl train sft`'s config (its flags): the SFT warm start on gold trajectories
    (`kwrl.train.local.sft`)."""

    dataset: Path
    """A task-dirs dataset with generated tasks (solution/gold_calls.json)."""
    out: Path = Path("runs/sft")
    """Run dir: checkpoints/step-N/model is the warm-started model. A non-empty dir needs
    `overwrite=true` (which replaces what an earlier `kwrl train sft` wrote there)."""
    model: str = "smollm2-135m"
    """Initial weights: packaged name, local folder or hub id."""
    tasks: list[str] | None = None
    """Task slugs to learn from; default: every task with a gold solution."""
    epochs: int = Field(default=2, ge=1)
    """Passes over the gold trajectories."""
    batch_size: int = Field(default=4, ge=1)
    """Trajectories per optimizer step."""
    lr: float = 5e-5
    """AdamW learning rate."""
    max_len: int = Field(default=4096, ge=64)
    """Trajectories longer than this (tokens) are skipped."""
    share_prefix: bool = True
    """Run each batch as one packed forward/backward in which the tokens every trajectory of the
    batch starts with (system prompt, tool list) run once (`kwrl.train.local.prefix`; exact up to
    float rounding). Off, or when they share nothing: one trajectory at a time (least memory)."""
    seed: int = 0
    """Shuffle seed."""
    device: str = "cpu"
    """torch device of the trained model, e.g. `cuda:0` (batches are moved there per step);
    the checkpoint is written from it as on CPU."""
    agent: AgentConfig = Field(default_factory=AgentConfig)
    """Agent settings, as in training (system prompt, tools, parser) so the format matches."""
    discover: bool = False
    """Replay each gold solution with the discovery calls an agent needs before it (`with_discovery`):
    list the folders of a file whose path the instruction does not give, search the mail for a
    mail id it does not give. Off, a trajectory reads a path or mail id it could not know, and
    the model learns to guess one (the families that need such a path scored 0)."""
