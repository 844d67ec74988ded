"""The engine process of test_weight_sync (rank 1): an Engine over a tiny model, a WeightReceiver,
and a loop that samples what the test asks for. Spawned, so it lives in an importable module."""

from __future__ import annotations

import threading
import time
from typing import Any


def engine_process(model_dir: str, port: int, to_parent: Any, requests: Any, out_dir: str) -> None:
    import torch

    from kwrl.llm.base import SamplingParams
    from kwrl.llm.engines import Engine
    from kwrl.train.local.weight_sync import WeightReceiver, close_groups, init_groups

    torch.set_num_threads(1)
    engine = Engine.from_pretrained(model_dir, threads=1, batch_wait_ms=0)
    groups = init_groups(1, 2, port, "gloo", "cpu")
    staged = threading.Event()
    original_stage = engine.stage_weights

    def stage_and_tell(*args: Any, **kwargs: Any) -> Any:
        fut = original_stage(*args, **kwargs)
        staged.set()
        return fut

    engine.stage_weights = stage_and_tell  # type: ignore[method-assign]
    receiver = WeightReceiver(engine, groups).start()

    # Request "mid": tell the learner at the 3rd forward (the worker holds the batch lock then),
    # and hold that step until the learner's update is staged, so it lands after token 3.
    calls = {"n": 0, "armed": False}

    def hook(*_: object) -> None:
        if not calls["armed"]:
            return
        calls["n"] += 1
        if calls["n"] == 3:
            to_parent.put(("generating", engine.weight_version))
            deadline = time.monotonic() + 120
            while not staged.wait(0.05):
                if time.monotonic() > deadline:
                    raise RuntimeError("no weight update staged within 120 s")

    engine.model.register_forward_hook(hook)
    try:
        while (req := requests.get()) is not None:
            kind, step, min_version, prompts = req
            waited = receiver.wait_version(min_version, timeout=120)
            calls["armed"], calls["n"] = kind == "mid", 0
            futs = [
                engine.submit(p, SamplingParams(max_tokens=8, temperature=1.0, seed=i))
                for i, p in enumerate(prompts)
            ]
            outs = [f.result(timeout=120) for f in futs]
            calls["armed"] = False
            to_parent.put(
                (
                    "done",
                    step,
                    waited,
                    [(o.token_ids, o.logprobs, o.token_versions) for o in outs],
                )
            )
            if kind == "mid":
                state = {k: v.clone() for k, v in engine.model.state_dict().items()}
                torch.save(state, f"{out_dir}/engine_state.pt")
                to_parent.put(("saved", engine.weight_version))
        receiver.join(timeout=60)
        to_parent.put(("exit", receiver.stats.applied))
    finally:
        engine.close()
        close_groups()
