"""The agent's settings (RECIPE defaults) and the prompts it adds around the task."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError

from kwrl.config import KwrlConfig, format_validation_error, load_config
from kwrl.errors import ConfigError
from kwrl.llm.policy import PolicySettings

ENV_TOKENIZER = "KWRL_TOKENIZER"
"""Environment variable naming the tokenizer KwrlAgent renders with (a folder, a packaged name or a
hub id), when no `tokenizer` setting does."""

DEFAULT_SYSTEM_PROMPT = """\
You are an AI assistant that completes tasks in a company's files, mail, calendar and chat \
by reasoning and using tools.

Before each tool call, say in 1-3 sentences what you learned and what you will do next.
Use the tools to read files, run code, and create or edit documents.
Show your work for calculations.
When you are done, reply with your final answer as plain text, without any tool call."""

DEFAULT_BUDGET_NOTICE = (
    "[SYSTEM NOTICE] You are almost out of context budget (~{pct}% of the context window "
    "remains). Limit the number of tool calls and provide your final answer soon."
)

DEFAULT_REPAIR_MESSAGE = (
    "Your previous message contained a <tool_call> block that could not be parsed ({errors}). "
    "Re-issue the tool call in the exact required format. If you meant to finish, reply with "
    "your final answer and no <tool_call> block."
)


TURN_SHARE = 8
"""A turn's default token budget is the context window over this: 4096 tokens of a 32k window,
as before the budget followed the window; 1024 of the packaged SmolLM2-135M's 8192, whose
4096-token rambles took 6.5 minutes a turn on 2 CPU cores (a 1024-token one: 131 s after a
3.5k-token prompt, `kwrl trial run` against `kwrl serve`)."""


class AgentConfig(KwrlConfig):
    """How the agent runs one trial: prompts, limits, sampling and the tool-call format."""

    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    """System message of every trial."""
    extra_prompt: str | None = None
    """Text appended to the task instruction (e.g. a note that images cannot be seen)."""
    max_steps: int = Field(default=100, ge=1)
    """Policy turns per trial (RECIPE: 100 for training, 250 for evaluation)."""
    context_window: int = Field(default=32768, ge=256)
    """Tokens the policy can attend to; a turn's max_tokens is capped by what is left. A token
    policy that knows its model's window (engine:, kwrl serve, vLLM) lowers it to that window."""
    max_tokens_per_turn: int | None = Field(default=None, ge=1)
    """Most tokens sampled in one turn; a turn cut here without a tool call ends the trial. None:
    an eighth of the context window (`turn_tokens`): 4096 of the default 32768, 1024 of the
    packaged SmolLM2-135M's 8192 (a token policy lowers the window to its model's)."""
    temperature: float = Field(default=1.0, ge=0.0)
    """Sampling temperature (1.0 for RL: logprobs then match the sampling policy)."""
    top_p: float = Field(default=1.0, gt=0.0, le=1.0)
    """Nucleus sampling mass."""
    seed: int | None = None
    """Sampling seed, when the policy honours one."""
    tools: list[str] | None = None
    """Tool names or fnmatch patterns offered to the model (e.g. `filesystem_*`); None offers
    every tool of the gateway. Small-context policies need a subset: all nine apps are ~15k tokens."""
    tool_prompt: Literal["auto", "hermes", "compact"] = "auto"
    """How kwrl lists the tools where it renders the prompt itself (token policies: engine:,
    /v1/completions): `hermes` JSON schemas (Qwen2.5's wording), or `compact` one-line signatures,
    ~10x fewer tokens, for small models on small budgets; `auto` takes hermes while the first
    prompt fits in half the context window, else compact (the choice is in the agent's metadata).
    The agent refuses to start when the first prompt leaves less than
    min(its turn budget, 256) tokens free. Chat-API policies get OpenAI `tools=`. SFT's gold
    replay decides `auto` on context_window alone: keep that at most the model's window."""
    tool_call_parser: str = "hermes"
    """Tool-call format (`kwrl.llm.formats.FORMATS`) the agent parses sampled text by and, where
    the chat template does not render tools, lists tools and past calls in: hermes (Qwen2.5,
    SmolLM2), qwen3_xml (Qwen3-Coder), glm4."""
    tool_call_timeout_s: float = Field(default=600.0, gt=0)
    """Seconds one tool call may take before the model is told it timed out."""
    tool_result_max_chars: int = Field(default=42000, ge=0)
    """Longer tool results keep their head (2/3) and tail (1/3); 0 keeps everything."""
    max_repair_attempts: int = Field(default=2, ge=0)
    """Corrective messages after an unparsable tool call, per trial."""
    budget_notice_ratio: float | None = Field(default=0.2, ge=0.0, le=1.0)
    """When the context projected free at the next turn is at most this fraction, ask for the
    final answer soon (once). None disables the notice."""
    budget_notice: str = DEFAULT_BUDGET_NOTICE
    """The notice; `{pct}` is replaced by the percent of the window left."""
    repair_message: str = DEFAULT_REPAIR_MESSAGE
    """The corrective message; `{errors}` is replaced by what the parser found wrong."""

    def turn_tokens(self, window: int) -> int:
        """The most tokens one turn samples under a `window`-token context: `max_tokens_per_turn`,
        else `window // TURN_SHARE`, so a small model's turn stays a small part of its window."""
        return self.max_tokens_per_turn or max(1, window // TURN_SHARE)


class KwrlAgentSettings(KwrlConfig):
    """Everything a run sets for KwrlAgent: its loop settings, its policy client's and its
    tokenizer. `kwrl.rollout.runner.build_rollout_config` builds it once per run; it crosses
    harbor as one agent kwarg (`SETTINGS_KWARG`, this model's JSON) and KwrlAgent validates it
    once (`agent_settings`)."""

    agent: AgentConfig = Field(default_factory=AgentConfig)
    """The agent loop's settings."""
    policy: PolicySettings = Field(default_factory=PolicySettings)
    """The policy client's settings; the policy's spec is harbor's model name (the run's model)."""
    tokenizer: str | None = None
    """Tokenizer the agent renders with (packaged name, folder or hub id); None: the policy's
    (`ENV_TOKENIZER`, or an in-process policy's own)."""

    def with_agent(self, **fields: Any) -> KwrlAgentSettings:
        """These settings with `fields` of the agent's set over them (validated)."""
        agent = AgentConfig.model_validate({**self.agent.model_dump(exclude_unset=True), **fields})
        return self.model_copy(update={"agent": agent})


SETTINGS_KWARG = "settings"
"""The harbor agent kwarg that carries `KwrlAgentSettings` (its JSON) to KwrlAgent."""

KWRL_AGENT_KWARGS = frozenset(
    {SETTINGS_KWARG, "policy", "policy_config", "tokenizer", "mcp_url", "agent_config"}
)
"""KwrlAgent's harbor kwargs besides AgentConfig's fields (`kwrl.agent.harbor_agent.KwrlAgent`):
kwrl's runs give it `settings` alone; the others are how a harbor command line sets it."""


def agent_settings(
    settings: Any, flat: dict[str, Any], agent_config: Path | None = None,
    source: str = "KwrlAgent kwargs",
) -> KwrlAgentSettings:  # fmt: skip
    """The one validation of KwrlAgent's settings: `settings` (`KwrlAgentSettings` JSON, or
    None) over `agent_config` (a TOML file of AgentConfig fields), and a harbor command line's
    kwargs `flat` over both (AgentConfig fields, `tokenizer`, `policy_config`: a dict of policy
    settings). A ConfigError names `source` (or the TOML file) and each field."""
    data = dict(settings or {})
    agent = dict(data.get("agent") or {})
    if agent_config is not None:
        agent = {**load_config(AgentConfig, agent_config).model_dump(exclude_unset=True), **agent}
    agent |= {k: v for k, v in flat.items() if k in AgentConfig.model_fields}
    data["agent"] = agent
    if flat.get("policy_config"):
        data["policy"] = {**(data.get("policy") or {}), **flat["policy_config"]}
    if flat.get("tokenizer") is not None:
        data["tokenizer"] = flat["tokenizer"]
    try:
        return KwrlAgentSettings.model_validate(data)
    except ValidationError as e:
        raise ConfigError(format_validation_error(source, e)) from None


def check_agent_kwargs(kwargs: dict[str, Any], source: str) -> None:
    """Refuse, before any trial starts, KwrlAgent kwargs that it would not take: a key that is
    neither an AgentConfig field nor one of `KWRL_AGENT_KWARGS` (harbor would pass a misspelt
    `max_step` on silently), or a value AgentConfig refuses. The ConfigError names `source` (the
    flag or file) and each key."""
    fields = AgentConfig.model_fields
    errors = [
        f"  {k}: not an AgentConfig field (nor a KwrlAgent kwarg)"
        for k in sorted(set(kwargs) - set(fields) - KWRL_AGENT_KWARGS)
    ]
    try:
        AgentConfig.model_validate({k: v for k, v in kwargs.items() if k in fields})
    except ValidationError as e:
        errors += format_validation_error(source, e).splitlines()[1:]
    if errors:
        raise ConfigError("\n".join([f"{source}: invalid agent settings", *errors]))
