"""SkyRL's inference client and router in front of `kwrl serve`, kwrl's generator in a Ray task.

What the 1-GPU smoke puts between SkyRL's trainer and its vLLM servers, minus the GPU: a local Ray
cluster started by kwrl's entry-point helper (SkyRL's `initialize_ray` plus kwrl's worker hook),
SkyRL's `build_new_inference_client` with `external_server_urls` (it starts the vllm-router over
the server, as it does over its own vLLM servers), and `KwrlHarborGenerator.from_skyrl` running
in a Ray task, as in SkyRL's trainer. KwrlAgent's token-in/token-out completions go through the
router to SmolLM2-135M on CPU (`kwrl serve`); trials run in bubblewrap; the real grader scores
them. The driver runs in its own process (skyrl_router_driver.py).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from agent_helpers import policy_server, synth_prompts

pytest.importorskip("skyrl")
pytest.importorskip("vllm_router")
if shutil.which("bwrap") is None:
    pytest.skip("bubblewrap not installed", allow_module_level=True)

DRIVER = Path(__file__).with_name("skyrl_router_driver.py")
FAKE_KEY = "sk-kwrl-test-router-0123456789"


def test_generator_samples_through_skyrls_router_in_a_ray_task(tmp_path: Path) -> None:
    from kwrl.llm.packaged import ensure_model

    _, parquet = synth_prompts(tmp_path)
    model = ensure_model("smollm2-135m")
    trials, out = tmp_path / "trials", tmp_path / "out.json"
    ray_tmp = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # Ray's socket paths must stay short
    env = {**os.environ, "RAY_TMPDIR": ray_tmp, "OPENAI_API_KEY": FAKE_KEY}
    try:
        with policy_server(str(model), served_name="policy") as base_url:
            server = base_url.removesuffix("/v1")
            argv = [sys.executable, str(DRIVER), str(parquet), str(model), server, str(out)]
            argv += [str(trials), str(tmp_path / "logs")]
            run = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)
    assert run.returncode == 0, run.stderr[-4000:]
    res = json.loads(out.read_text())

    # SkyRL started its router over the server; the agents were pointed at the router
    assert res["router"] == "VLLMRouter" and res["server_urls"] == [server]
    assert res["proxy_url"] != server
    assert res["policy_spec"] == res["proxy_url"].rstrip("/") + "/v1#policy"
    records = res["env_metrics"]
    assert res["metrics"]["kwrl/trials"] == 4 and len(records) == 4
    assert all(r["reward"] is not None for r in records), records  # every trial graded
    assert all(r["cause"] in ("none", "max_tokens", "context_overflow") for r in records), records
    assert all(n > 0 for n in res["loss_mask_sums"])  # sampled tokens came back through the router
    for rec in records:
        trial = next(trials.glob(f"train-s000001-*/{rec['trial']}"))
        meta = json.loads((trial / "result.json").read_text())["agent_result"]["metadata"]
        assert meta["session_id"].startswith("train-s000001-")  # sticky routing per trial
        agent = json.loads((trial / "config.json").read_text())["agent"]
        assert agent["model_name"] == res["policy_spec"]
        assert agent["kwargs"]["weight_version"] == res["weight_version"] == 1  # cache salt w1
    # a host key passed to verifiers reaches no trial file (a ${VAR} template harbor resolves)
    for f in trials.rglob("*"):
        if f.is_file():
            assert FAKE_KEY not in f.read_text(errors="replace"), f
    config = next(trials.glob("train-s000001-*/*/config.json")).read_text()
    assert "${OPENAI_API_KEY}" in config
