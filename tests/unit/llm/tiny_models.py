"""Tiny random Llamas for the engine tests, and what a fresh forward of one gives."""

from __future__ import annotations

from typing import Any

import torch
from transformers import LlamaConfig, LlamaForCausalLM


def tiny_llama(vocab: int, seed: int) -> LlamaForCausalLM:
    """A 2-layer GQA Llama (4 query heads on 2 KV heads) with seeded random weights."""
    torch.manual_seed(seed)
    cfg = LlamaConfig(
        vocab_size=vocab,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=1024,
    )
    return LlamaForCausalLM(cfg).eval()


def fresh_logprobs(model: Any, prompt: list[int], completion: list[int]) -> list[float]:
    """Logprobs (raw logits, temperature 1) of `completion` after `prompt`: one unbatched,
    uncached forward."""
    with torch.inference_mode():
        logits = model(torch.tensor([prompt + completion])).logits[0].float()
    logp = torch.log_softmax(logits, dim=-1)
    return [float(logp[len(prompt) - 1 + i, t]) for i, t in enumerate(completion)]
