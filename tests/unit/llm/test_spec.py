"""One spec grammar for policies and judges: a URL is the family's URL kind, `KIND:TARGET` a
registry entry; served names default to `default`."""

from __future__ import annotations

import pytest

from kwrl.errors import ConfigError
from kwrl.llm.spec import live_spec, make_spec, served_name, split_spec, split_url


def test_a_url_is_the_familys_url_kind_and_a_prefix_names_a_kind() -> None:
    kinds = ("openai", "litellm")
    assert split_spec("http://h:8000/v1#m", kinds=kinds, url_kind="openai", field="judge") == (
        "openai",
        "http://h:8000/v1#m",
    )
    assert split_spec("litellm:openai/gpt-5", kinds=kinds, url_kind="openai", field="judge") == (
        "litellm",
        "openai/gpt-5",
    )
    with pytest.raises(ConfigError, match=r"judge 'engine:x': expected .* litellm:\.\.\."):
        split_spec("engine:x", kinds=kinds, url_kind="openai", field="judge")
    with pytest.raises(ConfigError, match="nothing after 'litellm:'"):
        split_spec("litellm:", kinds=kinds, url_kind="openai", field="judge")


def test_urls_split_into_base_and_served_name() -> None:
    assert split_url("http://h:8000/v1/#Qwen/Qwen3-8B", field="f") == (
        "http://h:8000/v1",
        "Qwen/Qwen3-8B",
    )
    assert split_url("https://h/v1", field="f") == ("https://h/v1", "default")
    for bad in ("h:8000/v1#m", "http://#m"):
        with pytest.raises(ConfigError, match=r"f .*expected http\(s\)://HOST:PORT/v1#NAME"):
            split_url(bad, field="f")


def test_specs_are_built_here_and_read_back_by_the_same_grammar() -> None:
    kinds = ("engine", "vllm", "live", "completions")
    assert make_spec("vllm", "/runs/x/policy") == "vllm:/runs/x/policy"
    assert split_spec(make_spec("vllm", "/runs/x/policy"), kinds=kinds, url_kind="completions",
                      field="f") == ("vllm", "/runs/x/policy")  # fmt: skip
    assert live_spec("eval-1a2b") == "live:eval-1a2b"
    assert split_spec(live_spec("h"), kinds=kinds, url_kind="completions", field="f") == (
        "live",
        "h",
    )
    for bad in ("", "http://h", "a:b"):
        with pytest.raises(ConfigError, match="spec kind"):
            make_spec(bad, "m")


def test_the_served_name_is_a_urls_fragment_only() -> None:
    assert served_name("http://h:8000/v1#Qwen/Qwen3-8B") == "Qwen/Qwen3-8B"
    assert served_name("http://h:8000/v1") is None
    assert served_name("engine:smollm2-135m") is None  # an engine reports its own tokenizer
