"""LoRA for the single-machine trainer (`[lora] rank > 0`), on peft.

peft injects its adapter layers into the transformers model in place; the learner trains that
model as it would the full one (only the adapters require grad, so the frozen weights get no
gradient and no optimizer state). What leaves the learner is always a plain model of the base
architecture: the engine receives the merged weights W + (alpha / r) B A after every step, and a
checkpoint's model/ holds them too (so `kwrl eval`, the engine and a later run load it as any HF
model), beside adapter/ (peft's adapter files), from which a run resumes onto its base weights.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from kwrl.train.local.config import LoRAConfig

ADAPTER = "default"


def add_lora(model: Any, cfg: LoRAConfig, adapter_dir: Path | None = None) -> Any:
    """Inject adapters into `model` (a transformers causal LM), fresh or loaded from
    `adapter_dir`, and return the PeftModel; `model` itself now holds the adapter layers."""
    from peft import LoraConfig, PeftModel, get_peft_model

    if adapter_dir is not None:
        return PeftModel.from_pretrained(model, str(adapter_dir), is_trainable=True)
    pcfg = LoraConfig(
        r=cfg.rank, lora_alpha=cfg.alpha, lora_dropout=cfg.dropout,
        target_modules=list(cfg.target_modules), bias="none", task_type="CAUSAL_LM",
    )  # fmt: skip
    return get_peft_model(model, pcfg)


def merged_state_dict(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The state dict of the base architecture with every adapter merged into its weight.

    `model` is the transformers model peft injected its layers into. Keys are the base model's
    own (`...q_proj.weight`, not `...q_proj.base_layer.weight`); adapter tensors are left out.
    Nothing in `model` changes.
    """
    from peft.tuners.lora import LoraLayer

    layers: dict[str, Any] = {n: m for n, m in model.named_modules() if isinstance(m, LoraLayer)}
    out: dict[str, torch.Tensor] = {}
    with torch.no_grad():
        for key, value in model.state_dict().items():
            owner, sep, tail = key.partition(".base_layer.")
            if not sep:
                if not any(part.startswith("lora_") for part in key.split(".")):
                    out[key] = value.detach()
                continue
            if tail == "weight" and ADAPTER in layers[owner].lora_A:
                delta = layers[owner].get_delta_weight(ADAPTER)
                value = value + delta.to(value.dtype)
            out[f"{owner}.{tail}"] = value.detach()
    return out
