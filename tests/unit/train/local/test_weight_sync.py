"""Weight sync between two real processes over gloo: the learner (this process, rank 0) trains a
tiny Llama and broadcasts it into an engine process (rank 1) while that engine is generating;
the update lands between two decode steps, the engine ends with the learner's exact parameters,
and batches gated by the dispatch rule never train staler than max_staleness."""

from __future__ import annotations

import queue
from pathlib import Path
from typing import Any

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaConfig, LlamaForCausalLM

from kwrl.errors import ConfigError
from kwrl.train.batch import Trajectory, collate
from kwrl.train.local.learner import Learner, LearnerConfig, token_logprobs
from kwrl.train.local.weight_sync import (
    WeightSender,
    choose_backend,
    close_groups,
    free_port,
    init_groups,
    plan_buckets,
)

PROMPTS = [[5, 17, 301, 4000, 12], [9, 8, 7, 6000, 5, 4, 3000]]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from kwrl.llm.packaged import ensure_model

    try:
        tok_dir = ensure_model("smollm2-135m")
    except ConfigError as e:
        pytest.skip(f"packaged SmolLM2 unavailable: {e}")
    tok = AutoTokenizer.from_pretrained(tok_dir)
    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
        tie_word_embeddings=True, eos_token_id=tok.eos_token_id,
    )  # fmt: skip
    out = tmp_path_factory.mktemp("tiny")
    LlamaForCausalLM(cfg).save_pretrained(out)
    tok.save_pretrained(out)
    return out


def _train_step(learner: Learner, outs: list[Any]) -> None:
    """One real DPPO step on the sampled completions, advantages +1 / -1."""
    trajs = [
        Trajectory(p, ids, [1] * len(ids), lps, reward=float(i), group_id=0)
        for i, (p, (ids, lps, _)) in enumerate(zip(PROMPTS, outs, strict=True))
    ]
    learner.step(collate(trajs, [1.0, -1.0]))


def _get(q: Any, kind: str, proc: Any) -> tuple[Any, ...]:
    """The child's next message (it must be of `kind`), polling so a dead child fails fast."""
    for _ in range(600):
        try:
            msg = q.get(timeout=0.5)
        except queue.Empty:
            assert proc.is_alive(), f"engine process exited ({proc.exitcode}) before {kind!r}"
            continue
        assert msg[0] == kind, msg
        return msg
    raise AssertionError(f"no {kind!r} from the engine process within 300 s")


def test_choose_backend_uses_nccl_only_for_distinct_gpus() -> None:
    assert choose_backend("cpu", ["cpu", "cpu"]) == "gloo"
    assert choose_backend("cuda:0", ["cuda:0"]) == "gloo"  # NCCL refuses a duplicate GPU
    assert choose_backend("cuda:1", ["cuda:0"], "gloo") == "gloo"
    with pytest.raises(ConfigError, match="own GPU"):
        choose_backend("cuda", ["cuda:0"], "nccl")


def test_buckets_keep_order_split_by_size_and_dtype() -> None:
    named = [
        ("a", torch.zeros(256, 1024)),  # 1 MiB
        ("b", torch.zeros(1024)),
        ("c", torch.zeros(128, 1024)),  # 0.5 MiB: fits beside b
        ("d", torch.zeros(4, dtype=torch.bfloat16)),
    ]
    buckets = plan_buckets(named, bucket_mb=1)
    assert [b.names for b in buckets] == [["a"], ["b", "c"], ["d"]]
    assert [b.dtype for b in buckets] == ["float32", "float32", "bfloat16"]


def test_a_learner_broadcast_lands_in_a_generating_engine_process(
    model_dir: Path, tmp_path: Path
) -> None:
    import torch.multiprocessing as mp
    import weight_sync_child

    ctx = mp.get_context("spawn")
    to_parent, requests = ctx.Queue(), ctx.Queue()
    port = free_port()
    proc = ctx.Process(
        target=weight_sync_child.engine_process,
        args=(str(model_dir), port, to_parent, requests, str(tmp_path)),
        daemon=True,
    )
    proc.start()
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    learner = Learner(model, LearnerConfig(lr=1e-2, micro_batch_size=2))
    groups = init_groups(0, 2, port, "gloo", "cpu")
    try:
        sender = WeightSender(model, groups, bucket_mb=1)
        assert len(sender.buckets) > 1

        # Part 1: an update broadcast while the engine is mid-generation lands after token 3.
        requests.put(("mid", 0, 0, PROMPTS))
        assert _get(to_parent, "generating", proc)[1] == 0
        first = model.model.embed_tokens.weight.detach().clone()
        _train_step(learner, [([11, 12, 13], [-10.0] * 3, None)] * 2)
        assert not torch.equal(first, model.model.embed_tokens.weight)
        sender.broadcast(learner.version)
        _, _, waited, outs = _get(to_parent, "done", proc)
        assert waited == 0
        assert _get(to_parent, "saved", proc)[1] == 1
        for prompt, (ids, lps, versions) in zip(PROMPTS, outs, strict=True):
            assert versions == [0, 0, 0, 1, 1, 1, 1, 1]
            with torch.no_grad():
                b = collate([Trajectory(prompt, ids, [1] * len(ids), lps)], [0.0])
                fresh = token_logprobs(model, b)[0, len(prompt) - 1 : -1].tolist()
            assert lps[3:] == pytest.approx(fresh[3:], abs=2e-3)  # the new weights' tokens
        engine_state = torch.load(tmp_path / "engine_state.pt")
        for name, p in model.state_dict().items():
            assert torch.equal(engine_state[name], p), name

        # Part 2: the trainer's dispatch rule. The batch for step s goes out once the learner has
        # pushed s - 1 - max_staleness, gated on that version in the engine process.
        max_staleness, steps = 1, 4
        staleness: list[int] = []
        dispatched = 0

        def dispatch_allowed() -> None:
            nonlocal dispatched
            while dispatched < steps and dispatched + 1 <= len(staleness) + 1 + max_staleness:
                dispatched += 1
                requests.put(("batch", dispatched, learner.version, PROMPTS))

        dispatch_allowed()
        for step in range(1, steps + 1):
            _, got_step, waited, outs = _get(to_parent, "done", proc)
            assert got_step == step
            oldest = min(v for _, _, versions in outs for v in versions)
            assert oldest >= waited
            staleness.append(learner.version - oldest)
            _train_step(learner, outs)
            sender.broadcast(learner.version)
            dispatch_allowed()
        assert max(staleness) <= max_staleness
        requests.put(None)
        sender.close()
        assert _get(to_parent, "exit", proc)[1] == list(range(1, steps + 2))
        proc.join(timeout=60)
        assert proc.exitcode == 0
    finally:
        close_groups()
        if proc.is_alive():
            proc.kill()
