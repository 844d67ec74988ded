"""The agent loop, independent of harbor: policy turns and MCP tool calls until a final answer.

`run_agent(policy, tools, instruction, config, tokenizer=...)` follows RECIPE's archipelago agent:

    messages = [system, user(instruction + extra prompt)]
    each step: ask the policy for the next assistant turn
      token policy (TITO): prompt = the trajectory's token list; the turn is appended as sampled
      chat policy: prompt = messages (+ tool schemas); no token arrays
    parse tool calls -> none: the turn is the final answer (stop)
                     -> malformed: corrective message (at most `max_repair_attempts`)
                     -> calls: run each over MCP (timeout), results truncated, appended
    a notice asks for the final answer once the projected free context is <= budget_notice_ratio

The loop never raises for what the policy does; infrastructure failures (policy transport, dead
MCP session) end the run with a stop reason and the error text, so a caller can classify and
mask the trial. A dead session or a timed-out call is first put to `tools_check`: a tools' server
that agent code ended or stopped (the policy's own doing) ends the run as `tools_lost`, graded and
trained, not masked. Everything it measured comes back in `AgentRun`, also when the run is
cancelled (harbor's agent timeout): `AgentRun.cut_off` then says what it was waiting on, the policy
endpoint or the tools, for how long, so the timeout can be blamed on one of them
(`kwrl.rollout.failures.policy_was_slow`). A turn's `latency_s` is the endpoint's own, timed on the
wire by the client where it can (`Completion.latency_s`), after `PolicyClient.warm()` took the
client's cold start (litellm's import, ~5 s) off the first turn.
"""

from __future__ import annotations

import asyncio
import fnmatch
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import mcp_types as mt
from mcp.shared.exceptions import MCPError

from kwrl import progress
from kwrl.agent.config import AgentConfig
from kwrl.agent.meta import AgentMeta, CutOff, DriftValue, ToolStat, TurnStats
from kwrl.agent.parsers import ParsedToolCall, build_parser
from kwrl.agent.tito import ChatTemplate, TitoState, Tokenizer
from kwrl.agent.tools import ToolSession, openai_tools, result_text, truncate_middle
from kwrl.errors import AgentError, PolicyError
from kwrl.llm.base import Completion, FinishReason, PolicyClient, SamplingParams
from kwrl.llm.tool_prompt import ToolPromptStyle

MIN_FREE_TOKENS = 256
"""A first prompt must leave at least min(the turn's token budget, this) tokens of the window free."""


class StopReason(StrEnum):
    FINAL = "stop"
    """A turn without tool calls: its text is the final answer."""
    LENGTH = "length"
    """The last turn was cut at its token budget (`AgentConfig.turn_tokens`) without a tool call
    (reward 0, trained)."""
    CONTEXT = "context_overflow"
    """The context window is full (reward 0, trained)."""
    MAX_STEPS = "max_steps"
    """max_steps turns without a final answer."""
    POLICY_ERROR = "policy_error"
    """The policy could not be reached or failed (infrastructure: the trial is masked)."""
    TOOL_ERROR = "tool_error"
    """The MCP session died (infrastructure: the trial is masked)."""
    TOOLS_LOST = "tools_lost"
    """Agent code ended or stopped the world gateway that serves its tools (`tools_check` said so
    after the session failed or a call timed out): the trial is graded on the world as it stands
    and trained, never masked, so a policy cannot trade a low reward for a mask this way."""


