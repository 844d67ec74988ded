"""The engine samples batches whose ids and logprobs a fresh forward pass reproduces (TITO)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import torch

from kwrl.errors import ConfigError, PolicyError
from kwrl.llm.base import FinishReason, SamplingParams
from kwrl.llm.engines import Engine


def forward_logprobs(
    model: Any, prompt: list[int], completion: list[int], temperature: float
) -> list[float]:
    """Logprobs of `completion` given `prompt` from one unbatched, uncached forward pass."""
    with torch.inference_mode():
        logits = model(torch.tensor([prompt + completion])).logits[0].float()
    logp = torch.log_softmax(logits / temperature, dim=-1)
    return [float(logp[len(prompt) - 1 + i, t]) for i, t in enumerate(completion)]


async def test_a_mixed_batch_has_logprobs_a_fresh_forward_pass_reproduces(
    engine: Engine, prompts: list[list[int]]
) -> None:
    temps = [1.0, 0.7, 0.0]  # per-row temperatures, padded prompts of three lengths, one batch
    before = engine.stats["batches"]
    outs = await asyncio.gather(
        *(
            engine.generate(p, SamplingParams(max_tokens=4, temperature=t, seed=11))
            for p, t in zip(prompts, temps, strict=True)
        )
    )
    assert engine.stats["batches"] - before == 1
    for prompt, temp, out in zip(prompts, temps, outs, strict=True):
        assert len(out.token_ids) == len(out.logprobs) == 4
        assert out.prompt_tokens == len(prompt)
        ref = forward_logprobs(engine.model, prompt, out.token_ids, temp or 1.0)
        assert out.logprobs == pytest.approx(ref, abs=2e-3)
        assert all(lp <= 0.0 for lp in out.logprobs)


def test_greedy_matches_transformers_generate(engine: Engine, prompts: list[list[int]]) -> None:
    out = engine.generate_sync(prompts[1], SamplingParams(max_tokens=4, temperature=0.0))
    with torch.inference_mode():
        ref = engine.model.generate(torch.tensor([prompts[1]]), max_new_tokens=4, do_sample=False)
    assert out.token_ids == ref[0, len(prompts[1]) :].tolist()


def test_a_seed_reproduces_a_sample_and_other_seeds_differ(
    engine: Engine, prompts: list[list[int]]
) -> None:
    futs = [engine.submit(prompts[0], SamplingParams(max_tokens=4, seed=s)) for s in (5, 5, 6, 7)]
    a, b, *others = [f.result().token_ids for f in futs]
    assert a == b
    assert any(o != a for o in others)


def test_max_tokens_stop_strings_and_context_set_the_finish_reason(
    engine: Engine, prompts: list[list[int]]
) -> None:
    greedy = SamplingParams(max_tokens=4, temperature=0.0)
    full = engine.generate_sync(prompts[2], greedy)
    assert full.finish_reason == FinishReason.LENGTH and len(full.token_ids) == 4

    stop = full.text[2:5]
    stopped = engine.generate_sync(prompts[2], greedy.model_copy(update={"stop": [stop]}))
    assert stopped.finish_reason == FinishReason.STOP
    assert stop not in stopped.text and full.text.startswith(stopped.text)
    assert stopped.token_ids == full.token_ids[: len(stopped.token_ids)]

    small = Engine(engine.model, engine.tokenizer, max_context=len(prompts[0]) + 2)
    try:
        tight = small.submit(prompts[0], SamplingParams(max_tokens=10, temperature=0.0))
        over = small.submit(prompts[1], SamplingParams(max_tokens=10))
        assert tight.result().finish_reason == FinishReason.CONTEXT
        assert len(tight.result().token_ids) == 2
        assert over.result().finish_reason == FinishReason.CONTEXT
        assert over.result().token_ids == []
    finally:
        small.close()
    with pytest.raises(PolicyError, match="closed"):
        small.submit(prompts[0], SamplingParams())


def test_bad_prompts_are_policy_errors(engine: Engine) -> None:
    with pytest.raises(PolicyError, match="empty prompt"):
        engine.submit([], SamplingParams())
    with pytest.raises(PolicyError, match="out of range"):
        engine.submit([10**9], SamplingParams())


def test_weight_updates_bump_the_version_and_change_the_policy(
    engine: Engine, prompts: list[list[int]], tmp_path: Path
) -> None:
    from safetensors.torch import save_file

    name = "model.norm.weight"
    original = engine.model.state_dict()[name].clone()
    greedy = SamplingParams(max_tokens=2, temperature=0.0)
    v0 = engine.weight_version
    try:
        first = engine.generate_sync(prompts[1], greedy)
        assert first.weight_version == v0
        assert engine.update_weights({name: original * 0.5}) == v0 + 1
        second = engine.generate_sync(prompts[1], greedy)
        assert second.weight_version == v0 + 1
        assert second.logprobs != pytest.approx(first.logprobs, abs=1e-3)

        save_file({name: original.contiguous()}, str(tmp_path / "w.safetensors"))
        assert engine.load_weights(tmp_path) == v0 + 2
        third = engine.generate_sync(prompts[1], greedy)
        assert third.token_ids == first.token_ids
        assert third.logprobs == pytest.approx(first.logprobs, abs=1e-4)

        with pytest.raises(ConfigError, match="unknown parameter"):
            engine.update_weights({"no.such.weight": original})
        with pytest.raises(ConfigError, match="shape"):
            engine.update_weights({name: original[:3]})
        assert engine.weight_version == v0 + 2
    finally:
        engine.update_weights({name: original})


def _wait_for(cond: Any, timeout: float = 60.0) -> None:
    import time

    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_an_abandoned_request_stops_at_its_next_token(
    engine: Engine, prompts: list[list[int]]
) -> None:
    steps = engine.stats["decode_steps"]
    fut = engine.submit(prompts[0], SamplingParams(max_tokens=4000, temperature=1.0, stop=[]))
    _wait_for(lambda: engine.stats["decode_steps"] >= steps + 3)
    engine.abandon(fut)
    out = fut.result(timeout=60)
    assert 3 <= len(out.token_ids) < 200 and out.finish_reason is FinishReason.LENGTH
    queued = [engine.submit(p, SamplingParams(max_tokens=4)) for p in prompts]
    engine.abandon(queued[-1])  # still queued or just started: dropped either way
    assert [len(f.result(timeout=60).token_ids) for f in queued[:-1]] == [4, 4]


async def test_cancelling_generate_abandons_its_request(
    engine: Engine, prompts: list[list[int]]
) -> None:
    steps = engine.stats["decode_steps"]
    done = engine.stats["requests"]
    task = asyncio.create_task(engine.generate(prompts[1], SamplingParams(max_tokens=4000)))
    while engine.stats["decode_steps"] < steps + 3:
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    while engine.stats["requests"] == done:  # the row ends at its next token, not after 4000
        await asyncio.sleep(0.01)
    assert engine.stats["completion_tokens"] < 4000 * 2


def test_the_process_exits_cleanly_while_the_engine_decodes(smollm2_dir: Path) -> None:
    """Ending the interpreter while the worker is inside torch aborted it (exit 134)."""
    import subprocess
    import sys
    import textwrap

    code = f"""
        import time
        from kwrl.llm.base import SamplingParams
        from kwrl.llm.engines import Engine, EngineConfig
        e = Engine.from_config(EngineConfig(model={str(smollm2_dir)!r}, threads=1))
        fut = e.submit(list(range(10, 200)), SamplingParams(max_tokens=4000))
        while e.stats["decode_steps"] < 3:
            time.sleep(0.01)
        print("exiting while decoding", flush=True)
    """
    run = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300
    )
    assert "exiting while decoding" in run.stdout
    assert run.returncode == 0, run.stderr[-2000:]
