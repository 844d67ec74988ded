"""The learner: policy-gradient steps on TITO batches with a transformers causal LM.

One `step(batch)` = one optimizer step over the whole batch, split into micro-batches whose
gradients accumulate. The loss reduction is computed over the whole batch first
(`reduction_weights`), so micro-batching never changes the loss. Behaviour (old) logprobs are the
sampler's own (`rollout_logprobs`): every policy loss (`LearnerConfig.loss`, `kwrl.train.losses`,
applied through its `compute`) corrects against the policy that sampled, and no extra forward pass
is needed. Logits are divided by the sampling temperature so the learner's logprobs are those of
the distribution actually sampled from.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import time
from typing import Any

import torch

from kwrl.errors import ConfigError
from kwrl.train.algorithms import group_ids_to_boundaries, kl_k3, reduction_weights
from kwrl.train.batch import Batch
from kwrl.train.local import prefix as prefix_pack
from kwrl.train.local.config import LearnerConfig
from kwrl.train.local.prefix import PrefixPlan


def _scaled(logits_N_V: torch.Tensor, temperature: float) -> torch.Tensor:
    logits = logits_N_V.float()
    return logits / temperature if temperature != 1.0 else logits


def _logprob_lse(
    logits_N_V: torch.Tensor, targets_N: torch.Tensor, temperature: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """log p(target) and logsumexp of the (temperature-scaled, float32) logits, per row."""
    logits = _scaled(logits_N_V, temperature)
    lse = torch.logsumexp(logits, dim=-1)
    return torch.gather(logits, -1, targets_N.unsqueeze(-1)).squeeze(-1) - lse, lse


def _dlogits_fused(
    logits_N_V: torch.Tensor,
    lse_N: torch.Tensor,
    targets_N: torch.Tensor,
    g_N: torch.Tensor,
    temperature: float,
) -> torch.Tensor:
    """d(sum_i g_i log p_i(t_i)) / d logits = g (onehot(t) - softmax(logits / T)) / T.

    Written as one pointwise expression (the one-hot is a comparison with an index) so that
    torch.compile makes it a single pass: read the logits, write the gradient.
    """
    p = torch.exp(_scaled(logits_N_V, temperature) - lse_N.unsqueeze(-1))
    onehot = torch.arange(logits_N_V.shape[-1], device=logits_N_V.device) == targets_N.unsqueeze(-1)
    return ((onehot.float() - p) * (g_N / temperature).unsqueeze(-1)).to(logits_N_V.dtype)


def _dlogits_inplace(
    logits_N_V: torch.Tensor,
    lse_N: torch.Tensor,
    targets_N: torch.Tensor,
    g_N: torch.Tensor,
    temperature: float,
) -> torch.Tensor:
    """`_dlogits_fused` in eager mode, with one float32 N x V temporary (CPU training)."""
    gt = (g_N / temperature).unsqueeze(-1)
    d = logits_N_V.to(torch.float32, copy=True)
    if temperature != 1.0:
        d.div_(temperature)
    d.sub_(lse_N.unsqueeze(-1)).exp_().mul_(-gt)
    d.scatter_add_(-1, targets_N.unsqueeze(-1), gt)
    return d.to(logits_N_V.dtype)


_COMPILED: dict[str, Any] = {}


def _head_fns(compiled: bool, kernels: bool = False) -> tuple[Any, Any]:
    """The head's forward reduction and logits-gradient functions, torch.compile'd on request
    (`kernels`: the Triton kernels, CUDA tensors only)."""
    if kernels:
        from kwrl.train.local import kernels as k

        return k.logprob_lse, k.dlogits_
    if not compiled:
        return _logprob_lse, _dlogits_inplace
    if "fwd" not in _COMPILED:
        # Automatic dynamic shapes: the chunk's row count becomes symbolic once it changes, the
        # vocabulary stays a constant (aligned, vectorised loads; no division by a symbol).
        _COMPILED["fwd"] = torch.compile(_logprob_lse)
        _COMPILED["bwd"] = torch.compile(_dlogits_fused)
    return _COMPILED["fwd"], _COMPILED["bwd"]


class _HeadLogprobs(torch.autograd.Function):
    """log p(targets) under the LM head `hidden @ weight.T`, for one chunk of positions.

    The backward is written out: d logits = g (onehot - softmax) / T in one pass, then the two
    matmuls. The logits are kept for backward (`keep_logits`) or recomputed there, so the chunk's
    float32 probabilities, the gather's scatter and autograd's intermediates never exist.
    """

    @staticmethod
    def forward(  # type: ignore[override]
        ctx: Any,
        hidden_N_H: torch.Tensor,
        weight_V_H: torch.Tensor,
        targets_N: torch.Tensor,
        temperature: float,
        keep_logits: bool,
        compiled: bool,
        kernels: bool = False,
    ) -> torch.Tensor:
        fwd, _ = _head_fns(compiled, kernels)
        logits = hidden_N_H @ weight_V_H.T
        lp, lse = fwd(logits, targets_N, temperature)
        ctx.temperature, ctx.compiled, ctx.kernels = temperature, compiled, kernels
        if keep_logits:
            ctx.save_for_backward(hidden_N_H, weight_V_H, targets_N, lse, logits)
        else:
            ctx.save_for_backward(hidden_N_H, weight_V_H, targets_N, lse)
        return lp

    @staticmethod
    def backward(ctx: Any, *grads: torch.Tensor) -> tuple[torch.Tensor | None, ...]:  # type: ignore[override]
        hidden, weight, targets, lse, *kept = ctx.saved_tensors
        logits = kept[0] if kept else hidden @ weight.T
        _, dlogits = _head_fns(ctx.compiled, ctx.kernels)
        d = dlogits(logits, lse, targets, grads[0].float(), ctx.temperature)
        del logits, kept
        dh = d @ weight if ctx.needs_input_grad[0] else None
        dw = d.T @ hidden if ctx.needs_input_grad[1] else None
        return dh, dw, None, None, None, None, None


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
    scored: torch.Tensor | None = None,
    right_padded: bool | None = None,
    gpu_kernels: bool = False,
    prefix: PrefixPlan | None = None,
) -> torch.Tensor:
    """log p(target_t | ids_<=t) for every position, float32, shape B x L.

    The LM head runs in chunks of `chunk` positions with a written-out backward
    (`_HeadLogprobs`), so the full B x L x vocab logits tensor (19 GB for 64k tokens of a 152k
    vocab in bf16) never exists; only the hidden states are kept for backward and each chunk's
    logits are recomputed there (`head_checkpoint=False` keeps them instead and skips the
    recompute). Models without a separable head fall back to logits.

    `only_mask`: run the head only where `batch.mask_B_L` is 1 (the tokens a loss reads) and
    return 0 elsewhere; prompts and tool outputs then cost no head FLOPs. A right-padded batch
    (collate's layout) is run without an attention mask: padding sits after every real token, so
    causal attention alone gives the same values and SDPA can take its flash kernel.

    `scored` (the flat indices of the mask's ones) and `right_padded`, when the caller computed
    them on the host, spare the GPU the two synchronisations that finding them there costs.

    `gpu_kernels`: on CUDA tensors, the head's Triton kernels (`LearnerConfig.gpu_kernels`).

    `prefix`: the micro-batch packed so that each group's shared prefix runs once
    (`kwrl.train.local.prefix.plan`, on this device; the model's attention must be
    `prefix.ATTENTION`). The values are those of the unpacked batch.
    """
    attn = batch.attention_mask_B_L
    if right_padded if right_padded is not None else _right_padded(attn):
        attn = None
    head = getattr(model, "get_output_embeddings", lambda: None)()
    base = getattr(model, "model", None)
    if head is None or base is None or getattr(head, "bias", None) is not None:
        logits = model(input_ids=batch.input_ids_B_L, attention_mask=attn, use_cache=False).logits
        flat = logits.reshape(-1, logits.shape[-1]).float() / temperature
        t = batch.targets_B_L.reshape(-1)
        lp = torch.gather(flat, -1, t.unsqueeze(-1)).squeeze(-1) - torch.logsumexp(flat, -1)
        return lp.view(batch.targets_B_L.shape)
    B, L = batch.input_ids_B_L.shape
    if prefix is None:
        hidden = base(input_ids=batch.input_ids_B_L, attention_mask=attn, use_cache=False)[0]
    else:
        hidden = base(
            input_ids=prefix.input_ids_G_Lp, position_ids=prefix.position_ids_G_Lp,
            attention_mask=None, use_cache=False, kwrl_unpack=prefix.unpack_BL,
            kwrl_repack=prefix.repack_GLp, kwrl_rows=B,
        )[0]  # fmt: skip
    H = hidden.shape[-1]
    h = hidden.reshape(-1, H)
    t = batch.targets_B_L.reshape(B * L)
    idx = None
    if only_mask:
        idx = scored if scored is not None else batch.mask_B_L.reshape(B * L).nonzero().squeeze(-1)
        rows = idx if prefix is None else prefix.unpack_BL.index_select(0, idx)
        h, t = h.index_select(0, rows), t.index_select(0, idx)
    elif prefix is not None:
        h = h.index_select(0, prefix.unpack_BL)
    grad = torch.is_grad_enabled() and (h.requires_grad or head.weight.requires_grad)
    kernels = gpu_kernels and h.is_cuda
    fwd, _ = _head_fns(compiled_head, kernels)
    parts = []
    for s in range(0, h.shape[0], chunk):
        hs, ts = h[s : s + chunk], t[s : s + chunk]
        if grad:
            part = _HeadLogprobs.apply(
                hs, head.weight, ts, temperature, not head_checkpoint, compiled_head, kernels
            )
        else:
            part = fwd(hs @ head.weight.T, ts, temperature)[0]
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


def _to(x: torch.Tensor, device: torch.device) -> torch.Tensor:
    """Host tensor to `device`; to a GPU from pinned memory without blocking the host."""
    if x.device == device:
        return x
    if device.type == "cuda" and x.device.type == "cpu":
        return x.pin_memory().to(device, non_blocking=True)
    return x.to(device)


def on_device[D: (Batch, PrefixPlan)](batch: D, device: torch.device) -> D:
    """A dataclass of tensors (a Batch, a PrefixPlan) with its tensors on `device` (`_to`)."""
    moved = {
        f.name: _to(getattr(batch, f.name), device)
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
        if cfg.gradient_checkpointing:
            enable = getattr(model, "gradient_checkpointing_enable", None)
            if enable is None:
                raise ConfigError(
                    f"learner.gradient_checkpointing: {type(model).__name__} has no "
                    "gradient_checkpointing_enable (a transformers model is needed)"
                )
            enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        self.share_prefix = cfg.share_prefix and prefix_pack.enable(model)
        self.version = 0
        """Number of optimizer steps taken: the policy's weight version."""
        self.device = params[0].device if params else torch.device("cpu")

    def step(self, batch: Batch) -> dict[str, Any]:
        """One optimizer step over `batch`; returns metrics.

        A step whose gradient norm is not finite changes nothing. With the fused (GPU) optimizer
        that check happens on the device (the kernel's `found_inf`, as under GradScaler), so the
        host reads the metrics once, after the update is queued, and the GPU never waits on it.
        """
        t0 = time.perf_counter()
        metrics, sums = self._accumulate(batch)
        params = [p for p in self.model.parameters() if p.requires_grad]
        norm = torch.nn.utils.clip_grad_norm_(params, self.cfg.grad_clip)
        if metrics["trained_tokens"] > 0:
            if self.optimizer.defaults.get("fused"):
                self.optimizer.found_inf = (~torch.isfinite(norm)).float()  # type: ignore[attr-defined]
                try:
                    self.optimizer.step()
                finally:
                    del self.optimizer.found_inf  # type: ignore[attr-defined]
            elif math.isfinite(float(norm)):
                self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.version += 1
        metrics.update(self._read(sums, metrics["trained_tokens"]))
        metrics.update(grad_norm=float(norm), version=self.version)
        metrics["learner_s"] = time.perf_counter() - t0
        return metrics

    @staticmethod
    def _read(sums: torch.Tensor, trained: float) -> dict[str, float]:
        total_loss, clip_tokens, mismatch = sums.tolist()
        return {
            "loss": total_loss,
            "clip_frac": clip_tokens / max(trained, 1.0),
            "logprob_abs_diff": mismatch / max(trained, 1.0),
        }

    def accumulate(self, batch: Batch) -> dict[str, Any]:
        """Forward/backward over `batch` in micro-batches, leaving the summed gradients in place."""
        t0 = time.perf_counter()
        metrics, sums = self._accumulate(batch)
        metrics.update(self._read(sums, metrics["trained_tokens"]))
        metrics["learner_s"] = time.perf_counter() - t0
        return metrics

    def _accumulate(self, batch: Batch) -> tuple[dict[str, Any], torch.Tensor]:
        """`accumulate`, with the loss / clipped-token / logprob-mismatch sums left on the device.

        What decides control flow (which micro-batches train, where the scored tokens are,
        whether the padding is on the right) is read off the batch on the host, and the metrics
        stay on the device until the end: the GPU is not made to wait mid-step.
        """
        cfg = self.cfg
        self.model.train()
        host = batch.mask_B_L.cpu()
        bounds = group_ids_to_boundaries(batch.group_ids)
        weights = reduction_weights(host, cfg.reduction, bounds)
        sums = torch.zeros(3, device=self.device)  # loss, clipped tokens, |logprob mismatch|
        trained = float(host.sum())
        attn = batch.attention_mask_B_L.cpu()
        B = batch.input_ids_B_L.shape[0]
        for s in range(0, B, cfg.micro_batch_size):
            e = s + cfg.micro_batch_size
            if float(host[s:e].sum()) == 0:
                continue
            mb = on_device(batch.slice(s, e), self.device)
            w = _to(weights[s:e], self.device)
            scored = _to(host[s:e].reshape(-1).nonzero().squeeze(-1), self.device)
            head = {"only_mask": True, "scored": scored, "right_padded": _right_padded(attn[s:e])}
            packed = None
            if self.share_prefix:
                packed = prefix_pack.plan(batch.input_ids_B_L[s:e], attn[s:e], batch.group_ids[s:e])
                packed = on_device(packed, self.device) if packed is not None else None
            with _attention(cfg.attention):
                lp = token_logprobs(
                    self.model, mb, cfg.temperature, compiled_head=cfg.compile,
                    head_checkpoint=cfg.head_checkpoint, chunk=cfg.head_chunk,
                    gpu_kernels=cfg.compile and cfg.gpu_kernels, prefix=packed,
                    **head,
                )  # fmt: skip
                out = cfg.loss.compute(lp, mb.rollout_logprobs_B_L, mb.advantages_B_L, mb.mask_B_L)
                loss = (out.loss_B_T * w).sum()
                if cfg.kl_coef > 0 and self.ref_model is not None:
                    with torch.no_grad():
                        ref_lp = token_logprobs(self.ref_model, mb, cfg.temperature, **head)
                    loss = loss + cfg.kl_coef * (kl_k3(lp, ref_lp) * w).sum()
                loss.backward()
            with torch.no_grad():
                diff = (mb.rollout_logprobs_B_L - lp) * mb.mask_B_L
                sums += torch.stack([loss, (out.clipped_B_T * mb.mask_B_L).sum(), diff.abs().sum()])
        return {"trained_tokens": trained, "tokens": int(attn.sum())}, sums
