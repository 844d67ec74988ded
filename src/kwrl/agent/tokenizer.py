"""Load the policy's tokenizer for TITO from a folder, a packaged model name or a hub id.

The agent needs the exact tokenizer and chat template the sampler uses. A folder (a
`save_pretrained` layout, model or tokenizer only) is loaded as is; anything else goes through
the llm stage: a packaged name gives its tokenizer-only folder (`ensure_tokenizer`: seconds, the
weights are not converted; the converted model folder where it exists), a hub id is passed
through and read from the local HF cache. Cached per process: the trials of one rollout share
one tokenizer.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from kwrl.errors import AgentError, KwrlError


@lru_cache(maxsize=8)
def load_tokenizer(spec: str) -> Any:
    from transformers import AutoTokenizer

    from kwrl.llm.packaged import ensure_tokenizer, is_packaged, resolve_model

    try:
        if Path(spec).expanduser().is_dir():
            where = spec
        elif is_packaged(spec):
            where = str(ensure_tokenizer(spec))
        else:
            where = resolve_model(spec)
        return AutoTokenizer.from_pretrained(
            str(Path(where).expanduser()) if Path(where).expanduser().is_dir() else where
        )
    except (OSError, KwrlError) as e:
        raise AgentError(
            f"tokenizer {spec!r}: not a folder, a packaged model or a cached hub id ({e})"
        ) from e
