"""Continuous batching: a request that arrives while a batch decodes joins it at the next step and
returns as soon as it is done, with the ids and logprobs it would have had alone (tiny random
Llama, SmolLM2's tokenizer). Arrivals are made from inside a forward pass, where the worker holds
the batch, so every test is deterministic (no timing)."""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import torch
from tiny_models import fresh_logprobs, tiny_llama
from transformers import LlamaForCausalLM

from kwrl.errors import PolicyError
from kwrl.llm.base import SamplingParams
from kwrl.llm.engines import Engine

GREEDY = SamplingParams(max_tokens=16, temperature=0.0)


def ids(seed: int, n: int) -> list[int]:
    return torch.randint(5, 40000, (n,), generator=torch.Generator().manual_seed(seed)).tolist()


@pytest.fixture(scope="module")
def model(smollm2_tokenizer: Any) -> LlamaForCausalLM:
    return tiny_llama(len(smollm2_tokenizer), seed=1)


def make(model: Any, tokenizer: Any, **kw: Any) -> Engine:
    return Engine(copy.deepcopy(model), tokenizer, batch_wait_ms=20, name="tiny", **kw)


@pytest.fixture
def engine(model: Any, smollm2_tokenizer: Any) -> Iterator[Engine]:
    eng = make(model, smollm2_tokenizer)
    yield eng
    eng.close()


def at_forward(engine: Engine, n: int, act: Callable[[], None]) -> Any:
    """Run `act` inside the n-th forward pass of `engine`'s model (the worker holds the batch)."""
    calls = {"n": 0}

    def hook(*_: object) -> None:
        calls["n"] += 1
        if calls["n"] == n:
            act()

    return engine.model.register_forward_hook(hook)


def submit(
    engine: Engine, prompt: list[int], max_tokens: int, done: list[tuple[str, int]], name: str
):
    """Submit greedily; `done` gets (name, decode steps run so far) when the answer is set."""
    fut = engine.submit(prompt, GREEDY.model_copy(update={"max_tokens": max_tokens}))
    fut.add_done_callback(lambda _: done.append((name, engine.stats["decode_steps"])))
    return fut


def test_a_request_arriving_mid_batch_joins_it_returns_first_and_matches_a_lone_run(
    engine: Engine, model: Any, smollm2_tokenizer: Any
) -> None:
    long_p, short_p = ids(0, 9), ids(1, 23)
    futs: dict[str, Any] = {}
    done: list[tuple[str, int]] = []
    handle = at_forward(
        engine, 4, lambda: futs.setdefault("short", submit(engine, short_p, 3, done, "short"))
    )
    try:
        futs["long"] = submit(engine, long_p, 20, done, "long")
        futs["long"].result(timeout=120)
    finally:
        handle.remove()
    long, short = futs["long"].result(), futs["short"].result()

    assert engine.stats["joins"] == 1 and engine.stats["batches"] == 1
    assert engine.stats["largest_batch"] == 2
    # Answered as it finished (3 tokens after joining at step 3), not at the batch's end.
    assert done == [("short", 5), ("long", 19)]
    assert (len(long.token_ids), len(short.token_ids)) == (20, 3)
    for prompt, out in ((long_p, long), (short_p, short)):
        assert out.logprobs == pytest.approx(fresh_logprobs(model, prompt, out.token_ids), abs=2e-3)
    alone = make(model, smollm2_tokenizer, continuous=False)
    try:
        ref = alone.generate_sync(short_p, GREEDY.model_copy(update={"max_tokens": 3}))
    finally:
        alone.close()
    assert short.token_ids == ref.token_ids


def test_a_static_engine_keeps_a_late_request_for_the_next_batch(
    model: Any, smollm2_tokenizer: Any
) -> None:
    engine = make(model, smollm2_tokenizer, continuous=False)
    late: list[Any] = []
    handle = at_forward(engine, 4, lambda: late.append(engine.submit(ids(1, 5), GREEDY)))
    try:
        engine.generate_sync(ids(0, 9), GREEDY)
        late[0].result(timeout=120)
    finally:
        handle.remove()
        engine.close()
    assert engine.stats["joins"] == 0 and engine.stats["batches"] == 2


def test_a_joining_prompt_reuses_the_kv_of_a_prompt_still_decoding(
    engine: Engine, model: Any
) -> None:
    shared = ids(2, 60)  # a system prompt two trials share
    first, second = shared + ids(3, 5), shared + ids(4, 7)
    late: list[Any] = []
    handle = at_forward(engine, 3, lambda: late.append(engine.submit(second, GREEDY)))
    try:
        engine.generate_sync(first, GREEDY)
        out = late[0].result(timeout=120)
    finally:
        handle.remove()
    assert engine.stats["joins"] == 1
    assert engine.stats["prefix_hits"] == 1 and engine.stats["prefix_reused_tokens"] == 60
    assert out.logprobs == pytest.approx(fresh_logprobs(model, second, out.token_ids), abs=2e-3)


def test_a_waiting_weight_update_stops_admissions_so_the_batch_drains(
    engine: Engine, model: Any
) -> None:
    new = tiny_llama(int(model.config.vocab_size), seed=2)
    state = {k: v.clone() for k, v in new.state_dict().items()}
    versions: list[int] = []
    late: list[Any] = []

    def update_then_submit() -> None:
        threading.Thread(target=lambda: versions.append(engine.update_weights(state))).start()
        deadline = time.monotonic() + 30
        while not engine._updates_waiting and time.monotonic() < deadline:
            time.sleep(0.001)
        late.append(engine.submit(ids(1, 5), GREEDY))

    handle = at_forward(engine, 4, update_then_submit)
    try:
        first = engine.generate_sync(ids(0, 9), GREEDY)
        out = late[0].result(timeout=120)
    finally:
        handle.remove()
    assert engine.stats["joins"] == 0 and engine.stats["batches"] == 2
    assert versions == [1]
    assert set(first.token_versions) == {0} and set(out.token_versions) == {1}
    assert out.logprobs == pytest.approx(fresh_logprobs(new, ids(1, 5), out.token_ids), abs=2e-3)


def test_a_failing_batch_fails_the_rows_that_joined_it_too(engine: Engine) -> None:
    late: list[Any] = []

    def boom() -> None:
        raise RuntimeError("boom")

    h1 = at_forward(engine, 3, lambda: late.append(engine.submit(ids(1, 5), GREEDY)))
    h2 = at_forward(engine, 6, boom)
    try:
        first = engine.submit(ids(0, 9), GREEDY)
        with pytest.raises(PolicyError, match="boom"):
            first.result(timeout=120)
        with pytest.raises(PolicyError, match="boom"):
            late[0].result(timeout=120)
    finally:
        h1.remove()
        h2.remove()
    assert engine.stats["joins"] == 1
    # The engine goes on serving.
    assert len(engine.generate_sync(ids(5, 4), GREEDY).token_ids) == 16
