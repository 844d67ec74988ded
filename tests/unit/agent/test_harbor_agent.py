"""KwrlAgent's wiring: harbor import path, settings from kwargs, policy/tokenizer/MCP resolution,
and the ATIF trajectory built from a run."""

from __future__ import annotations

from pathlib import Path

import pytest
from harbor.agents.factory import AgentFactory
from harbor.models.task.config import MCPServerConfig
from harbor.models.trajectories import Trajectory

from kwrl.agent.atif import build_trajectory
from kwrl.agent.harbor_agent import KwrlAgent
from kwrl.agent.loop import AgentRun, StopReason, ToolStat, TurnStats
from kwrl.agent.parsers import ParsedToolCall
from kwrl.errors import AgentError, ConfigError


def test_harbor_builds_the_agent_by_import_path_with_loop_settings(tmp_path: Path) -> None:
    agent = AgentFactory.create_agent_from_import_path(
        "kwrl.agent:KwrlAgent",
        logs_dir=tmp_path,
        model_name="http://127.0.0.1:8000/v1#smollm2-135m",
        max_steps=250,
        tools=["filesystem_*"],
    )
    assert isinstance(agent, KwrlAgent)
    assert agent.config.max_steps == 250 and agent.config.tools == ["filesystem_*"]
    assert KwrlAgent.SUPPORTS_ATIF


def test_settings_are_validated_and_a_policy_is_required(tmp_path: Path) -> None:
    with pytest.raises(AgentError, match="needs a policy"):
        KwrlAgent(tmp_path)
    with pytest.raises(ConfigError, match=r"KwrlAgent kwargs: invalid config\n.*agent\.max_steps"):
        KwrlAgent(tmp_path, "engine:smollm2-135m", max_steps=0)


