"""Packaged GGUF models convert once into a plain safetensors folder that loads from the cache."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kwrl.errors import ConfigError
from kwrl.llm.packaged import ensure_model, gguf_parts, resolve_model


def test_the_gguf_files_are_found_through_package_metadata() -> None:
    (smol,) = gguf_parts("smollm2-135m")
    assert smol.name.endswith(".gguf") and smol.is_file()
    assert smol.read_bytes()[:4] == b"GGUF"
    qwen = gguf_parts("qwen2.5-coder-0.5b")
    assert [p.name for p in qwen] == [f"part0{i}.bin" for i in range(1, 7)]
    assert qwen[0].read_bytes()[:4] == b"GGUF"
    assert sum(p.stat().st_size for p in qwen) > 400 * 2**20


def test_the_converted_folder_is_a_plain_model_with_the_right_turn_end(smollm2_dir: Path) -> None:
    names = {p.name for p in smollm2_dir.iterdir()}
    assert {"config.json", "model.safetensors", "tokenizer.json", "kwrl-packaged.json"} <= names
    config = json.loads((smollm2_dir / "config.json").read_text())
    assert "quantization_config" not in config and config["model_type"] == "llama"
    tok_config = json.loads((smollm2_dir / "tokenizer_config.json").read_text())
    assert tok_config["eos_token"] == "<|im_end|>"


def test_later_calls_reuse_the_cache_without_converting(smollm2_dir: Path) -> None:
    stamp = (smollm2_dir / "model.safetensors").stat().st_mtime_ns
    t0 = time.monotonic()
    assert ensure_model("smollm2-135m") == smollm2_dir
    assert ensure_model("SmolLM2") == smollm2_dir  # alias
    assert time.monotonic() - t0 < 1.0
    assert (smollm2_dir / "model.safetensors").stat().st_mtime_ns == stamp
    env = {**os.environ, "KWRL_CACHE": str(smollm2_dir.parent.parent)}
    run = subprocess.run(
        [sys.executable, "-m", "kwrl.llm.packaged", "--quiet", "smollm2-135m"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert run.returncode == 0 and run.stdout == ""


def test_model_specs_resolve_to_folders_or_hub_ids(smollm2_dir: Path, tmp_path: Path) -> None:
    assert resolve_model("smollm2-135m") == str(smollm2_dir)
    assert resolve_model(str(smollm2_dir)) == str(smollm2_dir.resolve())
    assert (
        resolve_model("HuggingFaceTB/SmolLM2-135M-Instruct")
        == "HuggingFaceTB/SmolLM2-135M-Instruct"
    )
    with pytest.raises(ConfigError, match=r"no config\.json"):
        resolve_model(str(tmp_path))
    with pytest.raises(ConfigError, match="no such folder"):
        resolve_model("./no-such-model")


def test_unknown_packaged_names_are_config_and_key_errors() -> None:
    with pytest.raises(ConfigError, match="choose one of"):
        ensure_model("gpt-5")
    with pytest.raises(KeyError):
        ensure_model("gpt-5")


@pytest.mark.slow
def test_a_fresh_cache_converts_smollm2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KWRL_CACHE", str(tmp_path))
    out = ensure_model("smollm2-135m")
    assert out == tmp_path / "models" / "smollm2-135m"
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(out)
    assert model.config.eos_token_id == 2
    assert not any(p.name.endswith(".tmp") for p in out.parent.iterdir())


@pytest.mark.slow  # parsing the GGUF vocabulary takes ~20 s on an idle 2-core CPU
def test_a_tokenizer_alone_converts_without_the_weights(
    smollm2_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from transformers import AutoTokenizer

    from kwrl.llm.packaged import ensure_tokenizer

    assert ensure_tokenizer("smollm2-135m") == smollm2_dir  # the full folder, when converted
    monkeypatch.setenv("KWRL_CACHE", str(tmp_path))
    out = ensure_tokenizer("smollm2-135m")
    assert out == tmp_path / "models" / "smollm2-135m.tokenizer"
    assert not list(out.glob("*.safetensors"))
    alone, full = AutoTokenizer.from_pretrained(out), AutoTokenizer.from_pretrained(smollm2_dir)
    assert alone.eos_token == full.eos_token == "<|im_end|>"
    text = "<|im_start|>user\nQ3 revenue, please.<|im_end|>\n"
    assert alone.encode(text) == full.encode(text)
    assert ensure_tokenizer("smollm2") == out
