"""The agent loop against a real world gateway (`kwrl world serve` subprocess) with a scripted
token policy replaying recorded turns through the real Qwen2.5 tokenizer."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from agent_helpers import HANG, ScriptedPolicy, world_gateway

from kwrl.agent.config import DEFAULT_SYSTEM_PROMPT, AgentConfig
from kwrl.agent.drift import measure_drift
from kwrl.agent.loop import AgentLoop, StopReason, run_agent
from kwrl.agent.tito import ChatTemplate
from kwrl.agent.tools import openai_tools
from kwrl.errors import AgentError
from kwrl.llm.base import Completion, PolicyClient, SamplingParams
from kwrl.worlds.client import GatewayClient

NOTES = "Q3 revenue: 1,204,000 EUR\nHeadcount: 41\n"

TURNS = [
    # 1: a well-formed call
    "I'll read the notes first.\n<tool_call>\n"
    '{"name": "filesystem_read_text_file", "arguments": {"file_path": "/notes.txt"}}\n</tool_call>',
    # 2: malformed JSON -> corrective message
    '<tool_call>\n{"name": "filesystem_list_files", "arguments": {"path": "/"</tool_call>',
    # 3: an unknown tool and a tool error (missing file) in one turn
    '<tool_call>\n{"name": "filesystem_nope", "arguments": {}}\n</tool_call>\n'
    '<tool_call>\n{"name": "filesystem_read_text_file", "arguments": {"file_path": "/missing.txt"}}\n</tool_call>',
    # 4: final answer
    "Q3 revenue was 1,204,000 EUR and headcount was 41.",
]


@pytest.fixture(scope="module")
def qwen_tokenizer() -> Any:
    from kwrl.agent.tokenizer import load_tokenizer

    return load_tokenizer("qwen2.5-coder-0.5b")


async def _prompt_len(gw: GatewayClient, tok: Any, instruction: str) -> int:
    tools, _ = openai_tools(await gw.list_tools())
    msgs = [
        {"role": "system", "content": DEFAULT_SYSTEM_PROMPT},
        {"role": "user", "content": instruction},
    ]
    return len(ChatTemplate(tok, tools).prompt_ids(msgs))


@pytest.fixture(scope="module")
def gateway_url(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root: Path = tmp_path_factory.mktemp("world")
    (root / "filesystem").mkdir()
    (root / "filesystem" / "notes.txt").write_text(NOTES)
    with world_gateway(root) as url:
        yield url


async def test_loop_runs_tools_repairs_and_stops_on_the_final_answer(
    gateway_url: str, qwen_tokenizer: Any
) -> None:
    policy = ScriptedPolicy(qwen_tokenizer, TURNS)
    async with GatewayClient(gateway_url) as gw:
        run = await run_agent(
            policy,
            gw,
            "What were Q3 revenue and headcount?",
            AgentConfig(max_steps=10),
            tokenizer=qwen_tokenizer,
            session_id="trial-1",
        )
    assert run.stop_reason == StopReason.FINAL, run.error
    assert run.final_answer == TURNS[-1]
    assert len(run.turns) == 4 and policy.session_ids == {"trial-1"}
    tool_msgs = [m for m in run.messages if m["role"] == "tool"]
    assert "1,204,000 EUR" in tool_msgs[0]["content"]
    assert "unknown tool 'filesystem_nope'" in tool_msgs[1]["content"]
    assert tool_msgs[2]["content"].startswith("Error")
    assert [s.outcome for s in run.turns[2].tool_calls] == ["unknown_tool", "tool_error"]
    assert run.turns[1].malformed and "could not be parsed" in run.messages[5]["content"]

    state = run.tito
    assert state is not None
    # Strictly appending: every prompt is a prefix of the final list.
    for prompt in policy.prompts:
        assert state.tokens[: len(prompt)] == prompt
    # Mask 1 exactly on the sampled tokens, with the sampler's logprobs.
    ones = [i for i, m in enumerate(state.loss_mask) if m]
    assert [state.tokens[i] for i in ones] == [t for ids, _ in policy.sampled for t in ids]
    assert [state.logprobs[i] for i in ones] == [x for _, lps in policy.sampled for x in lps]
    assert all(state.logprobs[i] == 0.0 for i, m in enumerate(state.loss_mask) if not m)
    # Tool output tokens are mask 0.
    notes_ids = qwen_tokenizer.encode("1,204,000 EUR", add_special_tokens=False)
    n = len(notes_ids)
    starts = [i for i in range(len(state.tokens) - n) if state.tokens[i : i + n] == notes_ids]
    assert starts and all(state.loss_mask[s] == 0 for s in starts[:1])
    # Recorded turns are canonical tokenizations here, so a re-render matches exactly.
    assert measure_drift(state, run.messages).n_mismatched == 0


async def test_budget_notice_is_added_once_when_the_context_runs_low(
    gateway_url: str, qwen_tokenizer: Any
) -> None:
    call = TURNS[0]
    policy = ScriptedPolicy(qwen_tokenizer, [call, call, call, "done"])
    async with GatewayClient(gateway_url) as gw:
        window = await _prompt_len(gw, qwen_tokenizer, "Read the notes.") + 600
        config = AgentConfig(context_window=window, budget_notice_ratio=0.9, tool_prompt="hermes")
        run = await run_agent(policy, gw, "Read the notes.", config, tokenizer=qwen_tokenizer)
    notices = [m for m in run.messages if "SYSTEM NOTICE" in str(m.get("content"))]
    assert len(notices) == 1 and notices[0]["role"] == "tool"
    assert run.stop_reason == StopReason.FINAL


async def test_a_full_context_window_ends_the_run_as_context_overflow(
    gateway_url: str, qwen_tokenizer: Any
) -> None:
    call = TURNS[0]
    policy = ScriptedPolicy(qwen_tokenizer, [call] * 20)
    async with GatewayClient(gateway_url) as gw:
        window = await _prompt_len(gw, qwen_tokenizer, "Read the notes.") + 400
        config = AgentConfig(context_window=window, tool_prompt="hermes")
        run = await run_agent(policy, gw, "Read the notes.", config, tokenizer=qwen_tokenizer)
    assert run.stop_reason == StopReason.CONTEXT
    # An observation may overshoot the window; the next turn then finds no room and stops.
    assert run.tito is not None and len(run.tito.tokens) >= window


class _SmallModel(ScriptedPolicy):
    """A scripted token policy whose model attends to `window` tokens."""

    def __init__(self, tokenizer: Any, turns: list[str], window: int) -> None:
        super().__init__(tokenizer, turns)
        self.window = window

    async def context_window(self) -> int | None:
        return self.window


class _Budgeted(_SmallModel):
    """A `_SmallModel` that records each turn's token budget."""

    budgets: list[int]

    async def complete(
        self, prompt_ids: list[int], params: SamplingParams, *, session_id: str | None = None
    ) -> Completion:
        self.budgets = [*getattr(self, "budgets", []), params.max_tokens]
        return await super().complete(prompt_ids, params, session_id=session_id)


