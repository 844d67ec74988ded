"""`kwrl.llm.engines.vllm`: what maps kwrl's settings onto vLLM's (CPU), and the engine itself (GPU).

The CPU tests check the pure mapping functions the engine uses (engine args, sampling params,
finish reasons, logprob extraction) and the `vllm:` policy spec; they import no vLLM. The GPU test
builds a real vLLM engine over the packaged model and checks the TITO property and weight pushes;
it is marked `gpu` (skipped by default and wherever CUDA or vLLM is missing).
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from gpu_helpers import cuda_and_vllm
from kwrl.errors import ConfigError, PolicyError
from kwrl.llm.base import FinishReason, SamplingParams
from kwrl.llm.engine_client import VLLMClient
from kwrl.llm.engines.vllm import (
    VLLMConfig,
    engine_args,
    finish_reason,
    sampled_logprobs,
    vllm_sampling,
)
from kwrl.llm.policy import POLICIES, PolicyConfig, split_spec


def test_vllm_spec_names_the_vllm_client() -> None:
    assert split_spec("vllm:smollm2-135m") == ("vllm", "smollm2-135m")
    assert POLICIES["vllm"] is VLLMClient
    cfg = PolicyConfig.model_validate(
        {"model": "vllm:/m", "vllm": {"gpu_memory_utilization": 0.2, "enforce_eager": True}}
    )
    assert cfg.vllm.gpu_memory_utilization == 0.2 and cfg.vllm.enforce_eager


def test_engine_args_carry_the_config_and_processed_logprobs() -> None:
    args = engine_args("/m", VLLMConfig(max_model_len=4096, extra={"attention_backend": "X"}))
    assert args["model"] == args["tokenizer"] == "/m"
    assert args["logprobs_mode"] == "processed_logprobs"
    assert (args["max_model_len"], args["attention_backend"], args["dtype"]) == (
        4096,
        "X",
        "bfloat16",
    )
    assert "max_model_len" not in engine_args("/m", VLLMConfig())


def test_engine_args_refuse_extra_keys_kwrl_sets() -> None:
    with pytest.raises(ConfigError, match=r"vllm.extra: \['logprobs_mode'\]"):
        engine_args("/m", VLLMConfig(extra={"logprobs_mode": "raw_logprobs"}))


def test_sampling_maps_every_field() -> None:
    p = SamplingParams(max_tokens=99, temperature=0.7, top_p=0.9, stop=["</x>"], seed=5)
    sp = vllm_sampling(p, 40, [2, 7])
    assert sp == {
        "max_tokens": 40, "temperature": 0.7, "top_p": 0.9, "logprobs": 0,
        "stop_token_ids": [2, 7], "skip_special_tokens": True, "stop": ["</x>"], "seed": 5,
    }  # fmt: skip
    assert "seed" not in vllm_sampling(SamplingParams(), 8, []) and "stop" not in vllm_sampling(
        SamplingParams(), 8, []
    )


def test_finish_reasons() -> None:
    assert finish_reason("stop", False) is FinishReason.STOP
    assert finish_reason("length", False) is FinishReason.LENGTH
    assert finish_reason("length", True) is FinishReason.CONTEXT
    with pytest.raises(PolicyError, match="abort"):
        finish_reason("abort", False)


def test_sampled_logprobs_take_each_positions_sampled_token() -> None:
    lp = [{5: SimpleNamespace(logprob=-0.5)}, {9: SimpleNamespace(logprob=-2.0), 1: None}]
    assert sampled_logprobs([5, 9], lp) == [-0.5, -2.0]
    with pytest.raises(PolicyError, match="1 logprob positions for 2 tokens"):
        sampled_logprobs([5, 9], lp[:1])
    with pytest.raises(PolicyError, match="None logprob positions"):
        sampled_logprobs([5], None)


@pytest.mark.gpu
@pytest.mark.skipif(not cuda_and_vllm(), reason="needs a CUDA GPU and vLLM (docs/gpu.md)")
def test_vllm_engine_tito_and_weight_push() -> None:  # pragma: no cover - GPU only
    import torch
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM

    from kwrl.llm.engines import VLLMEngine
    from kwrl.llm.packaged import resolve_model

    path = resolve_model("smollm2-135m")
    eng = VLLMEngine(path, VLLMConfig(gpu_memory_utilization=0.2))
    try:
        prompt = eng.tokenizer("The capital of France is")["input_ids"]
        out = eng.generate_sync(prompt, SamplingParams(max_tokens=24, temperature=1.0, seed=1))
        assert len(out.token_ids) == len(out.logprobs) > 0
        model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).cuda()
        with torch.no_grad():
            ids = torch.tensor([prompt + out.token_ids], device="cuda")
            logp = torch.log_softmax(model(ids).logits[0, len(prompt) - 1 : -1], -1)
        ref = logp.gather(1, torch.tensor(out.token_ids, device="cuda")[:, None])[:, 0]
        assert (ref.cpu() - torch.tensor(out.logprobs)).abs().max() < 0.1  # bf16 vs fp32

        greedy = SamplingParams(max_tokens=16, temperature=0.0)
        before = eng.generate_sync(prompt, greedy).token_ids
        state = {k: v.cuda() for k, v in load_file(f"{path}/model.safetensors").items()}
        assert eng.update_weights({k: v * 0.5 for k, v in state.items()}) == 1
        assert eng.generate_sync(prompt, greedy).token_ids != before
        assert eng.update_weights(state) == 2
        assert eng.generate_sync(prompt, greedy).token_ids == before
    finally:
        eng.close()


class _StepEngine:
    """vLLM's `LLMEngine` request protocol as the worker uses it (`add_request`, `step`,
    `abort_request`), one token per step: vLLM itself needs CUDA, and this tests kwrl's worker
    loop around it (the GPU test below runs the same cancellation on the real engine)."""

    def __init__(self, tokens: int) -> None:
        self.tokens = tokens
        self.live: dict[str, int] = {}
        self.aborted: list[str] = []
        self.added: list[str] = []

    def add_request(self, rid: str, prompt: object, sp: object) -> None:
        self.added.append(rid)
        self.live[rid] = 0

    def abort_request(self, rids: list[str]) -> None:
        self.aborted += rids
        for rid in rids:
            self.live.pop(rid, None)

    def step(self) -> list[SimpleNamespace]:
        outs = []
        for rid in list(self.live):
            self.live[rid] += 1
            if self.live[rid] >= self.tokens:
                del self.live[rid]
                lps = [{5: SimpleNamespace(logprob=-0.5)}] * self.tokens
                done = SimpleNamespace(token_ids=[5] * self.tokens, logprobs=lps, text="x")
                done.finish_reason = "length"
                outs.append(SimpleNamespace(request_id=rid, finished=True, outputs=[done]))
        return outs


def test_a_cancelled_generate_is_aborted_and_the_worker_serves_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An agent timeout cancels `generate`: its request is aborted (or never added) and the next
    request is answered. Before, setting the cancelled request's result raised in the worker
    thread, which died, and every later request waited forever."""
    import asyncio
    import sys
    import threading

    from kwrl.llm.engines import vllm as vllm_engine
    from kwrl.llm.packaged import resolve_model

    monkeypatch.setitem(sys.modules, "vllm", SimpleNamespace(SamplingParams=dict))
    gate = threading.Event()  # holds the first request in decoding until it is cancelled

    class Engine(vllm_engine.VLLMEngine):
        def _build(self) -> None:
            self._llm = _StepEngine(tokens=3)
            step = self._llm.step
            self._llm.step = lambda: (gate.wait(10), step())[1]  # type: ignore[method-assign]
            self.max_context, self.vocab_size, self.eos_ids = 4096, 49152, [0]

    eng = Engine(resolve_model("smollm2-135m"), VLLMConfig())
    params = SamplingParams(max_tokens=8)

    async def run() -> None:
        decoding = asyncio.ensure_future(eng.generate([1, 2, 3], params))
        while not eng._llm.added:  # admitted, now inside step()
            await asyncio.sleep(0)
        decoding.cancel()
        with pytest.raises(asyncio.CancelledError):
            await decoding
        gate.set()
        out = await asyncio.wait_for(eng.generate([4, 5], params), 10)
        assert out.token_ids == [5, 5, 5]

    try:
        asyncio.run(run())
        assert eng._worker.is_alive()
        assert eng._llm.aborted == ["kwrl-0"]  # freed before the second request's steps
        assert eng.stats["requests"] == 1
    finally:
        eng.close()