@dataclass
class AgentRun:
    """What one run of the loop produced."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    stop_reason: StopReason
    final_answer: str = ""
    turns: list[TurnStats] = field(default_factory=list)
    tito: TitoState | None = None
    error: str | None = None
    session_id: str = ""
    tool_calls: list[list[ParsedToolCall]] = field(default_factory=list)
    """The parsed calls of each turn (empty list for a turn without calls)."""
    tool_prompt: str | None = None
    """How the tools were listed (`hermes` or `compact`; token policies only)."""
    tool_prompt_reason: str | None = None
    """Why `tool_prompt = "auto"` listed them compactly, when it did."""
    context_window: int | None = None
    """The window the run was held to: the setting, or the model's when smaller (token policies)."""
    cut_off: CutOff | None = None
    """Set when the run was cancelled while waiting on the policy or the tools."""

    @property
    def n_input_tokens(self) -> int:
        return sum(t.prompt_tokens for t in self.turns)

    @property
    def n_output_tokens(self) -> int:
        return sum(t.completion_tokens for t in self.turns)

    def to_meta(self, elapsed_s: float, tito_drift: dict[str, DriftValue] | None) -> AgentMeta:
        """The run's record for harbor's metadata; the TITO arrays only where it kept token ids."""
        fields: dict[str, Any] = {
            "session_id": self.session_id,
            "stop_reason": str(self.stop_reason),
            "error": self.error,
            "final_answer": self.final_answer,
            "n_turns": len(self.turns),
            "elapsed_s": elapsed_s,
            "turn_stats": self.turns,
            "tool_prompt": self.tool_prompt,
            "tool_prompt_reason": self.tool_prompt_reason,
            "context_window": self.context_window,
            "cut_off": self.cut_off,
        }
        if self.tito is not None:
            fields.update(self.tito.arrays(), tito_drift=tito_drift)
        return AgentMeta(**fields)


