"""TITO (token in, token out): one strictly appending token list per trajectory.

The trainer must see exactly the tokens the sampler produced, so the agent never re-tokenizes the
history. `TitoState` holds three parallel lists: `tokens`, `loss_mask` (1 = sampled by the
policy) and `logprobs` (the sampler's, 0.0 where the mask is 0). A policy turn is appended as
sampled. Everything between turns (tool results, notices, the template's role headers and the
next generation prompt) is an observation with mask 0, tokenized by rendering the chat template
around it and diffing:

    delta = render(BASE + observation, generation prompt) - render(BASE)

where BASE is a constant conversation (system, user, assistant with a tool call) rendered once.
The cost per step is the size of the observation, not of the history.

The non-obvious part is the end of an assistant turn. The template closes a turn with a suffix
(ChatML: `<|im_end|>` then `\\n`). If sampling stopped on `<|im_end|>` that token was sampled: it
stays mask 1 with its logprob, and only the rest of the suffix (`\\n`) is added as a mask-0
template token. If the turn was cut (max_tokens) or stopped on a string, the whole suffix is
template. `ChatTemplate.closing_ids` is found by rendering a marker assistant message.

Templates that ignore `tools=` (SmolLM2) get the tool schemas in the system prompt and tool
results as `<tool_response>` user turns, rendered by `kwrl.llm.tool_prompt` exactly as the engine
and `kwrl serve` render them, in the tool-call format the agent parses (`tool_format`, by name in
`kwrl.llm.formats`; the engine and `kwrl serve` speak `hermes`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from kwrl.errors import AgentError
from kwrl.llm.tool_prompt import (
    ContentSpecials,
    ToolPromptStyle,
    template_messages,
    template_renders_tools,
)

_MARKER = "KWRL_TITO_MARKER_7f3a"

_FIXED_BASE: list[dict[str, Any]] = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "I am a user."},
    {
        "role": "assistant",
        "content": "ok",
        "tool_calls": [
            {"id": "call_0", "type": "function", "function": {"name": "dummy_fn", "arguments": {}}}
        ],
    },
]


class Tokenizer(Protocol):
    """The slice of a Hugging Face tokenizer that TITO uses."""

    eos_token_id: Any

    def apply_chat_template(self, conversation: Any, *args: Any, **kwargs: Any) -> Any: ...

    def encode(self, text: str, *args: Any, **kwargs: Any) -> list[int]: ...

    def decode(self, token_ids: Any, *args: Any, **kwargs: Any) -> str: ...

    def convert_tokens_to_ids(self, tokens: Any) -> Any: ...


class ChatTemplate:
    """A tokenizer's chat template with a fixed tool list: renders messages to text and token ids."""

    def __init__(
        self,
        tokenizer: Tokenizer,
        tools: list[dict[str, Any]] | None = None,
        tool_prompt: ToolPromptStyle = "hermes",
        tool_format: str = "hermes",
    ) -> None:
        self.tokenizer = tokenizer
        self.tool_format = tool_format
        """The tool-call format (`kwrl.llm.formats`) of the tool list this renders."""
        self._specials = ContentSpecials(tokenizer)
        self.tools = list(tools or [])
        self.tool_prompt: ToolPromptStyle = tool_prompt
        self.tools_in_system = tool_prompt == "compact" or not template_renders_tools(tokenizer)
        """The template ignores `tools=`: schemas go into the system prompt, tool results into
        user turns (`kwrl.llm.tool_prompt`, so the engine and the agent render alike)."""
        self.closing_ids: list[int] = self.encode(self._closing_text())
        """Tokens the template puts after an assistant turn's content (e.g. `<|im_end|>`, `\\n`)."""
        if not self.closing_ids:
            raise AgentError(
                "chat template: an assistant turn has no closing tokens; TITO needs one"
            )
        eos = tokenizer.eos_token_id
        eos_ids = set(eos) if isinstance(eos, list) else {eos} if isinstance(eos, int) else set()
        self.stop_token_ids: set[int] = eos_ids | {self.closing_ids[0]}
        """Token ids that end a turn when sampled (the template's turn end and the tokenizer's EOS)."""
        self._obs_tools: list[dict[str, Any]] = self.tools
        self._base_text = self._render_with(_FIXED_BASE, self.tools, False)
        if not self._base_text.endswith(self._closing_text()):
            raise AgentError("chat template: the assistant turn does not end with its closing text")
        if self.tools and self._tools_free_delta():
            # Most templates render tools only in the system turn; then the base is diffed without
            # them, and a step costs the observation's size, not the (~15k-token) tool list's.
            self._obs_tools = []
            self._base_text = self._render_with(_FIXED_BASE, [], False)

    def _render_raw(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, gen: bool
    ) -> str:
        out = self.tokenizer.apply_chat_template(
            messages, tools=tools or None, tokenize=False, add_generation_prompt=gen
        )
        if not isinstance(out, str):
            raise AgentError(f"chat template rendered {type(out).__name__}, expected text")
        return out

    def _render_with(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], gen: bool
    ) -> str:
        msgs, native = template_messages(
            messages, tools, native_tools=not self.tools_in_system, style=self.tool_prompt,
            fmt=self.tool_format,
        )  # fmt: skip
        return self._render_raw(msgs, native, gen)

    def render(self, messages: list[dict[str, Any]], *, add_generation_prompt: bool) -> str:
        return self._render_with(messages, self.tools, add_generation_prompt)

    def _tools_free_delta(self) -> bool:
        """Whether an observation renders the same with and without the tool list."""
        probe = [
            {"role": "tool", "tool_call_id": "call_0", "name": "dummy_fn", "content": "R1"},
            {"role": "tool", "tool_call_id": "call_1", "name": "dummy_fn", "content": "R2"},
            {"role": "user", "content": "U2"},
        ]
        deltas = []
        for tools in (self.tools, []):
            base = self._render_with(_FIXED_BASE, tools, False)
            full = self._render_with([*_FIXED_BASE, *probe], tools, True)
            if not full.startswith(base):
                return False
            deltas.append(full[len(base) :])
        return deltas[0] == deltas[1]

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text, add_special_tokens=False))

    def prompt_ids(self, messages: list[dict[str, Any]]) -> list[int]:
        """Token ids of the opening conversation plus the generation prompt (special-token text in
        a message's content stays text: `ContentSpecials`)."""
        marked, any_marked = self._specials.mark(messages)
        return self._specials.encode(self.render(marked, add_generation_prompt=True), any_marked)

    def _closing_text(self) -> str:
        msgs = [*_FIXED_BASE[:2], {"role": "assistant", "content": _MARKER}]
        text = self._render_raw(msgs, None, False)
        if _MARKER not in text:
            raise AgentError("chat template does not render assistant content verbatim")
        return text[text.rindex(_MARKER) + len(_MARKER) :]

    def observation_ids(self, messages: list[dict[str, Any]]) -> list[int]:
        """Tokens of `messages` between two assistant turns, ending with the generation prompt.

        Rendered after the fixed base, so they start right after a closed assistant turn.
        """
        marked, any_marked = self._specials.mark(messages)
        full = self._render_with([*_FIXED_BASE, *marked], self._obs_tools, True)
        if not full.startswith(self._base_text):
            raise AgentError("chat template: rendering is not prefix-stable; TITO cannot diff it")
        # a tool result that writes `<|im_end|>...` stays text in its turn, as `kwrl serve` reads it
        return self._specials.encode(full[len(self._base_text) :], any_marked)


