"""Tokenizer resolution: folders load as they are, bad specs fail with a clear error."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kwrl.agent.tokenizer import load_tokenizer
from kwrl.errors import AgentError


def test_a_saved_tokenizer_folder_loads_as_is(qwen_tokenizer: Any, tmp_path: Path) -> None:
    qwen_tokenizer.save_pretrained(str(tmp_path))
    tok = load_tokenizer(str(tmp_path))
    assert tok.encode("Q3 revenue", add_special_tokens=False) == qwen_tokenizer.encode(
        "Q3 revenue", add_special_tokens=False
    )
    assert tok.chat_template == qwen_tokenizer.chat_template


def test_a_missing_folder_is_an_agent_error_naming_the_spec() -> None:
    with pytest.raises(AgentError, match="/no/such/tokenizer"):
        load_tokenizer("/no/such/tokenizer")
