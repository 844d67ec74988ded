"""LLM judges: the `JUDGES` registry, `build_judge(config)`, and how a judge spec reaches a trial.

A judge is named by a spec in the grammar policies use (`kwrl.llm.spec`):

- `http(s)://HOST:PORT/v1#NAME`: an OpenAI-compatible chat endpoint (`openai`, `openai_http.py`);
- `litellm:PROVIDER/MODEL`: any litellm model (`litellm`, `litellm.py`).

A trial's grader runs in the sandbox's verifier phase and reads its judge from the environment
harbor hands it (`KWRL_JUDGE`, `KWRL_JUDGE_<FIELD>`, the key variable); `judge_env(spec)` builds
that environment on the host, for `kwrl trial run/rollout/eval --judge`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from kwrl.grading.judges.base import (
    DEFAULT_MODEL,
    ENV_SPEC,
    ContextOverflowError,
    Judge,
    JudgeConfig,
    JudgeTimeoutError,
    MalformedVerdictError,
    NoVerdictError,
    RefusedError,
    TransientJudgeError,
    Verdict,
    parse_verdict,
)
from kwrl.grading.judges.litellm import LiteLLMJudge
from kwrl.grading.judges.openai_http import OpenAIHTTPJudge
from kwrl.grading.judges.prompt import JudgeInputs, build_prompt
from kwrl.llm.spec import split_spec

__all__ = [
    "DEFAULT_MODEL",
    "JUDGES",
    "ContextOverflowError",
    "Judge",
    "JudgeConfig",
    "JudgeInputs",
    "JudgeTimeoutError",
    "MalformedVerdictError",
    "NoVerdictError",
    "RefusedError",
    "TransientJudgeError",
    "Verdict",
    "build_judge",
    "build_prompt",
    "judge_env",
    "parse_verdict",
    "split_judge_spec",
]

JUDGES: dict[str, type[Judge]] = {
    OpenAIHTTPJudge.kind: OpenAIHTTPJudge,
    LiteLLMJudge.kind: LiteLLMJudge,
}
"""Judge kinds by name; `build_judge` looks a spec's kind up here.

To add a judge: write `judges/<name>.py` with a `Judge` subclass that sets `kind`, implements
`_complete(messages)` (raise `TransientJudgeError` for what a retry may fix, `JudgeError` for what
it cannot; classify a 4xx with `base.client_error`, so a prompt over the context or a
content-filter refusal reaches the grader as `ContextOverflowError` or `RefusedError`) and `key_env(target)` (the variables holding its API key, so trials pass them to their
verifier); register it here. `KIND:TARGET` then names it in `--judge`, `KWRL_JUDGE` and configs, and
`judge_env` carries it and its key variables into a trial's verifier phase; nothing else in the
grader changes. Add it to README's judge specs and docs/contracts.md. Tests:
tests/unit/grading/judges/test_judge_registry.py (`test_a_registered_judge_is_built_by_its_kind`),
test_judge_base.py for the verdict contract, tests/integration/test_judge_trial.py through real
trials. docs/extending.md lists every extension point."""

URL_KIND = OpenAIHTTPJudge.kind
_HOST_ONLY = ("model", "cache_dir")


def split_judge_spec(spec: str) -> tuple[str, str]:
    """(kind, target) of a judge spec (the module doc's forms); any other is a ConfigError."""
    kinds = [k for k in JUDGES if k != URL_KIND]  # a URL names its kind by being one
    return split_spec(spec, kinds=kinds, url_kind=URL_KIND, field="judge")


def build_judge(config: JudgeConfig) -> Judge:
    """The judge `config.model` names (module doc for the specs)."""
    kind, target = split_judge_spec(config.model)
    return JUDGES[kind](config, target)


def judge_env(spec: str, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The verifier environment that carries judge `spec` into a trial (harbor's `verifier.env`).

    - `KWRL_JUDGE`: the spec;
    - every `KWRL_JUDGE_<FIELD>` of a `JudgeConfig` field set in `environ` (default: this
      process's), except the cache dir (`KWRL_JUDGE_CACHE`, `KWRL_JUDGE_CACHE_DIR`: host paths the
      sandbox does not see);
    - the judge's key variables (`KWRL_JUDGE_API_KEY_ENV`'s, else the kind's defaults, e.g.
      GEMINI_API_KEY) that are set, as harbor templates `${VAR}`: harbor resolves them from the
      host environment when the verifier starts, so no key is written into a trial's config.json.
    """
    env = os.environ if environ is None else environ
    kind, target = split_judge_spec(spec)
    out = {ENV_SPEC: spec}
    settings = [f"{ENV_SPEC}_{f.upper()}" for f in JudgeConfig.model_fields if f not in _HOST_ONLY]
    out |= {k: env[k] for k in settings if env.get(k)}
    named = env.get(f"{ENV_SPEC}_API_KEY_ENV")
    for var in (named,) if named else JUDGES[kind].key_env(target):
        if env.get(var):
            out[var] = "${" + var + "}"
    return out
