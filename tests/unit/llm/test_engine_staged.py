"""A staged weight update lands between two decode steps of a running batch: the tokens before
it are the old model's, the tokens after it the new model's, each logprob exactly what a fresh
forward of that model over the same prefix gives (tiny random Llamas, SmolLM2's tokenizer)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import torch
from tiny_models import fresh_logprobs, tiny_llama
from transformers import LlamaForCausalLM

from kwrl.errors import ConfigError
from kwrl.llm.base import SamplingParams
from kwrl.llm.engines import Engine


@pytest.fixture(scope="module")
def models(smollm2_tokenizer: Any) -> tuple[LlamaForCausalLM, LlamaForCausalLM]:
    vocab = len(smollm2_tokenizer)
    return tiny_llama(vocab, seed=1), tiny_llama(vocab, seed=2)


@pytest.fixture
def engine(models: tuple[Any, Any], smollm2_tokenizer: Any) -> Any:
    old, _ = models
    eng = Engine(copy.deepcopy(old), smollm2_tokenizer, batch_wait_ms=50, name="tiny")
    yield eng
    eng.close()


def _stage_after_forward(engine: Engine, n: int, state: dict[str, torch.Tensor], version: int):
    """Stage `state` from inside the n-th forward pass: the worker holds the batch lock then, so
    the update can only land at the following step boundary (deterministic, no timing)."""
    calls = {"n": 0}
    staged: list[Any] = []

    def hook(*_: object) -> None:
        calls["n"] += 1
        if calls["n"] == n:
            staged.append(engine.stage_weights(state, version=version))

    handle = engine.model.register_forward_hook(hook)
    return handle, staged


def test_tokens_after_a_mid_batch_swap_come_from_the_new_weights(
    engine: Engine, models: tuple[Any, Any]
) -> None:
    old, new = models
    new_state = {k: v.clone() for k, v in new.state_dict().items()}
    g = torch.Generator().manual_seed(0)
    prompts = [torch.randint(5, 40000, (n,), generator=g).tolist() for n in (7, 12, 4)]
    params = [
        SamplingParams(max_tokens=12, temperature=1.0, seed=3),
        SamplingParams(max_tokens=12, temperature=1.0, seed=4),
        SamplingParams(max_tokens=3, temperature=1.0, seed=5),  # done before the swap
    ]
    swap_after = 5  # forward 1 is the prefill: tokens 1..5 come from the old weights
    handle, staged = _stage_after_forward(engine, swap_after, new_state, version=7)
    try:
        futs = [engine.submit(p, sp) for p, sp in zip(prompts, params, strict=True)]
        outs = [f.result(timeout=120) for f in futs]
    finally:
        handle.remove()

    assert staged and staged[0].result(timeout=5) == 7
    assert engine.weight_version == 7
    assert engine.stats["mid_batch_updates"] == 1
    for prompt, out in zip(prompts[:2], outs[:2], strict=True):
        assert len(out.token_ids) == 12
        assert out.token_versions == [0] * swap_after + [7] * (12 - swap_after)
        assert (out.weight_version, out.last_weight_version) == (0, 7)
        before = fresh_logprobs(old, prompt, out.token_ids)[:swap_after]
        after = fresh_logprobs(new, prompt, out.token_ids)[swap_after:]
        assert out.logprobs[:swap_after] == pytest.approx(before, abs=2e-3)
        assert out.logprobs[swap_after:] == pytest.approx(after, abs=2e-3)
        # ...and not the old model's: the swap changed the distribution.
        stale = fresh_logprobs(old, prompt, out.token_ids)[swap_after:]
        assert out.logprobs[swap_after:] != pytest.approx(stale, abs=1e-2)
    assert outs[2].token_versions == [0, 0, 0]
    for k, v in engine.model.state_dict().items():
        assert torch.equal(v, new_state[k]), k


def test_an_idle_engine_applies_a_staged_update_at_once(
    engine: Engine, models: tuple[Any, Any]
) -> None:
    _, new = models
    name = "model.norm.weight"
    fut = engine.stage_weights({name: new.state_dict()[name]})
    assert fut.done() and fut.result() == 1 and engine.weight_version == 1
    assert torch.equal(engine.model.state_dict()[name], new.state_dict()[name])
    out = engine.generate_sync([1, 2, 3], SamplingParams(max_tokens=2, temperature=0.0))
    assert out.token_versions == [1, 1]


def test_updates_staged_before_one_lands_merge_and_the_last_version_wins(
    engine: Engine, models: tuple[Any, Any]
) -> None:
    _, new = models
    state = new.state_dict()
    a, b = "model.norm.weight", "model.layers.0.mlp.up_proj.weight"
    with engine._lock:  # a running batch holds this lock: both updates wait for its end
        f1 = engine.stage_weights({a: state[a]}, version=3)
        f2 = engine.stage_weights({b: state[b]}, version=4)
        assert not f1.done() and not f2.done()
    engine.submit([1, 2], SamplingParams(max_tokens=1)).result(timeout=60)  # worker passes by
    assert f1.result(timeout=5) == f2.result(timeout=5) == 4
    own = engine.model.state_dict()
    assert torch.equal(own[a], state[a]) and torch.equal(own[b], state[b])


def test_a_bad_staged_update_raises_before_anything_is_staged(engine: Engine) -> None:
    with pytest.raises(ConfigError, match="stage_weights: unknown parameter"):
        engine.stage_weights({"no.such.weight": torch.zeros(1)})
    with pytest.raises(ConfigError, match="shape"):
        engine.stage_weights({"model.norm.weight": torch.zeros(3)})
    assert engine._staged is None and engine.weight_version == 0
