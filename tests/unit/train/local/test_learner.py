"""The learner on a tiny random Llama: micro-batching is exact, a step moves the policy the
way the advantages say, and checkpoints resume exactly."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import pytest
import torch
from pydantic import Field
from transformers import LlamaConfig, LlamaForCausalLM

from kwrl.train.algorithms import LossOutput
from kwrl.train.batch import Trajectory, collate
from kwrl.train.local.checkpoint import (
    TrainerState,
    latest_checkpoint,
    load_optimizer,
    load_trainer_state,
    save_checkpoint,
)
from kwrl.train.local.learner import Learner, LearnerConfig, token_logprobs
from kwrl.train.local.sampler import PromptSampler
from kwrl.train.losses import DPPOLoss, PolicyLoss, PPOLoss


def tiny_model(seed: int = 0) -> LlamaForCausalLM:
    torch.manual_seed(seed)
    cfg = LlamaConfig(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
    )
    return LlamaForCausalLM(cfg)


def trajectories(model: LlamaForCausalLM) -> list[Trajectory]:
    """Two groups of two; logprobs are the model's own (on-policy)."""
    g = torch.Generator().manual_seed(1)
    out = []
    for i in range(4):
        prompt = torch.randint(1, 64, (5,), generator=g).tolist()
        resp = torch.randint(1, 64, (6 + i,), generator=g).tolist()
        mask = [1, 1, 0, 0, 1, 1] + [1] * i  # an observation (mask 0) in the middle
        t = Trajectory(prompt, resp, mask, [0.0] * len(resp), reward=float(i % 2), group_id=i // 2)
        b = collate([t], [0.0])
        with torch.no_grad():
            lp = token_logprobs(model, b)[0]
        P = len(prompt)
        t.logprobs = [float(lp[P + j - 1]) if m else 0.0 for j, m in enumerate(mask)]
        out.append(t)
    return out


def test_collate_aligns_masks_to_the_predicting_position() -> None:
    t = Trajectory([10, 11], [20, 21, 22], [1, 0, 1], [-0.5, 0.0, -0.25])
    b = collate([t], [2.0])
    assert b.input_ids_B_L.tolist() == [[10, 11, 20, 21, 22]]
    assert b.mask_B_L.tolist() == [[0, 1, 0, 1, 0]]
    assert b.targets_B_L[0, 1] == 20 and b.targets_B_L[0, 3] == 22
    assert b.rollout_logprobs_B_L.tolist() == [[0, -0.5, 0, -0.25, 0]]
    assert b.advantages_B_L.tolist() == [[0, 2.0, 0, 2.0, 0]]


def test_trajectory_arrays_must_have_equal_length() -> None:
    with pytest.raises(ValueError, match="differ in length"):
        Trajectory([1], [2, 3], [1], [0.0, 0.0])


def test_micro_batching_does_not_change_the_gradient() -> None:
    model = tiny_model()
    trajs = trajectories(model)
    batch = collate(trajs, [1.0, -1.0, 0.5, -0.5])
    grads = []
    for mbs in (1, 4):
        model.zero_grad(set_to_none=True)
        Learner(model, LearnerConfig(micro_batch_size=mbs)).accumulate(batch)
        grads.append(
            torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])
        )
    assert torch.allclose(grads[0], grads[1], atol=1e-6)


@pytest.mark.parametrize(
    "options",
    [
        {"head_checkpoint": False},
        {"attention": "flash"},
        {"attention": "cudnn"},
        {"gradient_checkpointing": True},
        {"gradient_checkpointing": True, "share_prefix": False},
    ],
)
def test_speed_options_do_not_change_the_gradient(options: dict[str, object]) -> None:
    """Keeping the head's logits, preferring another SDPA kernel, or recomputing each decoder
    layer in backward (gradient checkpointing, with or without the shared-prefix packing) is the
    same computation."""
    model = tiny_model()
    batch = collate(trajectories(model), [1.0, -1.0, 0.5, -0.5])
    grads, losses = [], []
    for cfg in (LearnerConfig(micro_batch_size=2), LearnerConfig(micro_batch_size=2, **options)):
        model.zero_grad(set_to_none=True)
        losses.append(Learner(model, cfg).accumulate(batch)["loss"])
        grads.append(
            torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])
        )
    assert grads[0].abs().sum() > 0
    assert losses[0] == pytest.approx(losses[1], abs=1e-6)
    assert torch.allclose(grads[0], grads[1], atol=1e-6)


def test_on_policy_logprobs_match_and_a_step_follows_the_advantage() -> None:
    model = tiny_model()
    trajs = trajectories(model)
    batch = collate(trajs, [1.0, -1.0, 1.0, -1.0])
    learner = Learner(model, LearnerConfig(lr=1e-2, micro_batch_size=2, loss=PPOLoss()))
    with torch.no_grad():
        before = token_logprobs(model, batch)
    m = learner.step(batch)
    assert m["logprob_abs_diff"] < 1e-5  # the learner sees exactly the sampler's distribution
    with torch.no_grad():
        after = token_logprobs(model, batch)
    delta = ((after - before) * batch.mask_B_L).sum(-1)
    assert delta[0] > 0 and delta[2] > 0  # positive advantage: more likely
    assert delta[1] < 0 and delta[3] < 0  # negative advantage: less likely
    assert learner.version == 1


