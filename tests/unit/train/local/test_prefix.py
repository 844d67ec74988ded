"""Shared-prefix packing on a tiny random Llama: the packed forward and backward give the
unpacked batch's logprobs and gradients, and the plan packs what the groups share."""

from __future__ import annotations

import copy

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from kwrl.train.batch import Trajectory, collate
from kwrl.train.local import prefix
from kwrl.train.local.learner import Learner, LearnerConfig, token_logprobs


def tiny_llama() -> LlamaForCausalLM:
    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=96, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
        attn_implementation="sdpa",
    )  # fmt: skip
    return LlamaForCausalLM(cfg)


def grouped(seed: int = 0) -> list[Trajectory]:
    """Three groups: two of three trials sharing a prompt (their responses of different lengths,
    one starting with the same token), and a lone trial."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for gid, (n, p_len) in enumerate([(3, 9), (1, 5), (3, 4)]):
        prompt = torch.randint(3, 96, (p_len,), generator=g).tolist()
        for i in range(n):
            r_len = 4 + 3 * i + gid
            resp = torch.randint(3, 96, (r_len,), generator=g).tolist()
            if i > 0:
                resp[0] = out[-1].response_ids[0]  # the shared run goes past the prompt
            mask = [1] * r_len
            mask[1] = 0  # an observation token
            lps = [-1.0 * (j % 3) for j in range(r_len)]
            out.append(Trajectory(prompt, resp, mask, lps, reward=float(i), group_id=gid))
    return out


def test_the_plan_packs_each_groups_shared_prefix_once() -> None:
    trajs = grouped()
    batch = collate(trajs, [0.0] * len(trajs))
    pp = prefix.plan(batch.input_ids_B_L, batch.attention_mask_B_L, batch.group_ids)
    assert pp is not None
    lens = [len(t.prompt_ids) + len(t.response_ids) for t in trajs]
    # groups 0 and 2 share their prompts (9 and 4 tokens) and a response token, 3 trials each
    assert pp.tokens == sum(lens) - 2 * 10 - 2 * 5
    assert pp.input_ids_G_Lp.shape[0] == 3
    B, L = batch.input_ids_B_L.shape
    flat_ids = pp.input_ids_G_Lp.reshape(-1)
    flat_pos = pp.position_ids_G_Lp.reshape(-1)
    for b in range(B):
        for t in range(lens[b]):
            q = int(pp.unpack_BL[b * L + t])
            assert int(flat_ids[q]) == int(batch.input_ids_B_L[b, t]) and int(flat_pos[q]) == t
    single = collate(trajs[3:4], [0.0])
    assert prefix.plan(single.input_ids_B_L, single.attention_mask_B_L, single.group_ids) is None


@pytest.mark.parametrize("only_mask", [True, False])
def test_packed_logprobs_and_gradients_equal_the_unpacked_ones(only_mask: bool) -> None:
    model = tiny_llama()
    trajs = grouped()
    batch = collate(trajs, [0.0] * len(trajs))
    prefix.register()
    packed_model = copy.deepcopy(model)
    packed_model.config._attn_implementation = prefix.ATTENTION
    pp = prefix.plan(batch.input_ids_B_L, batch.attention_mask_B_L, batch.group_ids)
    up = torch.randn(batch.input_ids_B_L.shape, generator=torch.Generator().manual_seed(3))

    def run(m: LlamaForCausalLM, plan: prefix.PrefixPlan | None) -> tuple[torch.Tensor, dict]:
        lp = token_logprobs(m, batch, 0.7, only_mask=only_mask, prefix=plan)
        (lp * batch.mask_B_L * up).sum().backward()
        return lp.detach(), {n: p.grad.clone() for n, p in m.named_parameters()}

    want_lp, want_g = run(model, None)
    got_lp, got_g = run(packed_model, pp)
    m = batch.mask_B_L.bool() if only_mask else batch.attention_mask_B_L.bool()
    assert torch.allclose(got_lp[m], want_lp[m], atol=1e-5)
    for n, gr in want_g.items():
        assert torch.allclose(got_g[n], gr, atol=1e-5, rtol=1e-4), n


def test_a_learner_step_with_packing_equals_one_without() -> None:
    """Packing only reorders float32 sums, so the two steps agree to within what reassociation
    can change, and no closer: each tolerance below is derived, never picked to pass.

    A sum of n float32 terms reassociated moves by at most about n * u * sum|term| (u = 2^-24,
    the unit roundoff). Every weight's gradient (and the loss) sums one contribution per position
    of the batch, so n = B * L; sum|term| is taken as the tensor's largest gradient (the loss: the
    largest |advantage|, its per-token terms being advantage x ratio, ratio ~ 1).

    The parameters are then compared through AdamW's first step, which maps a (clipped) gradient
    g to theta * (1 - lr * wd) - lr * g / (|g| + eps). Its slope in g, lr * eps / (|g| + eps)^2,
    reaches lr / eps = 1e6 where g ~ 0: a gradient of 1e-10 that reassociation moves by 4e-10
    moves its weight by ~4e-4. So each weight's bound is that slope, at the smaller |g| of the
    two (0 where the two differ in sign), times the two runs' own gradient difference, plus the
    update's own rounding. A fixed atol (1e-6) held here (3.9e-7 on an AMD EPYC without
    AVX-512) and failed on an AVX-512 machine (1.5e-6): it tested the CPU's summation order.
    """
    trajs = grouped(1)
    adv = [0.5, -0.25, -0.25, 0.0, 1.0, -1.0, 0.0]
    batch = collate(trajs, adv)
    models = [tiny_llama(), tiny_llama()]
    cfgs = [LearnerConfig(lr=1e-2, micro_batch_size=7, share_prefix=s) for s in (True, False)]
    learners = [Learner(m, c) for m, c in zip(models, cfgs, strict=True)]
    assert learners[0].share_prefix and not learners[1].share_prefix
    grads: list[dict[str, torch.Tensor]] = [{}, {}]
    for lrn, seen in zip(learners, grads, strict=True):
        # the gradients AdamW steps on: summed, then clipped
        lrn.optimizer.register_step_pre_hook(
            lambda _opt, _a, _k, m=lrn.model, seen=seen: seen.update(
                {n: p.grad.clone() for n, p in m.named_parameters() if p.grad is not None}
            )
        )
    before = {n: p.detach().clone() for n, p in models[0].named_parameters()}
    metrics = [lrn.step(batch) for lrn in learners]

    u = torch.finfo(torch.float32).eps / 2
    n_terms = batch.input_ids_B_L.numel()
    assert metrics[0]["loss"] == pytest.approx(
        metrics[1]["loss"], abs=n_terms * u * max(map(abs, adv))
    )
    assert metrics[0]["grad_norm"] == pytest.approx(metrics[1]["grad_norm"], rel=n_terms * u)
    lr, eps = cfgs[0].lr, learners[0].optimizer.defaults["eps"]
    for (n, a), (_, b) in zip(
        models[0].named_parameters(), models[1].named_parameters(), strict=True
    ):
        ga, gb = grads[0][n], grads[1][n]
        dg = (ga - gb).abs()
        assert (dg <= n_terms * u * gb.abs().max()).all(), n
        smaller = torch.where(ga * gb > 0, torch.minimum(ga.abs(), gb.abs()), 0.0)
        slope = lr * eps / (smaller + eps) ** 2
        rounding = 8 * u * (before[n].abs() + lr)
        bound = torch.minimum(slope * dg, torch.tensor(2 * lr)) + rounding
        assert ((a - b).abs() <= bound).all(), n
