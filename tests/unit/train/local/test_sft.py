"""Gold trajectories for the SFT warm start: the real agent loop over the real gateway, the real
SmolLM2 tokenizer, and GoldPolicy in place of the model."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from kwrl.agent.config import AgentConfig
from kwrl.train.smoke import SMOKE_TOOLS


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from kwrl.synth.generate import SynthConfig, generate

    out = tmp_path_factory.mktemp("synth") / "d"
    generate(SynthConfig(out=out, worlds=1, tasks_per_world=12, seed=3), progress=False)
    return out


@pytest.fixture(scope="module")
def tokenizer() -> object:
    from transformers import AutoTokenizer

    from kwrl.llm.packaged import ensure_model

    return AutoTokenizer.from_pretrained(ensure_model("smollm2-135m"))


def test_gold_trajectory_masks_only_the_policy_turns(dataset: Path, tokenizer: object) -> None:
    from kwrl.train.local.sft import gold_trajectory

    easy = [
        d
        for d in sorted((dataset / "tasks").iterdir())
        if json.loads((d / "archipelago.json").read_text()).get("difficulty") == "easy"
    ]
    task = easy[0]
    calls = json.loads((task / "solution" / "gold_calls.json").read_text())
    traj = asyncio.run(gold_trajectory(task, tokenizer, AgentConfig(tools=SMOKE_TOOLS)))
    assert traj is not None
    n = len(traj.response_ids)
    assert len(traj.loss_mask) == n == len(traj.logprobs)
    policy = [t for t, m in zip(traj.response_ids, traj.loss_mask, strict=True) if m]
    other = [t for t, m in zip(traj.response_ids, traj.loss_mask, strict=True) if not m]
    policy_text = tokenizer.decode(policy)  # type: ignore[attr-defined]
    other_text = tokenizer.decode(other)  # type: ignore[attr-defined]
    assert policy_text.count("<tool_call>") == len(calls)
    assert calls[0]["tool"] in policy_text
    golden = json.loads((task / "tests" / "golden_responses.json").read_text())[0]
    assert golden["golden_text_response"] in policy_text  # the final answer is trained
    assert "<tool_response>" in other_text and "<tool_response>" not in policy_text
    assert len(traj.prompt_ids) < 6000  # the tool subset keeps the prompt small


def test_tasks_without_gold_calls_give_no_trajectory(tmp_path: Path, tokenizer: object) -> None:
    from kwrl.train.local.sft import gold_trajectory

    (tmp_path / "instruction.md").write_text("x")
    assert asyncio.run(gold_trajectory(tmp_path, tokenizer, AgentConfig())) is None


def test_a_packed_batch_gives_the_one_at_a_time_loss_and_gradients(
    dataset: Path, tokenizer: object
) -> None:
    """Real gold trajectories of different tasks share their system prompt and tool list; the
    packed batch runs those once and still gives every gradient of the one-at-a-time batch."""
    import copy

    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from kwrl.train.batch import collate
    from kwrl.train.local import prefix
    from kwrl.train.local.sft import _accumulate, gold_trajectory

    easy = [
        d
        for d in sorted((dataset / "tasks").iterdir())
        if json.loads((d / "archipelago.json").read_text()).get("difficulty") == "easy"
    ][:3]
    trajs = [
        asyncio.run(gold_trajectory(d, tokenizer, AgentConfig(tools=SMOKE_TOOLS))) for d in easy
    ]
    chunk = [t for t in trajs if t is not None]
    assert len(chunk) == 3
    batch = collate(chunk, [0.0] * 3)
    plan = prefix.plan(batch.input_ids_B_L, batch.attention_mask_B_L, ["sft"] * 3)
    assert plan is not None
    lens = [len(t.prompt_ids) + len(t.response_ids) for t in chunk]
    assert plan.tokens < sum(lens) - 2 * 200  # the shared system prompt + tools: >200 tokens

    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64,  # type: ignore[arg-type]
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        max_position_embeddings=4096, attn_implementation="sdpa",
    )  # fmt: skip
    one = LlamaForCausalLM(cfg)
    packed = copy.deepcopy(one)
    prefix.register()
    packed.config._attn_implementation = prefix.ATTENTION
    seen: list[tuple[int, ...]] = []
    packed.model.embed_tokens.register_forward_hook(lambda m, i, o: seen.append(tuple(i[0].shape)))
    nll_one = _accumulate(one, chunk, 0, share=False)
    nll_packed = _accumulate(packed, chunk, 0, share=True)
    assert seen == [tuple(plan.input_ids_G_Lp.shape)]  # one forward, over the packed row
    assert nll_packed == pytest.approx(nll_one, rel=1e-5)
    assert nll_one > 1.0  # a random model: the loss is real, not a masked-out zero
    for (name, a), b in zip(one.named_parameters(), packed.parameters(), strict=True):
        assert a.grad is not None and b.grad is not None, name
        torch.testing.assert_close(b.grad, a.grad, rtol=1e-4, atol=1e-6, msg=name)


def test_discovery_lists_the_folders_and_searches_the_mail_a_gold_solution_skips() -> None:
    from kwrl.train.local.sft import with_discovery

    instruction = (
        'The client emailed me (subject "Question on Capex (Project Golden Viper)"). Reply with '
        "the figure from the current workbook."
    )
    path = "/Deals/Golden Viper/Model/Verdant Corp. - Operating Model.xlsx"
    calls = [
        {"tool": "mail_read_mail", "arguments": {"mail_id": "<x.3@p.example.com>"}},
        {"tool": "excel_read_tab", "arguments": {"file_path": path, "tab_index": 0}},
        {"tool": "mail_reply_mail", "arguments": {"original_mail_id": "<x.3@p.example.com>"}},
    ]
    got = with_discovery(instruction, calls)
    assert [c["tool"] for c in got] == [
        "mail_search_mail", "mail_read_mail", "filesystem_list_files", "filesystem_list_files",
        "excel_read_tab", "mail_reply_mail",
    ]  # fmt: skip
    assert got[0]["arguments"] == {"subject": "Question on Capex (Project Golden Viper)"}
    assert [c["arguments"]["path"] for c in got[2:4]] == [
        "/Deals/Golden Viper",
        path.rsplit("/", 1)[0],
    ]
    assert [c for c in got if c in calls] == calls  # the gold calls, unchanged and in order


def test_discovery_adds_nothing_the_instruction_or_the_solution_already_gives() -> None:
    from kwrl.train.local.sft import with_discovery

    path = "/Deals/Golden Viper/Golden Viper - IC Memo.docx"
    calls = [
        {"tool": "mail_search_mail", "arguments": {"subject": "Project Winter Tiger"}},
        {"tool": "mail_read_mail", "arguments": {"mail_id": "<a.1@p.example.com>"}},
        {"tool": "word_read_document_content", "arguments": {"file_path": path}},
    ]
    assert with_discovery(f"Edit {path} for Project Winter Tiger.", calls) == calls


def test_a_discovered_gold_trajectory_replays_on_the_real_world(
    dataset: Path, tokenizer: object
) -> None:
    from kwrl.train.local.sft import gold_trajectory, with_discovery

    def unknown_path(task: Path) -> str | None:
        gold = json.loads((task / "solution" / "gold_calls.json").read_text())
        found = with_discovery((task / "instruction.md").read_text(), gold)
        listed = [c for c in found if c["tool"] == "filesystem_list_files"]
        return next(
            (str(c["arguments"]["file_path"]) for c in gold if "file_path" in c["arguments"]),
            None,
        ) if listed else None  # fmt: skip

    task = next(d for d in sorted((dataset / "tasks").iterdir()) if unknown_path(d))
    name = str(unknown_path(task))
    agent = AgentConfig(tools=[*SMOKE_TOOLS, "excel_read_tab", "word_read_document_content"])
    plain = asyncio.run(gold_trajectory(task, tokenizer, agent))
    found = asyncio.run(gold_trajectory(task, tokenizer, agent, discover=True))
    assert plain is not None and found is not None
    text = tokenizer.decode(found.response_ids)  # type: ignore[attr-defined]
    listing, read = text.index("filesystem_list_files"), text.index(name.rsplit("/", 1)[1])
    assert listing < read  # the file's name came back from a listing before the read names it
    assert len(found.response_ids) > len(plain.response_ids)
