"""SFT warm start from oracle trajectories of generated tasks (`kwrl train sft`).

A small model does not follow the tool-call format before it has seen it, so RL from scratch
earns no reward. The warm start turns each generated task's gold solution into a real agent
trajectory: the agent loop (kwrl.agent) runs against the real world gateway (the composed MCP
server over a private copy of the world, through an in-memory MCP client), with `GoldPolicy`
in place of the model. GoldPolicy emits the gold tool calls in the agent's tool-call format and
then the gold answer, as token ids from the real tokenizer; tool results are real. The
resulting TITO trajectories (loss mask 1 on the policy's turns only) are exactly what RL
trajectories look like, and SFT maximises the likelihood of the masked tokens.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import shutil
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from typing import Any

import torch
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from kwrl.agent.config import AgentConfig
from kwrl.config import save_config
from kwrl.errors import TrainError
from kwrl.io import write_json
from kwrl.llm.base import Completion, FinishReason, PolicyClient, SamplingParams
from kwrl.llm.formats import get_format
from kwrl.tasks.taskdir import task_dirs
from kwrl.train.batch import Trajectory, collate
from kwrl.train.local import prefix as prefix_pack
from kwrl.train.local.checkpoint import TrainerState, save_checkpoint
from kwrl.train.local.config import SFTConfig
from kwrl.train.local.learner import on_device, token_logprobs
from kwrl.train.local.memory import release_free_memory


class GoldPolicy(PolicyClient):
    """Replays a gold solution as policy turns: one tool call a turn, written in tool-call format
    `fmt` (the agent's `tool_call_parser`, `kwrl.llm.formats`), then the answer."""

    supports_tokens = True

    def __init__(
        self, tokenizer: Any, calls: list[dict[str, Any]], answer: str, fmt: str = "hermes"
    ) -> None:
        self._tokenizer = tokenizer
        render = get_format(fmt).render_call
        self.turns = [render(c["tool"], c["arguments"]) for c in calls] + [answer]
        end = tokenizer.convert_tokens_to_ids("<|im_end|>")
        self.end_id = (
            end
            if isinstance(end, int) and end != tokenizer.unk_token_id
            else tokenizer.eos_token_id
        )

    def tokenizer(self) -> Any:
        return self._tokenizer

    async def complete(
        self, prompt_ids: list[int], params: SamplingParams, *, session_id: str | None = None
    ) -> Completion:
        text = self.turns.pop(0) if self.turns else ""
        ids = [*self._tokenizer.encode(text, add_special_tokens=False), self.end_id]
        return Completion(
            text=text, token_ids=ids, logprobs=[0.0] * len(ids), finish_reason=FinishReason.STOP
        )

    async def chat(
        self, messages: list[dict[str, Any]], params: SamplingParams, **_: Any
    ) -> Completion:
        raise NotImplementedError("GoldPolicy replays token turns only")


class _InMemoryTools:
    """The ToolSession protocol over a fastmcp in-memory client."""

    def __init__(self, client: Any) -> None:
        self.client = client

    async def list_tools(self) -> Any:
        return await self.client.list_tools()

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        return await self.client.call_tool_mcp(name, arguments)


PATH_ARGS = ("file_path", "path")
MAIL_ID_ARGS = ("mail_id", "original_mail_id")
_SUBJECT = re.compile(r'subject "([^"]+)"', re.IGNORECASE)
_PROJECT = re.compile(r"\b(?:Project|Matter) [A-Z][\w-]*(?: [A-Z][\w-]*)*")


def with_discovery(instruction: str, calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The gold calls with the discovery an agent needs before them (`SFTConfig.discover`).

    Before a call naming a file whose path the instruction does not hold, the folders it sits in
    are listed (`filesystem_list_files`), from the one below the top-level folder down to its
    own, each once. Before the first call naming a mail id that neither the instruction nor an
    earlier search call gives, the mail is searched by the subject the instruction quotes (else by
    the project it names); where it names neither, no search is added. The gold calls themselves
    are unchanged and in order."""
    out: list[dict[str, Any]] = []
    listed: set[str] = set()
    searched = any(c["tool"] == "mail_search_mail" for c in calls)
    for c in calls:
        args = c.get("arguments") or {}
        for key in PATH_ARGS:
            path = args.get(key)
            if not isinstance(path, str) or not path.startswith("/") or path in instruction:
                continue
            parts = PurePosixPath(path).parent.parts  # ("/", "Deals", "X", "Model")
            for depth in range(3, len(parts) + 1):
                folder = str(PurePosixPath(*parts[:depth]))
                if folder not in listed and folder not in instruction:
                    listed.add(folder)
                    out.append({"tool": "filesystem_list_files", "arguments": {"path": folder}})
        ids = [v for k in MAIL_ID_ARGS if isinstance(v := args.get(k), str)]
        if not searched and any(i not in instruction for i in ids):
            m = _SUBJECT.search(instruction) or _PROJECT.search(instruction)
            if m:
                subject = m.group(1) if m.re is _SUBJECT else m.group(0)
                out.append({"tool": "mail_search_mail", "arguments": {"subject": subject}})
            searched = True
        out.append(c)
    return out


def _world_copy(task: Any, dest: Path) -> None:
    for sub in ("filesystem", ".apps_data"):
        src = task.world_dir / sub
        if src.is_dir():
            shutil.copytree(src, dest / sub, symlinks=True)
        over = task.overlay_dir / sub
        if over.is_dir():
            shutil.copytree(over, dest / sub, symlinks=True, dirs_exist_ok=True)


async def gold_trajectory(
    task_dir: Path, tokenizer: Any, agent: AgentConfig, *, discover: bool = False
) -> Trajectory | None:
    """The TITO trajectory of a task's gold solution, or None when it has none; `discover`: with
    the discovery calls before it (`with_discovery`)."""
    from fastmcp import Client

    from kwrl.agent.loop import AgentLoop, StopReason
    from kwrl.tasks.layout import WorldRoots
    from kwrl.tasks.taskdir import load_task
    from kwrl.worlds.gateway import build_server

    calls_file = task_dir / "solution" / "gold_calls.json"
    if not calls_file.is_file():
        return None
    task = load_task(task_dir)
    calls = json.loads(calls_file.read_text())
    if discover:
        calls = with_discovery(task.instruction, calls)
    golden = task.golden or []
    answer = next(
        (g["golden_text_response"] for g in golden if g.get("golden_text_response")), "Done."
    )
    cfg = agent.model_copy(update={"max_steps": len(calls) + 2})
    with tempfile.TemporaryDirectory(prefix="kwrl-sft-") as tmp:
        root = Path(tmp)
        _world_copy(task, root)
        roots = WorldRoots.of_dir(root)
        roots.ensure()
        server, _, _ = await asyncio.to_thread(build_server, roots)
        async with Client(server) as client:
            loop = AgentLoop(
                GoldPolicy(tokenizer, calls, answer, agent.tool_call_parser),
                _InMemoryTools(client),
                cfg,
                tokenizer=tokenizer,
            )
            run = await loop.run(task.instruction)
    if run.tito is None or run.stop_reason is not StopReason.FINAL:
        raise TrainError(f"{task_dir}: gold replay ended with {run.stop_reason}: {run.error}")
    a = run.tito.arrays()
    return Trajectory(
        prompt_ids=list(a["prompt_token_ids"]),  # type: ignore[arg-type]
        response_ids=list(a["response_ids"]),  # type: ignore[arg-type]
        loss_mask=list(a["loss_mask"]),  # type: ignore[arg-type]
        logprobs=[0.0] * len(a["response_ids"]),
        reward=1.0,
        group_id=task_dir.name,
    )


def _accumulate(model: Any, chunk: list[Trajectory], pad: int, share: bool) -> float:
    """Backward of the batch's mean NLL per policy token; returns that NLL.

    With `share`, the batch is one packed micro-batch whose common leading tokens run once;
    otherwise (or when the trajectories share no prefix) one trajectory at a time.
    """
    n_tok = max(sum(sum(t.loss_mask) for t in chunk), 1)
    device = next(model.parameters()).device
    if share and len(chunk) > 1:
        b = collate(chunk, [0.0] * len(chunk), pad_id=pad)
        packed = prefix_pack.plan(b.input_ids_B_L, b.attention_mask_B_L, ["sft"] * len(chunk))
        if packed is not None:
            b, packed = on_device(b, device), on_device(packed, device)
            lp = token_logprobs(model, b, only_mask=True, prefix=packed)
            loss = -(lp * b.mask_B_L).sum() / n_tok
            loss.backward()
            return float(loss.detach())
    total = 0.0
    for t in chunk:
        b = on_device(collate([t], [0.0], pad_id=pad), device)
        lp = token_logprobs(model, b, only_mask=True)
        loss = -(lp * b.mask_B_L).sum() / n_tok
        loss.backward()
        total += float(loss.detach())
    return total


async def gold_trajectories(
    dirs: Iterable[Path],
    tokenizer: Any,
    agent: AgentConfig,
    max_len: int,
    *,
    discover: bool = False,
    skipped: list[str] | None = None,
) -> list[Trajectory]:
    """The gold trajectories of these task dirs that have one, up to `max_len` tokens each (the
    names of longer ones go into `skipped`)."""
    out = []
    for d in dirs:
        t = await gold_trajectory(d, tokenizer, agent, discover=discover)
        if t is None:
            continue
        if len(t.prompt_ids) + len(t.response_ids) <= max_len:
            out.append(t)
        elif skipped is not None:
            skipped.append(d.name)
    return out


def optimizer(model: Any, lr: float) -> torch.optim.Optimizer:
    """The warm start's AdamW."""
    return torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.98), weight_decay=0.01)


