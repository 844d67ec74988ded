"""Prefix reuse across turns changes what the engine costs, never what it returns: multi-turn
requests give the same greedy ids and logprobs with the store on and off, a weight change empties
the store, and the store stays under its byte bound (tiny random Llamas, SmolLM2's tokenizer)."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Iterator
from typing import Any

import pytest
import torch
from tiny_models import fresh_logprobs, tiny_llama
from transformers import LlamaConfig, LlamaForCausalLM, MistralConfig

from kwrl.llm.base import SamplingParams
from kwrl.llm.engines import Engine
from kwrl.llm.kv_cache import PrefixStore, common_prefix_len, reusable_layers


def rand_ids(g: torch.Generator, n: int) -> list[int]:
    return torch.randint(5, 40000, (n,), generator=g).tolist()


@pytest.fixture(scope="module")
def models(smollm2_tokenizer: Any) -> tuple[LlamaForCausalLM, LlamaForCausalLM]:
    vocab = len(smollm2_tokenizer)
    return tiny_llama(vocab, seed=1), tiny_llama(vocab, seed=2)


@pytest.fixture
def engines(models: tuple[Any, Any], smollm2_tokenizer: Any) -> Iterator[tuple[Engine, Engine]]:
    """The same weights twice: prefix reuse on, and off."""
    old, _ = models
    on = Engine(copy.deepcopy(old), smollm2_tokenizer, batch_wait_ms=50, prefix_cache_mb=64)
    off = Engine(copy.deepcopy(old), smollm2_tokenizer, batch_wait_ms=50, prefix_cache_mb=0)
    yield on, off
    on.close()
    off.close()


async def run_turn(engine: Engine, prompts: list[list[int]], max_tokens: list[int]) -> list[Any]:
    """One batch: every prompt submitted together, greedy."""
    return await asyncio.gather(
        *(
            engine.generate(p, SamplingParams(max_tokens=m, temperature=0.0))
            for p, m in zip(prompts, max_tokens, strict=True)
        )
    )


async def test_multi_turn_outputs_are_equal_with_prefix_reuse_on_and_off(
    engines: tuple[Engine, Engine],
) -> None:
    on, off = engines
    g = torch.Generator().manual_seed(0)
    convs = [rand_ids(g, n) for n in (40, 57, 45)]
    lengths = [3, 9, 6, 4]  # rows finish at different steps
    for turn in range(3):
        prompts = list(convs)
        if turn == 1:
            prompts.append(rand_ids(g, 50))  # a cold row in a batch of hits
        if turn == 2:
            drifted = list(convs[1])
            drifted[50] = (drifted[50] + 1) % 40000  # a re-rendered turn: only a partial prefix
            prompts[1] = drifted
        got_on = await run_turn(on, prompts, lengths[: len(prompts)])
        got_off = await run_turn(off, prompts, lengths[: len(prompts)])
        for a, b in zip(got_on, got_off, strict=True):
            assert a.token_ids == b.token_ids
            assert a.logprobs == pytest.approx(b.logprobs, abs=1e-4)
        for i, out in enumerate(got_on[:3]):  # token-in/token-out: the next turn extends this one
            convs[i] = prompts[i] + out.token_ids + rand_ids(g, 7 + 3 * i)
    assert on.stats["prefix_hits"] == 6  # turns 2 and 3, three conversations each
    assert off.stats["prefix_hits"] == 0
    assert on.stats["prefix_reused_tokens"] > 300
    assert (
        on.stats["prefill_tokens"] + on.stats["prefix_reused_tokens"]
        == (off.stats["prefill_tokens"])
    )


async def test_reused_rows_match_a_fresh_forward_pass(
    engines: tuple[Engine, Engine], models: tuple[Any, Any]
) -> None:
    on, _ = engines
    old, _ = models
    g = torch.Generator().manual_seed(1)
    first = rand_ids(g, 48)
    out1 = (await run_turn(on, [first], [5]))[0]
    second = first + out1.token_ids + rand_ids(g, 9)
    out2 = (await run_turn(on, [second], [6]))[0]
    assert on.stats["prefix_reused_tokens"] == len(first) + 4  # the last token was never forwarded
    assert out2.logprobs == pytest.approx(fresh_logprobs(old, second, out2.token_ids), abs=1e-4)


@pytest.mark.parametrize("how", ["update_weights", "stage_weights"])
async def test_a_weight_change_empties_the_store(
    engines: tuple[Engine, Engine], models: tuple[Any, Any], how: str
) -> None:
    on, _ = engines
    _, new = models
    g = torch.Generator().manual_seed(2)
    first = rand_ids(g, 60)
    out1 = (await run_turn(on, [first], [5]))[0]
    state = {k: v.clone() for k, v in new.state_dict().items()}
    if how == "update_weights":
        on.update_weights(state)
    else:
        on.stage_weights(state).result(timeout=30)
    second = first + out1.token_ids + rand_ids(g, 9)
    out2 = (await run_turn(on, [second], [6]))[0]
    # KV of the old weights reused here would give the old model's view of `first`.
    assert out2.logprobs == pytest.approx(fresh_logprobs(new, second, out2.token_ids), abs=1e-4)
    assert on.stats["prefix_hits"] == 0
    third = second + out2.token_ids + rand_ids(g, 5)
    out3 = (await run_turn(on, [third], [3]))[0]  # reuse resumes under the new weights
    assert on.stats["prefix_hits"] == 1
    assert out3.logprobs == pytest.approx(fresh_logprobs(new, third, out3.token_ids), abs=1e-4)


async def test_an_engine_whose_bound_is_too_small_stores_nothing(
    models: tuple[Any, Any], smollm2_tokenizer: Any
) -> None:
    # One token of this model's KV: 2 layers x (keys + values) x 2 heads x 16 dims x 4 bytes.
    eng = Engine(copy.deepcopy(models[0]), smollm2_tokenizer, prefix_cache_mb=40 * 512 / 2**20)
    try:
        g = torch.Generator().manual_seed(3)
        first = rand_ids(g, 50)
        out = (await run_turn(eng, [first], [2]))[0]
        await run_turn(eng, [first + out.token_ids + rand_ids(g, 3)], [2])
        assert eng.stats["prefix_hits"] == 0 and len(eng._prefix) == 0
    finally:
        eng.close()


def kv(n: int, fill: float = 0.0) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """One layer, one head, 4 dims, fp32: 32 bytes per token."""
    return [(torch.full((1, n, 4), fill), torch.full((1, n, 4), fill))]


def test_the_store_evicts_least_recently_used_entries_past_its_byte_bound() -> None:
    store = PrefixStore(max_bytes=32 * 25)
    store.put([1] * 10, kv(10))
    store.put([2] * 10, kv(10))
    assert store.lookup([1] * 12, min_tokens=4) is not None  # [1]* is now the most recent
    store.put([3] * 10, kv(10))
    assert store.bytes <= store.max_bytes and len(store) == 2
    assert store.lookup([2] * 12, min_tokens=4) is None
    assert store.lookup([1] * 12, min_tokens=4) is not None
    store.put([9] * 26, kv(26))  # larger than the whole bound: not stored, nothing evicted
    assert len(store) == 2


def test_the_store_answers_with_the_longest_common_prefix() -> None:
    store = PrefixStore(max_bytes=1 << 20)
    store.put([1, 2, 3, 4, 5], kv(5, 1.0))
    store.put([1, 2, 7, 8, 9, 10], kv(6, 2.0))
    hit = store.lookup([1, 2, 3, 4, 6, 6], min_tokens=2)
    assert hit is not None and hit[1] == 4 and float(hit[0][0][0][0, 0, 0]) == 1.0
    assert store.lookup([1, 5], min_tokens=2) is None
    store.put([1, 2, 3, 4, 5, 6, 7], kv(7))  # extends the first entry, which goes
    assert len(store) == 2


def test_common_prefix_len() -> None:
    assert common_prefix_len([1, 2, 3], [1, 2, 3, 4]) == 3
    assert common_prefix_len([1, 2, 3], [1, 9, 3]) == 1
    assert common_prefix_len([], [1]) == 0
    a = list(range(1000))
    for k in (0, 1, 499, 998):
        b = a.copy()
        b[k] = -1
        assert common_prefix_len(a, b) == k


def test_only_full_attention_caches_are_reused() -> None:
    small = {"hidden_size": 32, "intermediate_size": 64, "num_attention_heads": 2}
    assert reusable_layers(LlamaConfig(num_hidden_layers=2, **small))
    assert not reusable_layers(MistralConfig(num_hidden_layers=2, sliding_window=8, **small))


def test_a_growing_layer_holds_what_a_dynamic_layer_holds() -> None:
    from transformers.cache_utils import DynamicLayer

    from kwrl.llm.kv_cache import growing_layer_cls

    g = torch.Generator().manual_seed(4)
    grow, ref = growing_layer_cls()(), DynamicLayer()
    steps = [torch.randn(3, 2, n, 4, generator=g) for n in (5, 1, 1, 9, 1)]  # grows past capacity
    for i, x in enumerate(steps):
        if i == 3:
            sel = torch.tensor([0, 2])  # a row finished: dropped mid-batch
            grow.batch_select_indices(sel)
            ref.batch_select_indices(sel)
        x = x[: ref.keys.shape[0]] if ref.keys is not None and ref.keys.numel() else x
        k, v = grow.update(x, -x)
        rk, rv = ref.update(x, -x)
        assert torch.equal(k, rk) and torch.equal(v, rv)
        assert grow.get_seq_length() == ref.get_seq_length()


def test_grouped_query_attention_reads_the_cache_without_changing_logits(
    models: tuple[Any, Any],
) -> None:
    from kwrl.llm.kv_cache import GQA_SDPA, use_gqa_sdpa

    stock = copy.deepcopy(models[0])
    stock.set_attn_implementation("sdpa")
    gqa = copy.deepcopy(stock)
    assert use_gqa_sdpa(gqa) and gqa.config._attn_implementation == GQA_SDPA
    ids = torch.randint(5, 40000, (2, 30), generator=torch.Generator().manual_seed(5))
    mask = torch.ones_like(ids)
    mask[1, :11] = 0  # left padding: transformers passes a mask, and repeats the KV heads
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    with torch.inference_mode():
        a = stock(input_ids=ids, attention_mask=mask, position_ids=pos).logits
        b = gqa(input_ids=ids, attention_mask=mask, position_ids=pos).logits
    assert torch.allclose(a[0], b[0], atol=1e-5) and torch.allclose(a[1, 11:], b[1, 11:], atol=1e-5)