class AgentLoop:
    """One trial's loop state; `run()` drives it. Use `run_agent` for the common case."""

    def __init__(
        self,
        policy: PolicyClient,
        tools: ToolSession,
        config: AgentConfig,
        *,
        tokenizer: Tokenizer | None = None,
        session_id: str | None = None,
        tools_check: Callable[[], str | None] | None = None,
    ) -> None:
        """`tools_check`: asked when the MCP session fails or a tool call times out; it returns
        why the tools' server stopped serving by the agent's own doing (e.g.
        `LocalEnvironment.gateway_fate`), or None (the failure stays infrastructure)."""
        if policy.supports_tokens and tokenizer is None:
            raise AgentError("a token policy needs the policy's tokenizer for TITO")
        self.policy = policy
        self.session = tools
        self.config = config
        self.tokenizer = tokenizer
        self.session_id = session_id or uuid.uuid4().hex
        self.tools_check = tools_check
        self.parser = build_parser(config.tool_call_parser)
        self.wrappers: dict[str, str] = {}
        self.tool_schemas: list[dict[str, Any]] = []
        self.tool_names: set[str] = set()
        self.messages: list[dict[str, Any]] = []
        self.tito: TitoState | None = None
        self.run_: AgentRun | None = None
        self.window = config.context_window
        """The context window: config.context_window, lowered to the model's when it is smaller."""
        self._repairs = 0
        self._warned = False
        self._waiting: CutOff | None = None
        """What the loop awaits now (since `_since`), for `AgentRun.cut_off`."""
        self._since = 0.0

    async def start(self, instruction: str) -> None:
        await self.policy.warm()  # its imports and connections are not the first turn's latency
        listed = await self.session.list_tools()
        if self.config.tools is not None:
            patterns = self.config.tools
            listed = [t for t in listed if any(fnmatch.fnmatchcase(t.name, p) for p in patterns)]
        self.tool_schemas, self.wrappers = openai_tools(listed)
        self.tool_names = {t.name for t in listed}
        user = instruction
        if self.config.extra_prompt:
            user = f"{instruction}\n\n{self.config.extra_prompt}"
        self.messages = [
            {"role": "system", "content": self.config.system_prompt},
            {"role": "user", "content": user},
        ]
        style, reason = None, None
        if self.policy.supports_tokens:
            model_window = await self.policy.context_window()
            if model_window:
                self.window = min(self.window, model_window)
            self.tito, reason = self._first_prompt()
            style = self.tito.template.tool_prompt
        self.run_ = AgentRun(
            self.messages,
            self.tool_schemas,
            StopReason.MAX_STEPS,
            tito=self.tito,
            session_id=self.session_id,
            tool_prompt=style,
            tool_prompt_reason=reason,
            context_window=self.window if self.tito is not None else None,
        )

    def _first_prompt(self) -> tuple[TitoState, str | None]:
        """The opening tokens in the configured tool-prompt style (`auto`: hermes if the prompt fits
        in half the window, else compact), and why auto went compact; AgentError if it leaves no room."""
        assert self.tokenizer is not None
        setting = self.config.tool_prompt
        style: ToolPromptStyle = "compact" if setting == "compact" else "hermes"
        state = TitoState.start(
            ChatTemplate(self.tokenizer, self.tool_schemas, style, self.config.tool_call_parser),
            self.messages,
        )
        reason = None
        if setting == "auto" and self.tool_schemas and len(state.tokens) > self.window // 2:
            reason = (
                f"the full tool list ({len(self.tool_schemas)} tools) makes a "
                f"{len(state.tokens)}-token first prompt, over half the {self.window}-token "
                "context window"
            )
            compact = ChatTemplate(
                self.tokenizer, self.tool_schemas, "compact", self.config.tool_call_parser
            )
            state = TitoState.start(compact, self.messages)
        free = self.window - len(state.tokens)
        need = min(self.config.turn_tokens(self.window), MIN_FREE_TOKENS)
        if free < need:
            raise AgentError(
                f"the first prompt ({len(state.tokens)} tokens: system, task and "
                f"{len(self.tool_schemas)} tools listed {state.template.tool_prompt}) leaves "
                f"{max(free, 0)} of the {self.window}-token context window free, fewer than "
                f"{need}: offer fewer tools (agent setting `tools`, name patterns such as "
                '"filesystem_*"), list them compactly (`tool_prompt`: compact), or use a model with '
                "a larger window (`context_window` is at most the model's)"
            )
        return state, reason

    def _params(self, remaining: int | None) -> SamplingParams:
        max_tokens = self.config.turn_tokens(self.window)
        if remaining is not None:
            max_tokens = min(max_tokens, remaining)
        return SamplingParams(
            max_tokens=max_tokens,
            temperature=self.config.temperature,
            top_p=self.config.top_p,
            seed=self.config.seed,
        )

    async def _sample(self) -> tuple[Completion, int, int | None]:
        """The next turn, the prompt size, and the context left before it (token policies)."""
        if self.tito is not None:
            remaining = self.window - len(self.tito.tokens)
            if remaining <= 0:
                return (
                    Completion(text="", finish_reason=FinishReason.CONTEXT),
                    len(self.tito.tokens),
                    0,
                )
            params = self._params(remaining)
            self._wait("policy", len(self.tito.tokens), params.max_tokens)
            c = await self.policy.complete(self.tito.tokens, params, session_id=self.session_id)
            return c, len(self.tito.tokens), remaining
        params = self._params(None)
        self._wait("policy", 0, params.max_tokens)
        c = await self.policy.chat(
            self.messages, params, tools=self.tool_schemas, session_id=self.session_id
        )
        return c, int(c.usage.get("prompt_tokens", 0)), None

    def _wait(self, on: str, prompt_tokens: int = 0, max_tokens: int = 0) -> None:
        """Mark the start of an await on the policy or the tools (`_waiting` is None between)."""
        self._waiting = CutOff(on, 0.0, prompt_tokens, max_tokens)
        self._since = time.perf_counter()

    async def run(self, instruction: str) -> AgentRun:
        await self.start(instruction)
        assert self.run_ is not None
        run = self.run_
        try:
            await self._turns(run)
        except asyncio.CancelledError:  # harbor's agent timeout: say what the clock ran out on
            if self._waiting is not None:
                self._waiting.seconds = time.perf_counter() - self._since
                run.cut_off = self._waiting
            raise
        if self.tito is not None:
            self.tito.check()
        return run

    async def _turns(self, run: AgentRun) -> None:
        """Policy turns and their tool calls until a stop reason (set on `run`)."""
        for step in range(self.config.max_steps):
            t0 = time.perf_counter()
            try:
                completion, n_prompt, remaining = await self._sample()
                self._waiting = None
            except (PolicyError, OSError) as e:
                run.stop_reason, run.error = StopReason.POLICY_ERROR, f"{type(e).__name__}: {e}"
                break
            stats = TurnStats(
                step=step,
                prompt_tokens=n_prompt,
                completion_tokens=len(completion.token_ids)
                or int(completion.usage.get("completion_tokens", 0)),
                latency_s=completion.latency_s
                if completion.latency_s is not None
                else time.perf_counter() - t0,
                finish_reason=str(completion.finish_reason),
                weight_version=completion.weight_version,
            )
            if completion.finish_reason == FinishReason.CONTEXT:
                run.stop_reason = StopReason.CONTEXT
                run.error = "the prompt does not fit the context window"
                break
            run.turns.append(stats)
            stop = await self._step(completion, stats, remaining)
            progress.turn(stats)
            if stop is not None:
                run.stop_reason = stop
                break

    async def _step(
        self, completion: Completion, stats: TurnStats, remaining: int | None
    ) -> StopReason | None:
        """Record one turn and act on it; a stop reason ends the run."""
        assert self.run_ is not None
        run = self.run_
        if self.tito is not None:
            if not completion.token_ids and completion.text:
                run.error = "the token policy returned text without token ids"
                return StopReason.POLICY_ERROR
            self.tito.add_completion(completion.token_ids, completion.logprobs)
        parsed = self.parser.parse(completion.text, self.tool_schemas)
        calls = parsed.tool_calls
        if completion.tool_calls and not calls:
            calls = _structured_calls(completion.tool_calls)
        calls = [
            ParsedToolCall(id=f"call_{stats.step}_{i}", name=c.name, arguments=c.arguments)
            for i, c in enumerate(calls)
        ]
        run.tool_calls.append(calls)
        assistant: dict[str, Any] = {"role": "assistant", "content": completion.text}
        if self.tito is None and calls:
            assistant["content"] = parsed.content
            assistant["tool_calls"] = [_openai_call(c) for c in calls]
        self.messages.append(assistant)
        stats.malformed = parsed.malformed
        cut = completion.finish_reason == FinishReason.LENGTH
        if cut and remaining is not None and len(completion.token_ids) >= remaining:
            run.error = "generation ran into the end of the context window"
            return StopReason.CONTEXT
        if not calls:
            if parsed.malformed and not cut and self._repairs < self.config.max_repair_attempts:
                self._repairs += 1
                note = self.config.repair_message.replace("{errors}", "; ".join(parsed.errors))
                self._observe([{"role": "user", "content": note}])
                return None
            run.final_answer = parsed.content
            return StopReason.LENGTH if cut else StopReason.FINAL
        t0 = time.perf_counter()
        self._wait("tools")
        try:
            observation = [await self._call(c, stats) for c in calls]
        except AgentError as e:
            self._waiting = None
            run.error = str(e)
            if isinstance(e, ToolsLostError):
                return StopReason.TOOLS_LOST
            if fate := self._tools_fate():
                run.error = f"{e} ({fate})"
                return StopReason.TOOLS_LOST
            return StopReason.TOOL_ERROR
        self._waiting = None
        stats.tool_latency_s = time.perf_counter() - t0
        if parsed.malformed:
            note = self.config.repair_message.replace("{errors}", "; ".join(parsed.errors))
            observation.append({"role": "user", "content": note})
        self._observe(observation)
        return None

    def _tools_fate(self) -> str | None:
        """Why the tools' server stopped serving by the agent's doing (`tools_check`), or None."""
        return self.tools_check() if self.tools_check is not None else None

    def _observe(self, observation: list[dict[str, Any]]) -> None:
        """Append messages between turns (and their tokens), adding the budget notice if due."""
        if self.tito is not None:
            ids = self.tito.template.observation_ids(observation)
            ratio = self.config.budget_notice_ratio
            if ratio is not None and not self._warned:
                window = self.window
                closing = len(self.tito.closing_remainder())
                free = window - len(self.tito.tokens) - closing - len(ids)
                if free <= ratio * window:
                    self._warned = True
                    pct = max(0, round(100 * free / window))
                    _append_notice(
                        observation, self.config.budget_notice.replace("{pct}", str(pct))
                    )
                    ids = self.tito.template.observation_ids(observation)
            self.tito.add_observation(observation, ids)
        self.messages.extend(observation)

    async def _call(self, call: ParsedToolCall, stats: TurnStats) -> dict[str, Any]:
        t0 = time.perf_counter()
        outcome, ok = "ok", True
        if call.name not in self.tool_names:
            text = f"Error: unknown tool {call.name!r}. Available tools: {', '.join(sorted(self.tool_names))}"
            outcome, ok = "unknown_tool", False
        else:
            args = call.arguments
            if call.name in self.wrappers:
                args = {self.wrappers[call.name]: args}
            try:
                result = await asyncio.wait_for(
                    self.session.call_tool(call.name, args), self.config.tool_call_timeout_s
                )
                text = result_text(result)
                if result.is_error:
                    outcome, ok = "tool_error", False
                    text = text if text.lower().startswith("error") else f"Error: {text}"
            except TimeoutError:
                text = (
                    f"Error: tool {call.name} timed out after {self.config.tool_call_timeout_s:g} s"
                )
                outcome, ok = "timeout", False
            except MCPError as e:
                if _is_timeout(e):
                    text = f"Error: tool {call.name} timed out after {self.config.tool_call_timeout_s:g} s"
                    outcome = "timeout"
                else:
                    text, outcome = f"Error calling tool {call.name}: {e}", "tool_error"
                ok = False
            except Exception as e:
                raise AgentError(
                    f"MCP session failed during {call.name}: {type(e).__name__}: {e}"
                ) from e
        if outcome == "timeout" and (fate := self._tools_fate()):
            raise ToolsLostError(f"{call.name} timed out: {fate}")
        stats.tool_calls.append(ToolStat(call.name, ok, outcome, time.perf_counter() - t0))
        text = truncate_middle(text, self.config.tool_result_max_chars)
        return {"role": "tool", "tool_call_id": call.id, "name": call.name, "content": text}