async def test_a_turn_s_default_budget_is_an_eighth_of_the_model_s_window(
    gateway_url: str, qwen_tokenizer: Any
) -> None:
    """The packaged SmolLM2-135M attends to 8192 tokens: a default turn samples at most 1024 of
    them, not 4096 (a rambling turn took 6.5 minutes on 2 cores); a set budget is kept."""
    async with GatewayClient(gateway_url) as gw:
        default = _Budgeted(qwen_tokenizer, [TURNS[0], "done"], window=8192)
        config = AgentConfig(tools=["filesystem_*"])
        await run_agent(default, gw, "Read the notes.", config, tokenizer=qwen_tokenizer)
        set_ = _Budgeted(qwen_tokenizer, ["done"], window=8192)
        config = AgentConfig(tools=["filesystem_*"], max_tokens_per_turn=300)
        await run_agent(set_, gw, "Read the notes.", config, tokenizer=qwen_tokenizer)
    assert default.budgets[0] == 1024 and all(b <= 1024 for b in default.budgets)
    assert set_.budgets == [300]


async def test_a_tool_list_too_long_for_the_models_window_is_listed_compactly(
    gateway_url: str, qwen_tokenizer: Any
) -> None:
    async with GatewayClient(gateway_url) as gw:
        full = await _prompt_len(gw, qwen_tokenizer, "Read the notes.")
        # Archipelago's full tool list is ~33k Qwen tokens in Hermes JSON: roomy needs a big window.
        roomy = await run_agent(
            ScriptedPolicy(qwen_tokenizer, ["done"]), gw, "Read the notes.",
            AgentConfig(context_window=131072), tokenizer=qwen_tokenizer,
        )  # fmt: skip
        # The setting is above the model's window: the model's wins.
        policy = _SmallModel(qwen_tokenizer, [TURNS[0], "done"], window=full + 600)
        small = await run_agent(
            policy, gw, "Read the notes.", AgentConfig(context_window=131072),
            tokenizer=qwen_tokenizer,
        )  # fmt: skip
    assert roomy.tool_prompt == "hermes" and roomy.tool_prompt_reason is None
    assert roomy.tito is not None and roomy.tito.prompt_len == full
    assert roomy.context_window == 131072
    assert small.context_window == full + 600 and small.tool_prompt == "compact"
    assert small.tool_prompt_reason is not None and "over half" in small.tool_prompt_reason
    assert small.tito is not None and small.tito.prompt_len < full // 2
    assert small.stop_reason == StopReason.FINAL and len(small.turns) == 2
    assert "filesystem_read_text_file(" in qwen_tokenizer.decode(policy.prompts[0])