@dataclass
class TitoTurn:
    """Where one policy turn and the observation after it sit in the token list."""

    prompt_len: int
    """Length of the token list the policy was prompted with."""
    completion_len: int
    closing_len: int = 0
    """Template tokens added to close the turn (mask 0)."""
    observation_len: int = 0


@dataclass
class TitoState:
    """Strictly appending tokens, loss mask and logprobs of one trajectory."""

    template: ChatTemplate
    tokens: list[int] = field(default_factory=list)
    loss_mask: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    turns: list[TitoTurn] = field(default_factory=list)
    prompt_len: int = 0
    """Tokens of the opening prompt (system, user, first generation prompt)."""

    @classmethod
    def start(cls, template: ChatTemplate, messages: list[dict[str, Any]]) -> TitoState:
        ids = template.prompt_ids(messages)
        return cls(template, list(ids), [0] * len(ids), [0.0] * len(ids), [], len(ids))

    def add_completion(self, token_ids: list[int], logprobs: list[float]) -> None:
        """Append one sampled turn as the sampler produced it (mask 1)."""
        if len(token_ids) != len(logprobs):
            raise AgentError(
                f"policy returned {len(token_ids)} token ids but {len(logprobs)} logprobs"
            )
        self.turns.append(TitoTurn(prompt_len=len(self.tokens), completion_len=len(token_ids)))
        self.tokens.extend(token_ids)
        self.loss_mask.extend([1] * len(token_ids))
        self.logprobs.extend(float(x) for x in logprobs)

    def closing_remainder(self) -> list[int]:
        """The part of the template's closing suffix the last turn did not sample itself."""
        turn = self.turns[-1]
        sampled = self.tokens[turn.prompt_len : turn.prompt_len + turn.completion_len]
        closing = self.template.closing_ids
        for k in range(min(len(closing), len(sampled)), 0, -1):
            if sampled[-k:] == closing[:k]:
                return closing[k:]
        return list(closing)

    def add_observation(
        self, messages: list[dict[str, Any]], observation_ids: list[int] | None = None
    ) -> list[int]:
        """Close the last turn and append the observation + next generation prompt (mask 0).

        `observation_ids` may pass `template.observation_ids(messages)` when already computed.
        """
        if not self.turns:
            raise AgentError("TITO: an observation must follow a policy turn")
        turn = self.turns[-1]
        closing = self.closing_remainder()
        obs = (
            self.template.observation_ids(messages) if observation_ids is None else observation_ids
        )
        added = closing + obs
        turn.closing_len, turn.observation_len = len(closing), len(obs)
        self.tokens.extend(added)
        self.loss_mask.extend([0] * len(added))
        self.logprobs.extend([0.0] * len(added))
        return added

    def check(self) -> None:
        n = len(self.tokens)
        if not n == len(self.loss_mask) == len(self.logprobs):
            raise AgentError(
                f"TITO lists differ in length: tokens={n}, mask={len(self.loss_mask)}, "
                f"logprobs={len(self.logprobs)}"
            )

    @property
    def prompt_ids(self) -> list[int]:
        return self.tokens[: self.prompt_len]

    @property
    def response_ids(self) -> list[int]:
        return self.tokens[self.prompt_len :]

    @property
    def response_loss_mask(self) -> list[int]:
        return self.loss_mask[self.prompt_len :]

    @property
    def response_logprobs(self) -> list[float]:
        return self.logprobs[self.prompt_len :]

    def arrays(self) -> dict[str, list[int] | list[float]]:
        """The arrays a trainer reads (response arrays have equal length)."""
        self.check()
        return {
            "prompt_token_ids": self.prompt_ids,
            "response_ids": self.response_ids,
            "loss_mask": self.response_loss_mask,
            "rollout_logprobs": self.response_logprobs,
        }

    def debug_text(self) -> str:
        return self.template.tokenizer.decode(self.tokens, skip_special_tokens=False)
