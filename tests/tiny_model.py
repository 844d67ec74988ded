"""The tiny model, the other faked seam (AGENTS.md): a 2-layer random Llama with SmolLM2's
tokenizer, saved as an HF folder that `engine:`, the trainer and `kwrl eval` load like any model.
tests/conftest.py serves one per session as `tiny_model_dir`."""

from __future__ import annotations

from pathlib import Path


def save_tiny_llama(out: Path) -> Path:
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from kwrl.llm.packaged import ensure_tokenizer

    tok = AutoTokenizer.from_pretrained(ensure_tokenizer("smollm2-135m"))
    cfg = LlamaConfig(
        vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=8192,
        bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id, tie_word_embeddings=True,
    )  # fmt: skip
    torch.manual_seed(0)
    LlamaForCausalLM(cfg).save_pretrained(out)
    tok.save_pretrained(out)
    return out