class ToolsLostError(AgentError):
    """The tools' server stopped serving by the agent's own doing (`AgentLoop.tools_check`)."""


def _is_timeout(e: MCPError) -> bool:
    return "timed out" in str(e).lower() or getattr(e.error, "code", None) == mt.REQUEST_TIMEOUT


def _append_notice(observation: list[dict[str, Any]], notice: str) -> None:
    for msg in reversed(observation):
        if msg.get("role") == "tool":
            msg["content"] = f"{msg['content']}\n\n{notice}" if msg["content"] else notice
            return
    observation.append({"role": "user", "content": notice})


def _structured_calls(raw: list[dict[str, Any]]) -> list[ParsedToolCall]:
    """Calls a chat provider already parsed (OpenAI shape) -> ParsedToolCall."""
    import json

    out: list[ParsedToolCall] = []
    for i, tc in enumerate(raw):
        fn = tc.get("function", tc)
        args = fn.get("arguments") or {}
        if isinstance(args, str):
            try:
                args = json.loads(args) if args.strip() else {}
            except json.JSONDecodeError:
                args = {}
        out.append(
            ParsedToolCall(id=str(tc.get("id") or f"call_{i}"), name=fn["name"], arguments=args)
        )
    return out


def _openai_call(c: ParsedToolCall) -> dict[str, Any]:
    import json

    return {
        "id": c.id,
        "type": "function",
        "function": {"name": c.name, "arguments": json.dumps(c.arguments, ensure_ascii=False)},
    }


async def run_agent(
    policy: PolicyClient,
    tools: ToolSession,
    instruction: str,
    config: AgentConfig | None = None,
    *,
    tokenizer: Tokenizer | None = None,
    session_id: str | None = None,
) -> AgentRun:
    """Run one trial's agent loop to a stop reason."""
    loop = AgentLoop(
        policy, tools, config or AgentConfig(), tokenizer=tokenizer, session_id=session_id
    )
    return await loop.run(instruction)
