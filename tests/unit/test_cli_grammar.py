"""The `kwrl` command's grammar: one spelling per setting, in the code and in what documents it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import typer
from pydantic import BaseModel
from typer.core import TyperGroup, TyperOption

from kwrl.cli import app

ROOT = Path(__file__).resolve().parents[2]

OLD = re.compile(
    r"deprecat|one (more )?release|release before|FutureWarning|kwrl\.cli_config\.Legacy"
    r"|--tasks-per-world|--agent-timeout|--n-samples|--sample-seed|--n-boot|openai:https?:"
    r"|environment_kwargs =|(?<![\w.-])--(ek|ak)\b|sandbox conform --env",
    re.IGNORECASE,
)
"""0.1.0's spellings (CHANGELOG.md lists them with their new ones) and the words that kept them."""

KEPT = {
    "src/kwrl/sandbox/network/egress.py": ("6to4 relay", "site-local (deprecated)"),
    "scripts/device/gpu_bundle.py": ('"deprecation",',),
}
"""Lines that match for another reason: address ranges the IETF deprecated, a package's name."""


def _scanned() -> list[Path]:
    files = [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]
    for top, exts in (("src/kwrl", "py md toml"), ("configs", "toml"), ("scripts", "sh py toml")):
        files += [p for ext in exts.split() for p in (ROOT / top).rglob(f"*.{ext}")]
    return sorted(files)


def _is_harbors(line: str) -> bool:
    """harbor's own CLI keeps `--ek`/`--ak` (`harbor run ... --ek key=value`)."""
    return "harbor" in line and re.search(r"--(ek|ak)\b", line) is not None


def test_no_old_spelling_is_left_in_src_docs_or_readme() -> None:
    hits = []
    for path in _scanned():
        rel = path.relative_to(ROOT).as_posix()
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not OLD.search(line) or _is_harbors(line):
                continue
            if any(k in line for k in KEPT.get(rel, ())):
                continue
            hits.append(f"{rel}:{n}: {line.strip()}")
    assert not hits, "0.1.0 spellings (see CHANGELOG.md):\n" + "\n".join(hits)


def test_the_grep_finds_an_old_spelling() -> None:
    """The pattern above is not vacuous: each kind of old spelling matches."""
    for old in ("--ek gateway=false", "`--ak key=value`", "kwrl data synth --tasks-per-world 2",
                "still work for one release", "warns with a FutureWarning",
                "judge openai:http://h/v1#m", "kwrl sandbox conform --env docker"):  # fmt: skip
        assert OLD.search(old), old
    assert not OLD.search("--sandbox.kwargs key=value") and not OLD.search("--tasks_per_world 2")
    assert _is_harbors("harbor run -p T -a oracle -e kwrl.sandbox.local:LocalEnvironment --ek x=1")


def _verbs() -> dict[str, Any]:
    """Every verb of `kwrl` by its path (`data convert`), a group's own verb included."""
    out: dict[str, Any] = {}

    def walk(cmd: Any, path: str) -> None:
        if isinstance(cmd, TyperGroup):
            if (own := getattr(cmd, "default", None)) is not None:
                out[path] = own
            for name, sub in cmd.commands.items():
                walk(sub, f"{path} {name}".strip())
        else:
            out[path] = cmd

    walk(typer.main.get_command(app), "")
    return out


def _keys(cls: type[BaseModel], exclude: frozenset[str], prefix: str = "") -> set[str]:
    """The dotted TOML keys of `cls`'s leaf fields (an alias is the key), but `exclude`."""
    out: set[str] = set()
    for name, field in cls.model_fields.items():
        key = prefix + (field.alias or name)
        if key in exclude:
            continue
        sub = field.annotation
        if isinstance(sub, type) and issubclass(sub, BaseModel):
            out |= _keys(sub, exclude, key + ".")
        else:
            out.add(key)
    return out


INTERNAL = {"grade": {"--in-sandbox"}}
"""Options no user types: how kwrl reruns `kwrl grade` inside its regrade sandbox (hidden)."""


def test_every_verb_takes_its_flags_from_its_typed_config() -> None:
    """A verb's options are its config's fields, one each, named as their keys: a flag written by
    hand beside them (or a field without its flag) fails here."""
    verbs = _verbs()
    assert len(verbs) == 18, sorted(verbs)
    generated = {}
    for path, cmd in verbs.items():
        marked = getattr(cmd.callback, "kwrl_config", None)
        if marked is None:
            continue
        cls, exclude = marked
        longs = {
            o for p in cmd.params if isinstance(p, TyperOption) for o in p.opts if o[:2] == "--"
        }
        longs -= {"--help", *INTERNAL.get(path, ())}
        expected = {f"--{k}" for k in _keys(cls, exclude)}
        assert longs == expected, f"kwrl {path}: {sorted(longs ^ expected)}"
        generated[path] = cls
    assert set(generated) == set(verbs)  # none hand-written


def test_no_verb_has_a_hidden_flag() -> None:
    hidden = [f"{path} {p.name}" for path, cmd in _verbs().items() for p in cmd.params
              if isinstance(p, TyperOption) and p.hidden]  # fmt: skip
    assert hidden == ["grade in_sandbox"]  # INTERNAL's


_USE = re.compile(r"kwrl ([a-z]+(?: [a-z]+)?)([^`|\n;()]*)")


def _unknown_flags(text: str, verbs: dict[str, Any]) -> list[str]:
    """`kwrl VERB ... --flag` in `text` whose flag VERB does not have."""
    out = []
    for m in _USE.finditer(text):
        words = m.group(1).split()
        verb = " ".join(words) if " ".join(words) in verbs else words[0]
        if verb not in verbs:
            continue
        known = {o for p in verbs[verb].params for o in [*p.opts, *p.secondary_opts]}
        out += [f"kwrl {verb} {f}" for f in re.findall(r"(?<![\w-])(--[a-z][\w.-]*)", m.group(2))
                if f not in known | {"--help"}]  # fmt: skip
    return out


def test_every_flag_the_docs_write_is_a_flag_of_its_verb() -> None:
    verbs = _verbs()
    assert _unknown_flags("run `kwrl data synth --tasks-per-world 2 --seed 3`", verbs) == [
        "kwrl data synth --tasks-per-world"
    ]
    bad = [f"{p.relative_to(ROOT)}: {u}" for p in _scanned() if p.suffix in (".md", ".py", ".sh")
           for u in _unknown_flags(p.read_text(encoding="utf-8"), verbs)]  # fmt: skip
    assert not bad
