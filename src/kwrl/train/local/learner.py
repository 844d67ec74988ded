"""The learner: policy-gradient steps on TITO batches with a transformers causal LM.

One `step(batch)` = one optimizer step over the whole batch, split into micro-batches whose
gradients accumulate. The loss reduction is computed over the whole batch first
(`reduction_weights`), so micro-batching never changes the loss. Behaviour (old) logprobs are the
sampler's own (`rollout_logprobs`): DPPO and PPO both correct against the policy that sampled, and
no extra forward pass is needed. Logits are divided by the sampling temperature so the learner's
logprobs are those of the distribution actually sampled from.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import time
from typing import Any, Literal

import torch
from pydantic import Field
from torch.utils.checkpoint import checkpoint

from kwrl.config import KwrlConfig
from kwrl.train.algorithms import (
    POLICY_LOSSES,
    Reduction,
    group_ids_to_boundaries,
    kl_k3,
    reduction_weights,
)
from kwrl.train.batch import Batch


class LearnerConfig(KwrlConfig):
    lr: float = 1e-6
    """AdamW learning rate (recipe: 1e-6 for large models; small models need more, e.g. 1e-5)."""
    betas: tuple[float, float] = (0.9, 0.98)
    """AdamW betas."""
    weight_decay: float = 0.01
    """AdamW weight decay."""
    grad_clip: float = 1.0
    """Max global gradient norm."""
    loss: Literal["dppo", "ppo"] = "dppo"
    """Policy loss: DPPO (binary TV trust region, the recipe's) or PPO-clip."""
    delta_low: float = 0.15
    """DPPO: max probability decrease for a negative-advantage token before it is masked."""
    delta_high: float = 0.15
    """DPPO: max probability increase for a positive-advantage token before it is masked."""
    eps_low: float = 0.2
    """PPO: lower clip epsilon."""
    eps_high: float = 0.2
    """PPO: upper clip epsilon."""
    reduction: Reduction = "prompt_mean"
    """Loss reduction: token_mean, sequence_mean or prompt_mean (the recipe's)."""
    kl_coef: float = 0.0
    """Weight of the k3 KL penalty to the initial policy; 0 disables it (the recipe's)."""
    micro_batch_size: int = Field(default=2, ge=1)
    """Sequences per forward/backward pass."""
    device: str = "cpu"
    """torch device of the trained model (batches are moved there per micro-batch)."""
    temperature: float = 1.0
    """Sampling temperature of the rollouts (logits are scaled by it)."""
    dtype: Literal["float32", "bfloat16"] = "float32"
    """Parameter dtype of the trained model."""
    compile: bool = False
    """torch.compile the decoder layers and the LM-head logprob chunks (GPU: fewer, fused kernels;
    slow first step)."""
    compile_mode: str | None = None
    """torch.compile mode of the decoder layers when `compile` is on, e.g.
    `max-autotune-no-cudagraphs` (searches GEMM kernels: minutes of warm-up, faster steps)."""
    head_checkpoint: bool = True
    """Recompute the LM head's logits in backward instead of keeping them. Off: one head matmul
    less per step, at scored tokens x vocab x 2 bytes (bf16) more memory per micro-batch."""
    attention: Literal["default", "cudnn", "flash"] = "default"
    """SDPA kernel to prefer in training forwards: PyTorch's default choice, cuDNN's fused
    attention (fastest on Hopper GPUs) or FlashAttention-2; the others stay as fallbacks."""


def _chunk_logprobs(
    hidden_N_H: torch.Tensor, weight_V_H: torch.Tensor, targets_N: torch.Tensor, temperature: float
) -> torch.Tensor:
    logits = (hidden_N_H @ weight_V_H.T).float()
    if temperature != 1.0:
        logits = logits / temperature
    picked = torch.gather(logits, -1, targets_N.unsqueeze(-1)).squeeze(-1)
    return picked - torch.logsumexp(logits, dim=-1)


_COMPILED: dict[str, Any] = {}


def _chunk_fn(compiled: bool) -> Any:
    """`_chunk_logprobs`, or its torch.compile'd form (matmul + upcast + logsumexp + gather fused)."""
    if not compiled:
        return _chunk_logprobs
    if "chunk" not in _COMPILED:
        _COMPILED["chunk"] = torch.compile(_chunk_logprobs, dynamic=True)
    return _COMPILED["chunk"]


def _right_padded(mask_B_L: torch.Tensor) -> bool:
    """Every row is ones then zeros (`collate`'s layout): causal attention needs no mask then."""
    return bool((mask_B_L[:, 1:] <= mask_B_L[:, :-1]).all())


def token_logprobs(
    model: torch.nn.Module,
    batch: Batch,
    temperature: float = 1.0,
    *,
    chunk: int = 8192,
    only_mask: bool = False,
    compiled_head: bool = False,
    head_checkpoint: bool = True,
) -> torch.Tensor:
    """log p(target_t | ids_<=t) for every position, float32, shape B x L.

    The LM head runs in chunks of `chunk` positions under activation checkpointing, so the full
    B x L x vocab logits tensor (19 GB for 64k tokens of a 152k vocab in bf16) never exists; only
    the hidden states are kept for backward (`head_checkpoint=False` keeps each chunk's logits
    instead and skips the recompute). Models without a separable head fall back to logits.

    `only_mask`: run the head only where `batch.mask_B_L` is 1 (the tokens a loss reads) and
    return 0 elsewhere; prompts and tool outputs then cost no head FLOPs. A right-padded batch
    (collate's layout) is run without an attention mask: padding sits after every real token, so
    causal attention alone gives the same values and SDPA can take its flash kernel.
    """
    attn = batch.attention_mask_B_L
    if _right_padded(attn):
        attn = None
    head = getattr(model, "get_output_embeddings", lambda: None)()
    base = getattr(model, "model", None)
    if head is None or base is None or getattr(head, "bias", None) is not None:
        logits = model(input_ids=batch.input_ids_B_L, attention_mask=attn, use_cache=False).logits
        flat = logits.reshape(-1, logits.shape[-1]).float() / temperature
        t = batch.targets_B_L.reshape(-1)
        lp = torch.gather(flat, -1, t.unsqueeze(-1)).squeeze(-1) - torch.logsumexp(flat, -1)
        return lp.view(batch.targets_B_L.shape)
    hidden = base(input_ids=batch.input_ids_B_L, attention_mask=attn, use_cache=False)[0]
    B, L, H = hidden.shape
    h = hidden.reshape(B * L, H)
    t = batch.targets_B_L.reshape(B * L)
    idx = None
    if only_mask:
        idx = batch.mask_B_L.reshape(B * L).nonzero().squeeze(-1)
        h, t = h.index_select(0, idx), t.index_select(0, idx)
    fn = _chunk_fn(compiled_head)
    parts = []
    for s in range(0, h.shape[0], chunk):
        if torch.is_grad_enabled() and head_checkpoint:
            part = checkpoint(
                fn, h[s : s + chunk], head.weight, t[s : s + chunk], temperature,
                use_reentrant=False,
            )  # fmt: skip
        else:
            part = fn(h[s : s + chunk], head.weight, t[s : s + chunk], temperature)
        parts.append(part)
    flat_lp = torch.cat(parts) if parts else h.new_zeros(0, dtype=torch.float32)
    if idx is None:
        return flat_lp.view(B, L)
    full = torch.zeros(B * L, dtype=flat_lp.dtype, device=flat_lp.device)
    return full.index_put((idx,), flat_lp).view(B, L)


def _attention(pref: str) -> contextlib.AbstractContextManager[Any]:
    """SDPA kernels in preference order for `LearnerConfig.attention` (the rest stay fallbacks)."""
    if pref == "default":
        return contextlib.nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel

    first = SDPBackend.CUDNN_ATTENTION if pref == "cudnn" else SDPBackend.FLASH_ATTENTION
    rest = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]
    return sdpa_kernel([first, *(b for b in rest if b != first)], set_priority=True)