class ScaledPG(PolicyLoss):
    """A loss the learner has never heard of: the plain policy gradient times `scale`."""

    kind: Literal["scaled_pg"] = "scaled_pg"
    scale: float = 1.0

    def compute(
        self,
        logprobs_B_T: torch.Tensor,
        old_logprobs_B_T: torch.Tensor,
        advantages_B_T: torch.Tensor,
        mask_B_T: torch.Tensor,
    ) -> LossOutput:
        loss_B_T = -self.scale * advantages_B_T * logprobs_B_T
        return LossOutput(loss_B_T, torch.zeros_like(loss_B_T), mask_B_T)


class WithScaledPG(LearnerConfig):
    loss: Annotated[DPPOLoss | PPOLoss | ScaledPG, Field(discriminator="kind")] = Field(  # pyright: ignore[reportIncompatibleVariableOverride]
        default_factory=DPPOLoss
    )


def test_a_loss_added_to_the_union_trains_without_a_learner_change() -> None:
    """The learner only calls `cfg.loss.compute`: a new member of the union, loaded from its TOML
    table, is what the step follows (scale -1 pushes against the advantage)."""
    model = tiny_model()
    batch = collate(trajectories(model), [1.0, -1.0, 1.0, -1.0])
    cfg = WithScaledPG.model_validate(
        {"lr": 1e-2, "micro_batch_size": 2, "loss": {"kind": "scaled_pg", "scale": -1.0}}
    )
    assert isinstance(cfg.loss, ScaledPG)
    with torch.no_grad():
        before = token_logprobs(model, batch)
    Learner(model, cfg).step(batch)
    with torch.no_grad():
        after = token_logprobs(model, batch)
    delta = ((after - before) * batch.mask_B_L).sum(-1)
    assert delta[0] < 0 and delta[2] < 0  # positive advantage, negated loss: less likely
    assert delta[1] > 0 and delta[3] > 0


def test_masked_trajectories_get_no_gradient() -> None:
    model = tiny_model()
    trajs = trajectories(model)
    for t in trajs:
        t.trainable = False
    learner = Learner(model, LearnerConfig())
    metrics = learner.accumulate(collate(trajs, [1.0, -1.0, 1.0, -1.0]))
    assert metrics["trained_tokens"] == 0
    assert all(p.grad is None for p in model.parameters())


def test_sampler_resumes_exactly() -> None:
    ids = [f"t{i}" for i in range(7)]
    a = PromptSampler(ids, seed=3, epochs=2)
    first = a.next(3)
    saved = a.state.model_copy(deep=True)
    rest_a = [a.next(3) for _ in range(4)]
    b = PromptSampler(ids, seed=3, epochs=2)
    b.load_state(saved)
    rest_b = [b.next(3) for _ in range(4)]
    assert rest_a == rest_b
    flat = first + [x for chunk in rest_a for x in chunk]
    assert sorted(flat) == sorted(ids * 2)  # each prompt exactly once per epoch
    assert a.exhausted


def test_checkpoint_round_trip_restores_weights_optimizer_and_state(tmp_path: Path) -> None:
    model = tiny_model()
    learner = Learner(model, LearnerConfig(lr=1e-2))
    learner.step(collate(trajectories(model), [1.0, -1.0, 1.0, -1.0]))
    sampler = PromptSampler(["a", "b", "c"], seed=0)
    sampler.next(2)
    state = TrainerState(step=1, version=1, sampler=sampler.state)
    save_checkpoint(tmp_path, state, model, learner.optimizer)
    ckpt = latest_checkpoint(tmp_path)
    assert ckpt is not None and ckpt.name == "step-000001"

    restored = LlamaForCausalLM.from_pretrained(ckpt / "model")
    for p, q in zip(model.parameters(), restored.parameters(), strict=True):
        assert torch.equal(p, q)
    learner2 = Learner(restored, LearnerConfig(lr=1e-2))
    load_optimizer(ckpt, learner2.optimizer)
    s1 = learner.optimizer.state_dict()["state"][0]["exp_avg"]
    s2 = learner2.optimizer.state_dict()["state"][0]["exp_avg"]
    assert torch.equal(s1, s2)
    st = load_trainer_state(ckpt)
    assert st.sampler.consumed == sampler.state.consumed and st.step == 1