def test_tokenizer_is_the_named_one_else_the_policys_own_else_the_served_names(
    tmp_path: Path, tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kwrl.agent.tokenizer import load_tokenizer
    from kwrl.llm.engines import EngineConfig
    from kwrl.llm.policy import PolicyConfig, build_policy

    monkeypatch.delenv("KWRL_TOKENIZER", raising=False)
    folder = str(tiny_model_dir)
    engine = build_policy(PolicyConfig(model=f"engine:{folder}", engine=EngineConfig(threads=1)))
    held = engine.tokenizer()
    assert held is not None and held is not load_tokenizer(folder)
    # an in-process engine's tokenizer is used as is, never loaded a second time
    assert KwrlAgent(tmp_path, f"engine:{folder}")._tokenizer(engine) is held
    assert KwrlAgent(tmp_path, "live:x", tokenizer=folder)._tokenizer(engine) is load_tokenizer(
        folder
    )
    url = f"http://h:1/v1#{folder}"
    assert KwrlAgent(tmp_path, url)._tokenizer(build_policy(PolicyConfig(model=url))) is (
        load_tokenizer(folder)
    )
    nameless = build_policy(PolicyConfig(model="http://h:1/v1"))
    assert nameless.tokenizer() is None
    monkeypatch.setenv("KWRL_TOKENIZER", folder)
    assert KwrlAgent(tmp_path, "http://h:1/v1")._tokenizer(nameless) is load_tokenizer(folder)
    monkeypatch.delenv("KWRL_TOKENIZER")
    with pytest.raises(AgentError, match="name its tokenizer"):
        KwrlAgent(tmp_path, "http://h:1/v1")._tokenizer(nameless)


def test_gateway_url_prefers_a_kwrl_environment_then_task_servers(tmp_path: Path) -> None:
    from kwrl.sandbox.conformance.testing import make_dataset, make_environment

    class Lookalike:  # not a kwrl.sandbox.contract.KwrlEnvironment: its attribute is not asked
        mcp_url = "http://127.0.0.1:8/mcp/"

    env = make_environment(make_dataset(tmp_path / "ds", 1)[0], tmp_path / "trial")
    env.mcp_url = "http://127.0.0.1:9/mcp/"
    server = MCPServerConfig(
        name="world", transport="streamable-http", url="http://127.0.0.1:7/mcp/"
    )
    agent = KwrlAgent(tmp_path, "engine:x", mcp_servers=[server], mcp_url="http://127.0.0.1:5/mcp/")
    assert agent._gateway_url(env) == "http://127.0.0.1:9/mcp/"
    assert agent._gateway_url(Lookalike()) == "http://127.0.0.1:7/mcp/"  # type: ignore[arg-type]
    assert agent._gateway_url(object()) == "http://127.0.0.1:7/mcp/"  # type: ignore[arg-type]
    assert (
        KwrlAgent(tmp_path, "engine:x", mcp_url="unix:///s.sock")._gateway_url(object())
        == "unix:///s.sock"
    )  # type: ignore[arg-type]
    with pytest.raises(AgentError, match="no MCP gateway"):
        KwrlAgent(tmp_path, "engine:x")._gateway_url(object())  # type: ignore[arg-type]


def test_atif_trajectory_of_a_run_validates() -> None:
    call = ParsedToolCall(id="call_0_0", name="filesystem_list_files", arguments={"path": "/"})
    messages = [
        {"role": "system", "content": "S"},
        {"role": "user", "content": "Task"},
        {"role": "assistant", "content": "<think>plan</think>Listing.\n<tool_call>...</tool_call>"},
        {"role": "tool", "tool_call_id": "call_0_0", "name": call.name, "content": "a.txt"},
        {"role": "assistant", "content": "<tool_call>{bad</tool_call>"},
        {"role": "user", "content": "could not be parsed"},
        {"role": "assistant", "content": "Done: a.txt"},
    ]
    turns = [
        TurnStats(0, 10, 5, 0.1, "stop", [ToolStat(call.name, True, "ok", 0.01)]),
        TurnStats(1, 20, 3, 0.1, "stop", malformed=True),
        TurnStats(2, 30, 4, 0.1, "stop"),
    ]
    run = AgentRun(messages, [], StopReason.FINAL, "Done: a.txt", turns, session_id="s1",
                   tool_calls=[[call], [], []])  # fmt: skip
    traj = Trajectory.model_validate(
        build_trajectory(run, agent_name="kwrl", agent_version="0", model_name="m").to_json_dict()
    )
    assert [s.source for s in traj.steps] == ["system", "user", "agent", "agent", "user", "agent"]
    first = traj.steps[2]
    assert first.reasoning_content == "plan" and first.tool_calls is not None
    assert (
        first.observation is not None and first.observation.results[0].source_call_id == "call_0_0"
    )
    assert traj.final_metrics is not None and traj.final_metrics.total_prompt_tokens == 60


def test_settings_then_a_toml_under_them_then_flat_kwargs_over_them(tmp_path: Path) -> None:
    """`settings` (what kwrl's runs hand it) over an `agent_config` TOML, a harbor command
    line's flat kwargs over both: one validation, a bad value in the file names the file."""
    toml = tmp_path / "agent.toml"
    toml.write_text("max_steps = 7\ntemperature = 0.3\n")
    settings = {"agent": {"temperature": 0.5}, "tokenizer": "tok", "policy": {"timeout_s": 5.0}}
    agent = KwrlAgent(
        tmp_path, "live:h", settings=settings, agent_config=str(toml), tools=["chat_*"]
    )
    assert (agent.config.max_steps, agent.config.temperature) == (7, 0.5)
    assert agent.config.tools == ["chat_*"] and agent.tokenizer_spec == "tok"
    assert agent.settings.policy.for_model("live:h").timeout_s == 5.0
    toml.write_text("max_steps = 0\n")
    with pytest.raises(ConfigError, match=r"agent\.toml"):
        KwrlAgent(tmp_path, "live:h", agent_config=str(toml))