def _on_device(batch: Batch, device: torch.device) -> Batch:
    if batch.input_ids_B_L.device == device:
        return batch
    moved = {
        f.name: getattr(batch, f.name).to(device)
        for f in dataclasses.fields(batch)
        if isinstance(getattr(batch, f.name), torch.Tensor)
    }
    return dataclasses.replace(batch, **moved)


class Learner:
    def __init__(
        self,
        model: torch.nn.Module,
        cfg: LearnerConfig,
        *,
        ref_model: torch.nn.Module | None = None,
    ) -> None:
        self.model = model
        self.cfg = cfg
        self.ref_model = ref_model
        params = [p for p in model.parameters() if p.requires_grad]
        on_gpu = bool(params) and params[0].is_cuda
        self.optimizer = torch.optim.AdamW(
            params, lr=cfg.lr, betas=cfg.betas, weight_decay=cfg.weight_decay, fused=on_gpu
        )
        if cfg.compile:
            # Every layer is its own compiled module of the same code: allow a graph each.
            # `as`: a bare `import torch._dynamo` would make `torch` local to all of __init__.
            import torch._dynamo as dynamo

            layers = list(getattr(getattr(model, "model", None), "layers", []))
            dynamo.config.recompile_limit = max(dynamo.config.recompile_limit, 2 * len(layers) + 8)
            for layer in layers:
                layer.compile(dynamic=True, mode=cfg.compile_mode)
        self.version = 0
        """Number of optimizer steps taken: the policy's weight version."""
        self.device = params[0].device if params else torch.device("cpu")

    def step(self, batch: Batch) -> dict[str, Any]:
        """One optimizer step over `batch`; returns metrics."""
        metrics = self.accumulate(batch)
        grad_norm = float(
            torch.nn.utils.clip_grad_norm_(
                [p for p in self.model.parameters() if p.requires_grad], self.cfg.grad_clip
            )
        )
        if math.isfinite(grad_norm) and metrics["trained_tokens"] > 0:
            self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.version += 1
        metrics.update(grad_norm=grad_norm, version=self.version)
        return metrics

    def accumulate(self, batch: Batch) -> dict[str, Any]:
        """Forward/backward over `batch` in micro-batches, leaving the summed gradients in place."""
        cfg = self.cfg
        t0 = time.perf_counter()
        self.model.train()
        bounds = group_ids_to_boundaries(batch.group_ids)
        weights = reduction_weights(batch.mask_B_L, cfg.reduction, bounds)
        loss_fn = POLICY_LOSSES[cfg.loss]
        loss_kwargs: dict[str, float] = (
            {"delta_low": cfg.delta_low, "delta_high": cfg.delta_high}
            if cfg.loss == "dppo"
            else {"eps_low": cfg.eps_low, "eps_high": cfg.eps_high}
        )
        total_loss = 0.0
        clip_tokens = 0.0
        mismatch = 0.0
        trained = float(batch.mask_B_L.sum())
        B = batch.input_ids_B_L.shape[0]
        for s in range(0, B, cfg.micro_batch_size):
            mb = _on_device(batch.slice(s, s + cfg.micro_batch_size), self.device)
            w = weights[s : s + cfg.micro_batch_size].to(self.device)
            if float(mb.mask_B_L.sum()) == 0:
                continue
            with _attention(cfg.attention):
                lp = token_logprobs(
                    self.model, mb, cfg.temperature, only_mask=True, compiled_head=cfg.compile,
                    head_checkpoint=cfg.head_checkpoint,
                )  # fmt: skip
                out = loss_fn(
                    lp, mb.rollout_logprobs_B_L, mb.advantages_B_L, mb.mask_B_L, **loss_kwargs
                )
                loss = (out.loss_B_T * w).sum()
                if cfg.kl_coef > 0 and self.ref_model is not None:
                    with torch.no_grad():
                        ref_lp = token_logprobs(self.ref_model, mb, cfg.temperature, only_mask=True)
                    loss = loss + cfg.kl_coef * (kl_k3(lp, ref_lp) * w).sum()
                loss.backward()
            total_loss += float(loss.detach())
            n = float(mb.mask_B_L.sum())
            clip_tokens += out.clip_frac * n
            diff = (mb.rollout_logprobs_B_L - lp.detach()) * mb.mask_B_L
            mismatch += float(diff.abs().sum())
        return {
            "loss": total_loss,
            "clip_frac": clip_tokens / max(trained, 1.0),
            "logprob_abs_diff": mismatch / max(trained, 1.0),
            "trained_tokens": trained,
            "tokens": batch.num_tokens,
            "learner_s": time.perf_counter() - t0,
        }
