"""Agent overhead per turn, the model and the tools excluded.

    .venv/bin/python benchmarks/agent.py [--turns 60] [--tokenizer qwen2.5-coder-0.5b] [--result-chars 2000]

The loop runs with a policy that answers at once (recorded turns, pre-tokenized) and a tool session
that answers at once (a fixed result of `--result-chars`), over the real tool list of a world
gateway (`kwrl world serve`, all nine apps, flattened: the largest prompt the agent renders) and
the real tokenizer. A turn's overhead is the wall time from the policy's answer to the next
request: parsing, tool dispatch and bookkeeping, the TITO observation render + diff + tokenization,
the budget check. Prints p50/p90/max per turn in wall time and in this process's CPU time (the
figure that survives a shared, loaded machine) and the share spent in TITO. Target: p50 <= 5 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HARBOR_TELEMETRY", "0")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from mcp_types import CallToolResult, TextContent, Tool

from kwrl.agent.config import AgentConfig
from kwrl.agent.loop import AgentLoop
from kwrl.agent.tito import ChatTemplate
from kwrl.llm.base import Completion, PolicyClient, SamplingParams

TURN = (
    "Reading the next quarter's file.\n<tool_call>\n"
    '{"name": "filesystem_read_text_file", "arguments": {"path": "/reports/q3.txt"}}\n</tool_call>'
)


class InstantPolicy(PolicyClient):
    """Returns a pre-tokenized turn at once and records when each request arrived and left."""

    supports_tokens = True

    def __init__(self, tokenizer: Any, turns: int) -> None:
        end = tokenizer.convert_tokens_to_ids("<|im_end|>")
        self.ids = [*tokenizer.encode(TURN, add_special_tokens=False), end]
        self.lps = [-0.1] * len(self.ids)
        self.final = [*tokenizer.encode("Done.", add_special_tokens=False), end]
        self.turns = turns
        self.enter: list[float] = []
        self.leave: list[float] = []
        self.cpu_enter: list[float] = []
        self.cpu_leave: list[float] = []

    async def complete(
        self, prompt_ids: list[int], params: SamplingParams, *, session_id: str | None = None
    ) -> Completion:
        self.enter.append(time.perf_counter())
        self.cpu_enter.append(time.process_time())
        if len(self.enter) >= self.turns:
            c = Completion(text="Done.", token_ids=self.final, logprobs=[-0.1] * len(self.final))
        else:
            c = Completion(text=TURN, token_ids=self.ids, logprobs=self.lps)
        self.leave.append(time.perf_counter())
        self.cpu_leave.append(time.process_time())
        return c

    async def chat(self, messages: Any, params: SamplingParams, **kw: Any) -> Completion:
        raise NotImplementedError


class InstantTools:
    def __init__(self, tools: list[Tool], result_chars: int) -> None:
        self.tools = tools
        line = "Q3 revenue: 42 million; EBITDA 7.1 million; headcount 41.\n"
        self.text = (line * (result_chars // len(line) + 1))[:result_chars]

    async def list_tools(self) -> list[Tool]:
        return self.tools

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> CallToolResult:
        return CallToolResult(content=[TextContent(type="text", text=self.text)])


async def gateway_tools() -> list[Tool]:
    """The tool list of a real gateway over an empty world."""
    from kwrl.worlds.client import GatewayClient

    with tempfile.TemporaryDirectory() as root:
        (Path(root) / "filesystem").mkdir()
        proc = subprocess.Popen(
            [sys.executable, "-m", "kwrl.cli", "world", "serve", root, "--port", "0"],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            if not line.startswith("kwrl-gateway ready"):
                raise SystemExit(f"gateway did not start: {line!r}")
            async with GatewayClient(line.split()[-1]) as gw:
                return await gw.list_tools()
        finally:
            proc.terminate()
            proc.wait()


class TimedTemplate(ChatTemplate):
    spent: float = 0.0

    def observation_ids(self, messages: list[dict[str, Any]]) -> list[int]:
        t0 = time.perf_counter()
        try:
            return super().observation_ids(messages)
        finally:
            TimedTemplate.spent += time.perf_counter() - t0


async def run(args: argparse.Namespace) -> None:
    from kwrl.agent import loop as loop_mod
    from kwrl.agent.tokenizer import load_tokenizer

    tokenizer = load_tokenizer(args.tokenizer)
    tools = await gateway_tools()
    loop_mod.ChatTemplate = TimedTemplate  # type: ignore[misc]  # count TITO time
    policy = InstantPolicy(tokenizer, args.turns)
    config = AgentConfig(
        max_steps=args.turns + 1, context_window=10_000_000, budget_notice_ratio=0.2
    )
    agent = AgentLoop(policy, InstantTools(tools, args.result_chars), config, tokenizer=tokenizer)
    t0 = time.perf_counter()
    result = await agent.run("Summarise the quarter.")
    total = time.perf_counter() - t0
    assert result.tito is not None
    print(
        f"tools offered: {len(tools)}, prompt tokens: {result.tito.prompt_len}, turns: {len(result.turns)}"
    )
    print(f"trajectory tokens: {len(result.tito.tokens)}, stop: {result.stop_reason}")
    print(f"load average now: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    gaps: list[float] = []
    # The first turn pays one-off template warm-up; skip it.
    for kind, leave, enter in (
        ("wall", policy.leave, policy.enter),
        ("CPU ", policy.cpu_leave, policy.cpu_enter),
    ):
        gaps = [b - a for a, b in zip(leave[:-1], enter[1:], strict=True)]
        ms = sorted(g * 1000 for g in gaps[1:])
        print(
            f"agent overhead per turn, {kind} time (model and tools excluded): "
            f"p50 {statistics.median(ms):.2f} ms, p90 {ms[int(0.9 * (len(ms) - 1))]:.2f} ms, "
            f"max {ms[-1]:.2f} ms  [target p50 <= 5 ms]"
        )
    print(
        f"of which TITO observation tokenization: {1000 * TimedTemplate.spent / len(gaps):.2f} ms/turn"
    )
    print(f"whole run incl. start (tool schemas, prompt tokenization): {total * 1000:.0f} ms")


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--turns", type=int, default=60)
    p.add_argument("--tokenizer", default="qwen2.5-coder-0.5b")
    p.add_argument("--result-chars", type=int, default=2000)
    asyncio.run(run(p.parse_args()))


if __name__ == "__main__":
    main()