def test_chunked_head_logprobs_equal_full_logits() -> None:
    model = tiny_model()
    batch = collate(trajectories(model), [1.0, -1.0, 1.0, -1.0])
    with torch.no_grad():
        logits = model(
            input_ids=batch.input_ids_B_L, attention_mask=batch.attention_mask_B_L
        ).logits
        full = torch.log_softmax(logits.float() / 0.7, -1).gather(
            -1, batch.targets_B_L.unsqueeze(-1)
        )
        chunked = token_logprobs(model, batch, 0.7, chunk=3)
        only = token_logprobs(model, batch, 0.7, chunk=3, only_mask=True)
    real = batch.attention_mask_B_L.bool()  # padded positions differ: no attention mask there
    assert not real.all()  # the batch has padding, so the unmasked (flash) path is exercised
    assert torch.allclose(full.squeeze(-1)[real], chunked[real], atol=1e-5)
    scored = batch.mask_B_L.bool()
    assert torch.allclose(only[scored], chunked[scored], atol=1e-5)
    assert (only[~scored] == 0).all()


@pytest.mark.parametrize("keep_logits", [False, True])
@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_head_backward_matches_autograd(keep_logits: bool, temperature: float) -> None:
    """The written-out head backward (one-pass d logits, then two matmuls) is autograd's."""
    from kwrl.train.local.learner import _HeadLogprobs

    g = torch.Generator().manual_seed(3)
    h = torch.randn(11, 8, generator=g, dtype=torch.float64, requires_grad=True)
    w = torch.randn(19, 8, generator=g, dtype=torch.float64, requires_grad=True)
    t = torch.randint(0, 19, (11,), generator=g)
    up = torch.randn(11, generator=g, dtype=torch.float64)  # upstream d loss / d logprob

    ref = torch.log_softmax((h @ w.T) / temperature, -1).gather(-1, t[:, None]).squeeze(-1)
    ref_dh, ref_dw = torch.autograd.grad((ref * up).sum(), (h, w))
    lp = _HeadLogprobs.apply(h, w, t, temperature, keep_logits, False)
    dh, dw = torch.autograd.grad((lp * up).sum(), (h, w))
    assert torch.allclose(lp, ref.float(), atol=1e-6)
    assert torch.allclose(dh, ref_dh, atol=1e-6) and torch.allclose(dw, ref_dw, atol=1e-6)
    assert ref_dh.abs().sum() > 0 and ref_dw.abs().sum() > 0


def test_fused_and_inplace_logit_gradients_agree() -> None:
    """The compiled (pointwise one-hot) and eager (in-place scatter) d-logits are one function."""
    from kwrl.train.local.learner import _dlogits_fused, _dlogits_inplace, _logprob_lse

    g = torch.Generator().manual_seed(4)
    logits = torch.randn(7, 23, generator=g)
    t = torch.randint(0, 23, (7,), generator=g)
    up = torch.randn(7, generator=g)
    _, lse = _logprob_lse(logits, t, 0.5)
    a = _dlogits_fused(logits, lse, t, up, 0.5)
    b = _dlogits_inplace(logits, lse, t, up, 0.5)
    assert torch.allclose(a, b, atol=1e-6)
    assert a.abs().sum() > 0
    assert torch.equal(logits, torch.randn(7, 23, generator=torch.Generator().manual_seed(4)))


@pytest.mark.parametrize("fused", [False, True])
def test_a_step_with_a_non_finite_gradient_changes_nothing(fused: bool) -> None:
    """Fused AdamW skips on the device (found_inf, no host sync); the plain one on the host."""
    model = tiny_model()
    trajs = trajectories(model)
    learner = Learner(model, LearnerConfig(lr=1e-2, micro_batch_size=2))
    params = [p for p in model.parameters() if p.requires_grad]
    learner.optimizer = torch.optim.AdamW(params, lr=1e-2, fused=fused)
    before = [p.detach().clone() for p in params]
    m = learner.step(collate(trajs, [float("inf"), -1.0, 1.0, -1.0]))
    assert not torch.isfinite(torch.tensor(m["grad_norm"]))
    assert all(torch.equal(a, p) for a, p in zip(before, params, strict=True))
    assert not hasattr(learner.optimizer, "found_inf")
    m = learner.step(collate(trajs, [1.0, -1.0, 1.0, -1.0]))
    assert torch.isfinite(torch.tensor(m["grad_norm"])) and m["loss"] != 0
    assert not all(torch.equal(a, p) for a, p in zip(before, params, strict=True))
    step = next(iter(learner.optimizer.state.values()))["step"]
    assert float(step) == 1  # the skipped step was not counted


def test_gradient_checkpointing_recomputes_each_layer_in_backward() -> None:
    model = tiny_model()
    batch = collate(trajectories(model), [1.0, -1.0, 0.5, -0.5])
    layer = model.model.layers[0]
    forward = layer.forward
    calls: list[int] = []

    def counted(*args: object, **kwargs: object) -> object:
        calls.append(1)
        return forward(*args, **kwargs)

    layer.forward = counted  # type: ignore[method-assign]
    for on in (False, True):
        calls.clear()
        cfg = LearnerConfig(micro_batch_size=4, gradient_checkpointing=on)
        Learner(model, cfg).accumulate(batch)
        assert len(calls) == (2 if on else 1)  # the forward, and with it the backward's recompute
