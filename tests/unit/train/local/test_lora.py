"""LoRA on a tiny random Llama (SmolLM2's tokenizer): the merged weights are the adapted model's
policy (the real engine samples with them the logprobs the learner computes), a learner step moves
only the adapters, and a checkpoint's model/ and adapter/ both give back the same policy."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import torch
from transformers import AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM

from kwrl.errors import ConfigError
from kwrl.llm.base import SamplingParams
from kwrl.llm.engines import Engine
from kwrl.train.batch import Trajectory, collate
from kwrl.train.local.checkpoint import TrainerState, save_checkpoint
from kwrl.train.local.config import LoRAConfig, TrainConfig
from kwrl.train.local.learner import Learner, LearnerConfig, token_logprobs
from kwrl.train.local.lora import add_lora, merged_state_dict

LORA = LoRAConfig(rank=4, alpha=8)


def tiny_llama(vocab: int) -> LlamaForCausalLM:
    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=vocab, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
        tie_word_embeddings=True,
    )  # fmt: skip
    return LlamaForCausalLM(cfg).eval()


def with_adapters(base: LlamaForCausalLM) -> tuple[Any, LlamaForCausalLM]:
    """A copy of `base` with LoRA adapters whose B is random (peft starts it at 0, a no-op)."""
    peft = add_lora(copy.deepcopy(base), LORA)
    g = torch.Generator().manual_seed(5)
    with torch.no_grad():
        for name, p in peft.named_parameters():
            if "lora_B" in name:
                p.copy_(torch.randn(p.shape, generator=g) * 0.2)
    return peft, peft.get_base_model()


@pytest.fixture(scope="module")
def smollm2_tokenizer() -> Any:
    from kwrl.agent.tokenizer import load_tokenizer

    return load_tokenizer("smollm2-135m")


@pytest.fixture(scope="module")
def base(smollm2_tokenizer: Any) -> LlamaForCausalLM:
    return tiny_llama(len(smollm2_tokenizer))


def test_merged_weights_are_the_adapted_policy_under_the_base_names(
    base: LlamaForCausalLM,
) -> None:
    peft, model = with_adapters(base)
    merged = merged_state_dict(model)
    assert set(merged) == set(base.state_dict())
    changed = [k for k in merged if not torch.equal(merged[k], base.state_dict()[k])]
    targets = set(LORA.target_modules)
    assert changed and all(k.split(".")[-2] in targets for k in changed)
    assert len(changed) == 2 * len(targets)  # every target, in both layers
    plain = copy.deepcopy(base)
    plain.load_state_dict(merged)
    ids = torch.randint(5, 1000, (2, 9), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        want = peft(input_ids=ids).logits
        got = plain(input_ids=ids).logits
    assert (got - want).abs().max() < 1e-4
    assert not torch.allclose(base(input_ids=ids).logits, want, atol=1e-3)


def test_the_engine_samples_with_the_merged_weights_what_the_learner_computes(
    base: LlamaForCausalLM, smollm2_tokenizer: Any
) -> None:
    _, model = with_adapters(base)
    engine = Engine(copy.deepcopy(base), smollm2_tokenizer, batch_wait_ms=5, name="lora")
    try:
        engine.update_weights(merged_state_dict(model))
        prompt = [101, 2054, 318, 9, 77]
        out = engine.generate_sync(prompt, SamplingParams(max_tokens=8, temperature=1.0, seed=1))
    finally:
        engine.close()
    t = Trajectory(prompt, out.token_ids, [1] * len(out.token_ids), out.logprobs)
    with torch.no_grad():
        lp = token_logprobs(model, collate([t], [0.0]))[0]
    learner_lp = lp[len(prompt) - 1 : len(prompt) - 1 + len(out.token_ids)]
    assert torch.allclose(learner_lp, torch.tensor(out.logprobs), atol=1e-4)


def test_a_learner_step_moves_only_the_adapters(base: LlamaForCausalLM) -> None:
    _, model = with_adapters(base)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    assert trainable and all(".lora_" in n for n in trainable)
    g = torch.Generator().manual_seed(2)
    trajs = []
    for i in range(4):
        prompt = torch.randint(5, 1000, (6,), generator=g).tolist()
        resp = torch.randint(5, 1000, (5,), generator=g).tolist()
        t = Trajectory(prompt, resp, [1] * 5, [0.0] * 5, reward=float(i % 2), group_id=i // 2)
        with torch.no_grad():
            lp = token_logprobs(model, collate([t], [0.0]))[0]
        t.logprobs = [float(x) for x in lp[5:10]]
        trajs.append(t)
    batch = collate(trajs, [-0.5, 0.5, -0.5, 0.5])
    learner = Learner(model, LearnerConfig(lr=1e-2, micro_batch_size=2))
    m = learner.step(batch)
    assert m["trained_tokens"] == 20 and m["grad_norm"] > 0
    after = model.state_dict()
    moved = {k for k in before if not torch.equal(before[k], after[k])}
    assert moved and all(".lora_" in k for k in moved)
    # The rewarded responses became more likely under the merged policy.
    plain = copy.deepcopy(base)
    plain.load_state_dict(merged_state_dict(model))
    with torch.no_grad():
        new_lp = token_logprobs(plain, batch)
    gain = ((new_lp - batch.rollout_logprobs_B_L) * batch.mask_B_L).sum(-1)
    assert float(gain[1] + gain[3]) > float(gain[0] + gain[2])


def test_a_checkpoint_holds_the_merged_model_and_the_adapter_to_resume(
    base: LlamaForCausalLM, smollm2_tokenizer: Any, tmp_path: Path
) -> None:
    peft, model = with_adapters(base)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad])
    merged = merged_state_dict(model)
    ckpt = save_checkpoint(
        tmp_path, TrainerState(step=3), model, opt, smollm2_tokenizer,
        adapter=peft, state_dict=merged,
    )  # fmt: skip
    assert (ckpt / "adapter" / "adapter_config.json").is_file()
    loaded = AutoModelForCausalLM.from_pretrained(ckpt / "model")
    assert set(loaded.state_dict()) == set(base.state_dict())
    for k, v in loaded.state_dict().items():
        assert torch.equal(v, merged[k]), k
    resumed = add_lora(copy.deepcopy(base), LORA, ckpt / "adapter").get_base_model()
    again = merged_state_dict(resumed)
    assert all(torch.allclose(again[k], merged[k], atol=1e-6) for k in merged)
    assert {n for n, p in resumed.named_parameters() if p.requires_grad} == {
        n for n, p in model.named_parameters() if p.requires_grad
    }


def test_lora_is_refused_in_disaggregated_mode(tmp_path: Path) -> None:
    from kwrl.config import load_config

    cfg = tmp_path / "train.toml"
    cfg.write_text(f'dataset = "{tmp_path}"\n[rl]\nmode = "disaggregated"\n[lora]\nrank = 8\n')
    with pytest.raises(ConfigError, match=r"lora\.rank"):
        load_config(TrainConfig, cfg)
    ok = load_config(TrainConfig, cfg, ["rl.mode=sync"])
    assert ok.lora.rank == 8 and ok.lora.target_modules[0] == "q_proj"
