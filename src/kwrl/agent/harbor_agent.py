"""`KwrlAgent`: the agent loop as a harbor agent (`--agent-import-path kwrl.agent:KwrlAgent`).

Inputs, in harbor's terms:
- policy: the `model_name` harbor passes (`--model`), a `kwrl.llm` spec: `http://HOST:PORT/v1#NAME`
  (TITO over `/v1/completions`, e.g. `kwrl serve`), `engine:MODEL` or `litellm:PROVIDER/MODEL`;
  or the `policy` kwarg. `settings.policy` (`kwrl.llm.policy.PolicySettings`) tunes the client.
- settings: kwarg `settings`, a `kwrl.agent.config.KwrlAgentSettings` as JSON (agent loop, policy
  client, tokenizer): what kwrl's runs hand it, validated once here. A harbor command line may
  set the same flat instead: any `AgentConfig` field (`max_steps=250`), `agent_config` (a TOML
  path of them), `policy_config` (a dict of policy settings), `tokenizer`; those go over `settings`.
- tokenizer (token policies): `settings.tokenizer` or env `KWRL_TOKENIZER` (a folder, a packaged
  name or a hub id); by default the policy's own (an in-process engine's: `engine:`, `vllm:`,
  `live:`, `PolicyClient.tokenizer`), else the served name of a `...#smollm2-135m` spec.
- tools: the environment's `mcp_url` (a `kwrl.sandbox.contract.KwrlEnvironment`), else the first
  HTTP MCP server harbor hands over (`mcp_servers`, task.toml), else kwarg `mcp_url` / env
  `KWRL_AGENT_MCP_URL`.

Outputs: `/logs/agent/final_answer.txt` in the environment (docs/contracts.md); an ATIF
`trajectory.json` and `tito_debug.txt` in the agent logs dir; `context.metadata` with the TITO
arrays, stop reason, per-turn stats and the drift report (`kwrl.agent.meta.AgentMeta`; keys in
docs/contracts.md); token counts.
Metadata is filled in a `finally`, so a trial cut by harbor's agent timeout keeps what was done:
the trajectory so far (trained with reward 0 unless the policy endpoint ran out the clock) and
`cut_off`, what the run was waiting on when cut (`kwrl.rollout.failures.policy_was_slow`).
A policy or MCP infrastructure failure is raised after that (the trial is an error and is masked;
a gateway that cannot be reached before the first turn is one, `tool_error`);
a full context window or a cut last turn is not (the trial is graded, reward usually 0), nor is a
gateway that agent code killed or stopped (`tools_lost`: kwrl's LocalEnvironment tells it from an
infrastructure failure, `gateway_fate`; the trial is graded on the world as it stands).

harbor 0.25 hands MCP servers only to agents declaring the capability; declared when available.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from harbor.agents.base import BaseAgent
from harbor.environments.base import BaseEnvironment
from harbor.models.agent.context import AgentContext

from kwrl.agent.config import ENV_TOKENIZER, AgentConfig, agent_settings
from kwrl.agent.drift import measure_drift
from kwrl.agent.loop import AgentLoop, AgentRun, StopReason
from kwrl.agent.meta import DriftValue
from kwrl.errors import AgentError, WorldError
from kwrl.io import write_json, write_text
from kwrl.llm.base import PolicyClient
from kwrl.sandbox.contract import KwrlEnvironment

try:  # harbor >= 0.25
    from harbor.agents.capabilities import (  # type: ignore[import-not-found]
        AgentCapabilities as _Capabilities,
    )
except ImportError:  # harbor 0.21: every agent receives MCP servers
    _Capabilities = None

ENV_MCP_URL = "KWRL_AGENT_MCP_URL"
FINAL_ANSWER_PATH = "/logs/agent/final_answer.txt"
_INFRA = (StopReason.POLICY_ERROR, StopReason.TOOL_ERROR)


class KwrlAgent(BaseAgent):
    """kwrl's MCP tool-calling agent with token-in/token-out recording (see the module doc)."""

    if _Capabilities is not None:
        capabilities = _Capabilities(atif=True, mcp_servers=True)
    else:
        SUPPORTS_ATIF = True

    def __init__(
        self,
        logs_dir: Path,
        model_name: str | None = None,
        *args: Any,
        settings: dict[str, Any] | None = None,
        policy: str | None = None,
        policy_config: dict[str, Any] | None = None,
        tokenizer: str | None = None,
        mcp_url: str | None = None,
        agent_config: str | None = None,
        **kwargs: Any,
    ) -> None:
        flat = {k: kwargs.pop(k) for k in list(kwargs) if k in AgentConfig.model_fields}
        flat |= {"policy_config": policy_config, "tokenizer": tokenizer}
        super().__init__(logs_dir, model_name, *args, **kwargs)
        self.settings = agent_settings(settings, flat, Path(agent_config) if agent_config else None)
        self.config = self.settings.agent
        self.policy_spec = policy or model_name
        if not self.policy_spec:
            raise AgentError("KwrlAgent needs a policy: harbor --model SPEC or kwarg policy=SPEC")
        self.tokenizer_spec = self.settings.tokenizer or os.environ.get(ENV_TOKENIZER)
        self.mcp_url = mcp_url
        self.run_result: AgentRun | None = None

    @staticmethod
    def name() -> str:
        return "kwrl"

    def version(self) -> str | None:
        from importlib.metadata import version

        return version("kwrl")

    async def setup(self, environment: BaseEnvironment) -> None:
        """Nothing to install: the agent runs on the host and reaches the sandbox over MCP."""

    # ------------------------------------------------------------------ resolution

    def _gateway_url(self, environment: BaseEnvironment) -> str:
        if isinstance(environment, KwrlEnvironment) and environment.mcp_url:
            return environment.mcp_url
        for server in self.mcp_servers:
            if server.url and server.transport in ("streamable-http", "http", "sse"):
                return server.url
        url = self.mcp_url or os.environ.get(ENV_MCP_URL)
        if not url:
            raise AgentError(
                "no MCP gateway: the environment has no mcp_url, the task lists no MCP server, "
                f"and neither kwarg mcp_url nor env {ENV_MCP_URL} is set"
            )
        return url

    def _tokenizer(self, policy: PolicyClient) -> Any:
        """The token policy's tokenizer: the one named (kwarg, env), else the one the policy
        samples with, else the one a URL spec's served name names."""
        from kwrl.agent.tokenizer import load_tokenizer
        from kwrl.llm.spec import served_name

        if self.tokenizer_spec:
            return load_tokenizer(self.tokenizer_spec)
        held = policy.tokenizer()
        if held is not None:
            return held
        name = served_name(str(self.policy_spec))
        if name is None:
            raise AgentError(
                f"policy {self.policy_spec!r} samples tokens: name its tokenizer (kwarg "
                f"tokenizer= or env {ENV_TOKENIZER}), or use a spec ending in #MODEL"
            )
        return load_tokenizer(name)

    def _build_policy(self) -> PolicyClient:
        from kwrl.llm.policy import build_policy

        return build_policy(self.settings.policy.for_model(str(self.policy_spec)))

    # ------------------------------------------------------------------ run

    async def run(
        self, instruction: str, environment: BaseEnvironment, context: AgentContext
    ) -> None:
        from kwrl.worlds.client import GatewayClient

        url = self._gateway_url(environment)
        policy = self._build_policy()
        tokenizer = self._tokenizer(policy) if policy.supports_tokens else None
        session_id = f"{self.session_id or 'kwrl'}-{uuid.uuid4().hex[:8]}"
        loop: AgentLoop | None = None
        started = time.time()
        is_kwrl = isinstance(environment, KwrlEnvironment)  # the contract's gateway_fate
        tools_check = environment.gateway_fate if is_kwrl else None
        try:
            async with GatewayClient(url, timeout_s=self.config.tool_call_timeout_s + 30) as gw:
                loop = AgentLoop(
                    policy,
                    gw,
                    self.config,
                    tokenizer=tokenizer,
                    session_id=session_id,
                    tools_check=tools_check,
                )
                self.run_result = await loop.run(instruction)
        except Exception as e:
            if (loop is None or loop.run_ is None) and _transport_failure(e):
                # the gateway could not be reached before the policy acted (no agent code has
                # run): infrastructure, not a crash of the agent (was `agent`: never retried)
                raise AgentError(
                    f"agent stopped on {StopReason.TOOL_ERROR}: the world gateway could not be "
                    f"reached before the first turn: {type(e).__name__}: {e}"
                ) from e
            # The MCP SDK ends its session's task group when the transport fails (the gateway
            # died), cancelling the loop mid-call; what escapes is the group's error.
            if loop is None or loop.run_ is None or not _transport_failure(e):
                raise
            self.run_result = _session_lost(loop.run_, e, tools_check)
        finally:
            await policy.aclose()
            run = self.run_result or (loop.run_ if loop is not None else None)
            if run is not None:
                self._record(run, context, time.time() - started)
                await self._write_final_answer(run, environment)
        run = self.run_result
        if run is not None and run.stop_reason in _INFRA:
            raise AgentError(f"agent stopped on {run.stop_reason}: {run.error}")

    def _record(self, run: AgentRun, context: AgentContext, elapsed_s: float) -> None:
        context.n_input_tokens = run.n_input_tokens
        context.n_output_tokens = run.n_output_tokens
        drift: dict[str, DriftValue] | None = None
        if run.tito is not None:
            try:
                drift = measure_drift(run.tito, run.messages).to_dict()
            except AgentError as e:
                drift = {"error": str(e)}
            write_text(self.logs_dir / "tito_debug.txt", run.tito.debug_text())
        context.metadata = run.to_meta(elapsed_s, drift).to_metadata()
        from kwrl.agent.atif import build_trajectory

        traj = build_trajectory(
            run,
            agent_name=self.name(),
            agent_version=self.version() or "unknown",
            model_name=self.policy_spec,
        )
        write_json(self.logs_dir / "trajectory.json", traj.to_json_dict())

    async def _write_final_answer(self, run: AgentRun, environment: BaseEnvironment) -> None:
        """The run's final answer at /logs/agent/final_answer.txt, whatever agent code left at
        that path or did to /logs/agent (a directory or a link there, `chmod 0 /logs/agent`):
        those made writing it through the sandbox fail, an infrastructure error masking the group.

        Where harbor's agent logs dir is the host dir the verifier reads (`capabilities.mounted`:
        kwrl's LocalEnvironment copies the agent's own files in beside it, never over what kwrl
        wrote), it is written there on the host, replacing whatever is there. Elsewhere it is
        uploaded after whatever is at the path is removed (those environments run commands with
        the root user's capabilities)."""
        if environment.capabilities.mounted:
            dest = self.logs_dir / Path(FINAL_ANSWER_PATH).name
            if dest.is_dir() and not dest.is_symlink():
                shutil.rmtree(dest)
            write_text(dest, run.final_answer)  # a temp file renamed over it: links are replaced
            return
        await environment.exec(f"rm -rf {FINAL_ANSWER_PATH}", user="root")
        with tempfile.TemporaryDirectory(prefix="kwrl-answer-") as tmp:
            path = Path(tmp) / "final_answer.txt"
            path.write_text(run.final_answer, encoding="utf-8")
            await environment.upload_file(path, FINAL_ANSWER_PATH)


def _transport_failure(error: BaseException) -> bool:
    """Whether `error` (or every error of its group) is the MCP connection failing, not a bug."""
    import anyio
    import httpx2
    from mcp.shared.exceptions import MCPError

    if isinstance(error, BaseExceptionGroup):
        return all(_transport_failure(x) for x in error.exceptions)
    kinds = (httpx2.TransportError, anyio.ClosedResourceError, anyio.BrokenResourceError)
    return isinstance(error, (*kinds, MCPError, ConnectionError, WorldError))


def _session_lost(run: AgentRun, error: Exception, tools_check: Any) -> AgentRun:
    """`run`, cut by a failed MCP session, ended as `tools_lost` when `tools_check` says agent code
    ended the gateway, else as `tool_error` (infrastructure)."""
    leaves = error.exceptions if isinstance(error, BaseExceptionGroup) else (error,)
    why = "; ".join(f"{type(x).__name__}: {x}" for x in leaves)[:1000]
    fate = tools_check() if callable(tools_check) else None
    run.stop_reason = StopReason.TOOLS_LOST if fate else StopReason.TOOL_ERROR
    run.error = f"MCP session failed: {why}" + (f" ({fate})" if fate else "")
    return run
