"""Shared by the agent integration tests: a scripted token policy and a gateway subprocess."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

from kwrl.agent.harbor_agent import KwrlAgent
from kwrl.llm.base import Completion, FinishReason, PolicyClient, SamplingParams

HANG = "<kwrl-test: the endpoint never answers this turn>"
"""A `ScriptedPolicy` turn that never returns: a hung policy endpoint."""


class ScriptedPolicy(PolicyClient):
    """Replays recorded turns through the real tokenizer, as a token sampler would return them.

    Each turn's ids are the text's tokens plus `<|im_end|>` (sampling stopped on it); logprobs are
    distinct per token so tests can check they land at the right positions. A `HANG` turn never
    returns (until cancelled).
    """

    supports_tokens = True

    def __init__(self, tokenizer: Any, turns: list[str]) -> None:
        self.tokenizer = tokenizer
        self.turns = list(turns)
        self.prompts: list[list[int]] = []
        self.sampled: list[tuple[list[int], list[float]]] = []
        self.session_ids: set[str | None] = set()
        self.end_id = tokenizer.convert_tokens_to_ids("<|im_end|>")

    async def complete(
        self, prompt_ids: list[int], params: SamplingParams, *, session_id: str | None = None
    ) -> Completion:
        self.prompts.append(list(prompt_ids))
        self.session_ids.add(session_id)
        text = self.turns.pop(0) if self.turns else "I am done."
        if text == HANG:
            await asyncio.Event().wait()
        ids = [*self.tokenizer.encode(text, add_special_tokens=False), self.end_id]
        finish = FinishReason.STOP
        if len(ids) > params.max_tokens:
            ids, finish = ids[: params.max_tokens], FinishReason.LENGTH
            text = self.tokenizer.decode(ids)
        base = -0.001 * (len(self.sampled) + 1)
        lps = [base - 0.0001 * i for i in range(len(ids))]
        self.sampled.append((ids, lps))
        return Completion(text=text, token_ids=ids, logprobs=lps, finish_reason=finish)

    async def chat(self, messages: Any, params: SamplingParams, **kw: Any) -> Completion:
        raise NotImplementedError


class ScriptedKwrlAgent(KwrlAgent):
    """Import path `agent_helpers:ScriptedKwrlAgent`: harbor's `KwrlAgent` whose policy replays
    the kwarg `turns` (`ScriptedPolicy` over Qwen2.5's tokenizer), so a real harbor trial runs a
    fixed sequence of tool calls through the real agent loop, gateway and sandbox."""

    def __init__(self, *args: Any, turns: list[str], **kwargs: Any) -> None:
        kwargs.setdefault("tokenizer", "qwen2.5-coder-0.5b")
        super().__init__(*args, policy="scripted", **kwargs)
        self.turns = list(turns)

    def _build_policy(self) -> Any:
        from kwrl.agent.tokenizer import load_tokenizer

        return ScriptedPolicy(load_tokenizer(str(self.tokenizer_spec)), self.turns)


class RotatingKwrlAgent(ScriptedKwrlAgent):
    """Import path `agent_helpers:RotatingKwrlAgent`: a `ScriptedKwrlAgent` whose kwarg `scripts`
    is a list of turn lists; the k-th agent this process builds with the same scripts replays
    `scripts[k % len(scripts)]`, so the samples of one task (a group) behave differently."""

    built: ClassVar[Counter[str]] = Counter()

    def __init__(self, *args: Any, scripts: list[list[str]], **kwargs: Any) -> None:
        key = json.dumps(scripts)
        k = RotatingKwrlAgent.built[key]
        RotatingKwrlAgent.built[key] += 1
        super().__init__(*args, turns=scripts[k % len(scripts)], **kwargs)


@contextmanager
def ready_process(argv: list[str], ready: str, timeout_s: float) -> Iterator[str]:
    """Run `argv`; yield the last word of its stdout line starting with `ready` (its URL)."""
    env = {**os.environ, "HARBOR_TELEMETRY": "0", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    try:
        deadline = time.monotonic() + timeout_s
        assert proc.stdout is not None
        line = ""
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if line.startswith(ready):
                break
            if not line and proc.poll() is not None:
                raise RuntimeError(f"{argv} exited: {proc.stderr.read() if proc.stderr else ''}")
        else:
            raise TimeoutError(f"{argv} did not print {ready!r}")
        yield line.split()[-1]
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def world_gateway(root: Path, timeout_s: float = 120.0) -> Any:
    """`kwrl world serve ROOT` in a subprocess; yields its MCP URL once ready."""
    argv = [sys.executable, "-m", "kwrl.cli", "world", "serve", str(root), "--port", "0"]
    argv += ["--in_place"]  # the tests' scratch worlds: their changes are what the tests read
    return ready_process(argv, "kwrl-gateway ready", timeout_s)


def policy_server(
    model: str = "smollm2-135m", timeout_s: float = 300.0, served_name: str | None = None
) -> Any:
    """`kwrl serve MODEL` (CPU) in a subprocess; yields its `/v1` base URL once ready."""
    argv = [sys.executable, "-m", "kwrl.cli", "serve", model, "--port", "0", "--threads", "1"]
    argv += ["--served_name", served_name] if served_name else []
    return ready_process(argv, "kwrl-serve ready", timeout_s)


def synth_prompts(root: Path) -> tuple[Path, Path]:
    """`kwrl data synth` (1 world, 2 tasks, seed 0) into ROOT/data and its SkyRL prompts parquet,
    ROOT/train.parquet: what the SkyRL generator tests run."""
    from kwrl.train.skyrl.data import write_prompts

    data = root / "data"
    synth = [sys.executable, "-m", "kwrl.cli", "data", "synth", "--out", str(data)]
    synth += ["--worlds", "1", "--tasks_per_world", "2", "--seed", "0"]
    subprocess.run(synth, check=True, capture_output=True)
    parquet = root / "train.parquet"
    assert write_prompts(data, parquet) == 2
    return data, parquet
