"""`kwrl smoke` end to end as a real process, sized down: data, SFT, eval, RL, eval, report.

The policy is a tiny random Llama (tests/integration/train_helpers.py) so the run takes minutes,
not the packaged SmolLM2's quarter hour (~90 s here, so it is in the default run); every stage
is the real one.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from train_helpers import ENV, KWRL, save_tiny_llama


def test_smoke_writes_a_checkpoint_and_reports(tmp_path: Path) -> None:
    model = save_tiny_llama(tmp_path / "tiny-llama")
    out = tmp_path / "smoke"
    argv = [
        "smoke", "--out", str(out), "--model", str(model), "--worlds", "1", "--tasks_per_world",
        "12", "--sft_epochs", "1", "--rl_steps", "1", "--prompts_per_step", "1",
        "--samples_per_prompt", "2", "--agent.max_steps", "2", "--agent.max_tokens_per_turn", "16",
    ]  # fmt: skip
    proc = subprocess.run(
        [*KWRL, *argv], capture_output=True, text=True, env=ENV, check=False, timeout=1200
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads((out / "smoke.json").read_text())
    ckpt = Path(result["checkpoint"])
    assert (ckpt / "config.json").is_file() and list(ckpt.glob("*.safetensors"))
    # RL trained LoRA adapters by default (lora_rank=16): the step keeps them beside the merge.
    assert list((ckpt.parent / "adapter").glob("adapter_model.safetensors"))
    for report in result["reports"]:
        assert Path(report).is_file() and "<html" in Path(report).read_text()[:2000].lower()
    assert {"SFT warm start", "eval before RL", "eval after RL"} <= set(result["stages_s"])
    assert result["before"]["n_trials"] == result["after"]["n_trials"] == len(result["tasks"])
    assert (out / "train" / "metrics.jsonl").read_text().strip()
    assert [m["step"] for m in result["rl"]] == [1]
    assert result["rl"][0]["trials"] == 2