async def test_a_prompt_that_leaves_no_room_refuses_to_start_naming_the_settings(
    gateway_url: str, qwen_tokenizer: Any
) -> None:
    async with GatewayClient(gateway_url) as gw:
        full = await _prompt_len(gw, qwen_tokenizer, "Read the notes.")
        policy = _SmallModel(qwen_tokenizer, ["done"], window=full + 100)
        with pytest.raises(AgentError, match=r"`tools`.*`tool_prompt`.*`context_window`"):
            await run_agent(
                policy, gw, "Read the notes.", AgentConfig(tool_prompt="hermes"),
                tokenizer=qwen_tokenizer,
            )  # fmt: skip
    assert policy.prompts == []  # no turn was sampled


class _ChatPolicy(PolicyClient):
    """A chat-only policy whose provider returns structured tool calls (no token ids)."""

    supports_tokens = False

    def __init__(self) -> None:
        self.seen: list[list[dict[str, Any]]] = []

    async def chat(self, messages: list[dict[str, Any]], params: Any, **kw: Any) -> Any:
        from kwrl.llm.base import Completion

        self.seen.append([dict(m) for m in messages])
        if len(self.seen) == 1:
            call = {
                "id": "x1",
                "type": "function",
                "function": {
                    "name": "filesystem_read_text_file",
                    "arguments": '{"file_path": "/notes.txt"}',
                },
            }
            return Completion(text="Reading.", tool_calls=[call], usage={"prompt_tokens": 100})
        return Completion(
            text="Headcount is 41.", usage={"prompt_tokens": 150, "completion_tokens": 5}
        )

    async def complete(self, *a: Any, **kw: Any) -> Any:
        raise NotImplementedError

    async def aclose(self) -> None:
        pass


async def test_a_chat_policy_runs_without_token_arrays(gateway_url: str) -> None:
    policy = _ChatPolicy()
    async with GatewayClient(gateway_url) as gw:
        run = await run_agent(policy, gw, "Headcount?", AgentConfig(tools=["filesystem_*"]))  # type: ignore[arg-type]
    assert run.stop_reason == StopReason.FINAL and run.final_answer == "Headcount is 41."
    assert run.tito is None and run.n_input_tokens == 250
    assert all(t["function"]["name"].startswith("filesystem_") for t in run.tools)
    second = policy.seen[1]
    assert second[2]["tool_calls"][0]["function"]["name"] == "filesystem_read_text_file"
    assert second[3]["role"] == "tool" and "Headcount: 41" in second[3]["content"]


async def test_a_run_cut_by_the_clock_keeps_its_turns_and_says_it_waited_on_the_policy(
    gateway_url: str, qwen_tokenizer: Any
) -> None:
    """harbor's agent timeout cancels the loop mid-await: the trajectory so far stays whole (it is
    trained), and `cut_off` tells the rollout the endpoint, not the tools, had the clock."""
    policy = ScriptedPolicy(qwen_tokenizer, [TURNS[0], HANG])
    async with GatewayClient(gateway_url) as gw:
        loop = AgentLoop(policy, gw, AgentConfig(max_steps=5), tokenizer=qwen_tokenizer)
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(loop.run("Read the notes."), timeout=2.0)
    run = loop.run_
    assert run is not None and run.cut_off is not None
    assert run.cut_off.waiting_on == "policy" and run.cut_off.seconds > 0
    assert run.cut_off.max_tokens == AgentConfig().turn_tokens(loop.window) == 4096
    assert run.cut_off.prompt_tokens == len(policy.prompts[-1])
    assert len(run.turns) == 1 and run.turns[0].tool_latency_s > 0
    assert run.tito is not None and run.tito.tokens == policy.prompts[-1]
    run.tito.check()
