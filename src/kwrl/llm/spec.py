"""Model specs: the one string grammar that names a policy or a judge.

    http(s)://HOST:PORT/v1#NAME   an OpenAI-compatible server; NAME is the served model name
                                  (`default` when absent; `kwrl serve` answers to any name)
    KIND:TARGET                   a registry entry by name: `litellm:gemini/gemini-2.5-flash`,
                                  `engine:smollm2-135m`, ...

Each family keeps its own registry (policies: `kwrl.llm.policy.POLICIES`; judges:
`kwrl.grading.judges.JUDGES`) and says which of its kinds a URL means: for a policy the
token-in/token-out `completions` client, for a judge the `openai` chat client. A flag or a TOML
line therefore names a judge the way it names a policy.

Specs are built and taken apart here only: `make_spec(kind, target)` and `live_spec(handle)`
write them, `split_spec`, `split_url` and `served_name` read them. The rest of kwrl passes the
strings through (a policy client reports its own tokenizer, `PolicyClient.tokenizer`).

Non-obvious choice: this module imports nothing heavy (no torch, no litellm), so the grader that
starts once per trial inside the sandbox parses its judge spec for free.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

from kwrl.errors import ConfigError

URL_PREFIXES = ("http://", "https://")
DEFAULT_SERVED_NAME = "default"


def is_url(spec: str) -> bool:
    return spec.startswith(URL_PREFIXES)


def split_spec(spec: str, *, kinds: Iterable[str], url_kind: str, field: str) -> tuple[str, str]:
    """`spec` -> (kind, target): the registry key and what that entry is built on.

    A URL is `url_kind` with the whole URL as target; `KIND:TARGET` is KIND when KIND is one of
    `kinds`. `field` names the setting in error messages (`policy.model`, `judge`).
    """
    kinds = tuple(kinds)
    if is_url(spec):
        return url_kind, spec
    head, sep, target = spec.partition(":")
    if sep and head in kinds:
        if not target:
            raise ConfigError(f"{field} {spec!r}: nothing after {head + ':'!r}")
        return head, target
    forms = ", ".join(f"{k}:..." for k in kinds if k != url_kind)
    raise ConfigError(f"{field} {spec!r}: expected http(s)://HOST:PORT/v1#NAME or one of {forms}")


def split_url(target: str, *, field: str) -> tuple[str, str]:
    """`http://HOST:PORT/v1/#NAME` -> (`http://HOST:PORT/v1`, NAME); NAME `default` when absent."""
    url, _, name = target.partition("#")
    if not is_url(url) or not urlsplit(url).netloc:
        raise ConfigError(f"{field} {target!r}: expected http(s)://HOST:PORT/v1#NAME")
    return url.rstrip("/"), name or DEFAULT_SERVED_NAME


LIVE = "live"
"""The policy kind of an engine registered in this process under a handle
(`kwrl.llm.engines.register_engine`): how a run lends one engine to all its trials."""


def make_spec(kind: str, target: str) -> str:
    """`KIND:TARGET`, e.g. `make_spec("vllm", "/runs/x/policy")` -> `vllm:/runs/x/policy`."""
    if not kind or is_url(kind) or ":" in kind:
        raise ConfigError(f"spec kind {kind!r}: expected a registry name such as engine or vllm")
    return f"{kind}:{target}"


def live_spec(handle: str) -> str:
    """The spec of the engine registered under `handle` in this process (`live:HANDLE`)."""
    return make_spec(LIVE, handle)


def served_name(spec: str) -> str | None:
    """The model name a URL spec writes after `#` (`http://HOST:PORT/v1#smollm2-135m` ->
    `smollm2-135m`); None for a URL without one (the server's `default`) or any other spec."""
    if not is_url(spec):
        return None
    return spec.partition("#")[2] or None


DEFAULT_JUDGE = "litellm:gemini/gemini-2.5-flash"
"""The judge a grader asks when no spec is set but a Gemini key is (the seed's judge)."""

PROVIDER_HOSTS: dict[str, str] = {
    "openai": "api.openai.com",
    "anthropic": "api.anthropic.com",
    "gemini": "generativelanguage.googleapis.com",
    "mistral": "api.mistral.ai",
    "groq": "api.groq.com",
    "deepseek": "api.deepseek.com",
    "together_ai": "api.together.xyz",
    "fireworks_ai": "api.fireworks.ai",
    "openrouter": "openrouter.ai",
    "xai": "api.x.ai",
    "cohere": "api.cohere.com",
}
"""The API host of each litellm provider a judge spec may name without an `api_base` (a provider
not listed needs `KWRL_JUDGE_API_BASE`, or its hosts in `KWRL_JUDGE_EGRESS`)."""


def url_endpoint(url: str) -> tuple[str, int]:
    """`http(s)://HOST[:PORT]/...` -> (HOST, PORT), the scheme's port when none is written."""
    parts = urlsplit(url)
    if not parts.hostname:
        raise ConfigError(f"{url!r}: expected http(s)://HOST[:PORT]/...")
    return parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)


def judge_endpoint(spec: str, api_base: str | None = None) -> tuple[str, int] | None:
    """The (host, port) a judge named by `spec` connects to, or None when unknown here.

    A URL spec is its own endpoint; a litellm spec (`litellm:PROVIDER/MODEL`, or the older bare
    `PROVIDER/MODEL`) connects to `api_base` when set, else its provider's host on 443
    (`PROVIDER_HOSTS`; a bare model name is OpenAI's, as litellm routes it).
    """
    if is_url(spec):
        return url_endpoint(spec.partition("#")[0])
    if api_base:
        return url_endpoint(api_base)
    target = spec.removeprefix("litellm:")
    provider, sep, _ = target.partition("/")
    host = PROVIDER_HOSTS.get(provider if sep else "openai")
    return None if host is None else (host, 443)
