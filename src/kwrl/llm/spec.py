"""Model specs: the one string grammar that names a policy or a judge.

    http(s)://HOST:PORT/v1#NAME   an OpenAI-compatible server; NAME is the served model name
                                  (`default` when absent; `kwrl serve` answers to any name)
    KIND:TARGET                   a registry entry by name: `litellm:gemini/gemini-2.5-flash`,
                                  `engine:smollm2-135m`, ...

Each family keeps its own registry (policies: `kwrl.llm.policy.POLICIES`; judges:
`kwrl.grading.judges.JUDGES`) and says which of its kinds a URL means: for a policy the
token-in/token-out `completions` client, for a judge the `openai` chat client. A flag or a TOML
line therefore names a judge the way it names a policy.

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
