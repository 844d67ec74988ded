"""`kwrl.llm.vllm_engine`: what maps kwrl's settings onto vLLM's (CPU), and the engine itself (GPU).

The CPU tests check the pure mapping functions the engine uses (engine args, sampling params,
finish reasons, logprob extraction) and the `vllm:` policy spec; they import no vLLM. The GPU test
builds a real vLLM engine over the packaged model and checks the TITO property and weight pushes;
it is marked `gpu` (skipped by default and wherever CUDA or vLLM is missing).
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from kwrl.errors import ConfigError, PolicyError
from kwrl.llm.base import FinishReason, SamplingParams
from kwrl.llm.policy import POLICIES, PolicyConfig, split_spec
from kwrl.llm.vllm_engine import (
    VLLMClient,
    VLLMConfig,
    engine_args,
    finish_reason,
    sampled_logprobs,
    vllm_sampling,
)


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


def _cuda_and_vllm() -> bool:
    try:
        import torch
        import vllm  # noqa: F401
    except ImportError:
        return False
    return torch.cuda.is_available()


@pytest.mark.gpu
@pytest.mark.skipif(not _cuda_and_vllm(), reason="needs a CUDA GPU and vLLM (docs/gpu.md)")
def test_vllm_engine_tito_and_weight_push() -> None:  # pragma: no cover - GPU only
    import torch
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM

    from kwrl.llm.packaged import resolve_model
    from kwrl.llm.vllm_engine import VLLMEngine

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