def step(
    model: Any, opt: torch.optim.Optimizer, chunk: list[Trajectory], pad: int, share: bool
) -> float:
    """One SFT step on a batch (backward, clip to norm 1, AdamW); returns its NLL per token."""
    loss = _accumulate(model, chunk, pad, share)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    opt.zero_grad(set_to_none=True)
    release_free_memory()
    return loss


def sft(cfg: SFTConfig, *, console: Console | None = None) -> Path:
    """Run the warm start; returns the final model folder."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from kwrl.llm.packaged import resolve_model

    console = console or Console()
    cfg.out.mkdir(parents=True, exist_ok=True)
    save_config(cfg, cfg.out / "config.toml")
    torch.manual_seed(cfg.seed)
    src = resolve_model(cfg.model)
    tokenizer = AutoTokenizer.from_pretrained(src)
    model = AutoModelForCausalLM.from_pretrained(src, dtype=torch.float32)
    model.to(cfg.device)  # type: ignore[arg-type]
    dirs = task_dirs(cfg.dataset, cfg.tasks)
    share = cfg.share_prefix and prefix_pack.enable(model)
    t0 = time.perf_counter()
    skipped: list[str] = []
    trajs = asyncio.run(
        gold_trajectories(
            dirs, tokenizer, cfg.agent, cfg.max_len, discover=cfg.discover, skipped=skipped
        )
    )
    if not trajs:
        raise TrainError(f"{cfg.dataset}: no gold trajectories within max_len={cfg.max_len}")
    console.print(
        f"SFT: {len(trajs)} gold trajectories in {time.perf_counter() - t0:.1f}s"
        + (f"; {len(skipped)} over max_len={cfg.max_len} skipped: {skipped}" if skipped else "")
    )
    opt = optimizer(model, cfg.lr)
    rng = random.Random(cfg.seed)
    steps_per_epoch = (len(trajs) + cfg.batch_size - 1) // cfg.batch_size
    state = TrainerState()
    pad = tokenizer.pad_token_id or 0
    metrics: list[dict[str, Any]] = []
    with Progress(
        TextColumn("[bold]SFT"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        TextColumn("{task.fields[info]}"), console=console,
    ) as prog:  # fmt: skip
        bar = prog.add_task("sft", total=cfg.epochs * steps_per_epoch, info="")
        for epoch in range(cfg.epochs):
            order = list(range(len(trajs)))
            rng.shuffle(order)
            for s in range(0, len(order), cfg.batch_size):
                chunk = [trajs[i] for i in order[s : s + cfg.batch_size]]
                loss_total = step(model, opt, chunk, pad, share)
                state.step += 1
                metrics.append({"step": state.step, "epoch": epoch, "nll_per_token": loss_total})
                prog.update(bar, advance=1, info=f"nll/token {loss_total:.3f}")
    state.extra = {
        "kind": "sft", "trajectories": len(trajs), "skipped_over_max_len": skipped,
        "discover": cfg.discover, "metrics": metrics,
    }  # fmt: skip
    ckpt = save_checkpoint(cfg.out, state, model, opt, tokenizer)
    write_json(cfg.out / "sft_metrics.json", metrics)
    return ckpt / "model"