@pytest.mark.gpu
@pytest.mark.skipif(not cuda_and_vllm(), reason="needs a CUDA GPU and vLLM (docs/gpu.md)")
def test_vllm_engine_aborts_a_cancelled_generate() -> None:  # pragma: no cover - GPU only
    import asyncio

    from kwrl.llm.engines import VLLMEngine
    from kwrl.llm.packaged import resolve_model

    eng = VLLMEngine(resolve_model("smollm2-135m"), VLLMConfig(gpu_memory_utilization=0.2))
    prompt = eng.tokenizer("The capital of France is")["input_ids"]

    async def run() -> None:
        long = asyncio.ensure_future(
            eng.generate(prompt, SamplingParams(max_tokens=2000, temperature=1.0))
        )
        await asyncio.sleep(0.2)
        long.cancel()
        with pytest.raises(asyncio.CancelledError):
            await long
        out = await asyncio.wait_for(eng.generate(prompt, SamplingParams(max_tokens=8)), 60)
        assert len(out.token_ids) > 0

    try:
        asyncio.run(run())
        assert eng._worker.is_alive()
        assert eng.stats["requests"] == 1  # the cancelled one was aborted, never answered
    finally:
        eng.close()


def test_staged_weights_land_between_two_steps_without_waiting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`stage_weights` (the `SamplingEngine` path a disaggregated worker takes) returns at once;
    the update lands on the worker between two engine steps with the version given, a request in
    flight keeps the version it started with, the next one samples under the new one."""
    import sys
    import threading

    import torch

    from kwrl.llm.engines import vllm as vllm_engine
    from kwrl.llm.packaged import resolve_model

    monkeypatch.setitem(sys.modules, "vllm", SimpleNamespace(SamplingParams=dict))
    gate = threading.Event()  # holds the worker inside its first step()
    added = threading.Event()
    loaded: list[list[str]] = []

    class Engine(vllm_engine.VLLMEngine):
        def _build(self) -> None:
            self._llm = _StepEngine(tokens=2)
            add, step = self._llm.add_request, self._llm.step
            self._llm.add_request = lambda *a: (add(*a), added.set())[0]  # type: ignore[method-assign]
            self._llm.step = lambda: (gate.wait(10), step())[1]  # type: ignore[method-assign]
            self._llm.collective_rpc = lambda name, kwargs: loaded.append(  # type: ignore[attr-defined]
                [k for k, _ in kwargs["weights_iterator"]]
            )
            self._llm.reset_prefix_cache = lambda: None  # type: ignore[attr-defined]
            self.max_context, self.vocab_size, self.eos_ids = 4096, 49152, [0]

    eng = Engine(resolve_model("smollm2-135m"), VLLMConfig())
    try:
        running = eng.submit([1, 2, 3], SamplingParams(max_tokens=8))
        assert added.wait(10)  # admitted: the worker's next call is step(), which waits
        staged = eng.stage_weights({"w": torch.zeros(2)}, version=7)
        assert not staged.done() and eng.weight_version == 0  # returned without waiting
        gate.set()
        assert staged.result(10) == 7 and loaded == [["w"]]
        assert running.result(10).weight_version == 0
        assert eng.generate_sync([4], SamplingParams(max_tokens=8)).weight_version == 7
        assert eng.update_weights({"w": torch.ones(2)}) == 8
    finally:
        eng.close()
