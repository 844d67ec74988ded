"""kwrl's flash-attn stand-in for SkyRL's model wrapper (kwrl.train.skyrl.compat)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("skyrl")

from kwrl.train.skyrl import compat  # noqa: E402

pytestmark = pytest.mark.skipif(
    not compat.flash_attn_missing(), reason="flash-attn is installed here: no stand-in needed"
)


def _run(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=300,
    )


def test_unpad_then_pad_restores_the_masked_rows() -> None:
    x = torch.randn(3, 5, 4, requires_grad=True)
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [1, 0, 0, 0, 0]])
    packed, idx, cu, longest, used = compat.unpad_input(x, mask)
    assert packed.shape == (9, 4)
    assert cu.tolist() == [0, 3, 8, 9] and cu.dtype == torch.int32
    assert longest == 5 and used.tolist() == [3, 5, 1]
    assert torch.equal(packed[3:8], x[1].detach())
    back = compat.pad_input(packed, idx, 3, 5)
    assert torch.equal(back, x.detach() * mask[..., None])
    back.sum().backward()
    assert x.grad is not None and torch.equal(x.grad, mask[..., None].float().expand(3, 5, 4))


def test_unpad_of_token_ids_as_skyrl_calls_it() -> None:
    ids = torch.tensor([[0, 0, 7, 8], [5, 6, 7, 8]])  # left padding, as SkyRL pads prompts
    mask = (ids != 0).long()
    packed, idx, *_ = compat.unpad_input(ids.unsqueeze(-1), attention_mask=mask)
    assert packed.transpose(0, 1).tolist() == [[7, 8, 5, 6, 7, 8]]
    assert compat.pad_input(packed, idx, 2, 4).squeeze(-1).tolist() == ids.tolist()


def test_skyrl_model_wrapper_imports_only_with_the_watch() -> None:
    bare = _run(f"import {compat.MODEL_WRAPPER}")
    assert bare.returncode != 0 and "flash_attn" in bare.stderr
    watched = _run(
        f"""
        import importlib.util, sys
        from kwrl.train.skyrl import compat
        compat.setup_worker()
        assert importlib.util.find_spec("flash_attn") is None  # nothing until the wrapper loads
        import {compat.MODEL_WRAPPER} as mw
        assert mw.unpad_input is compat.unpad_input
        assert "flash_attn" not in sys.modules and importlib.util.find_spec("flash_attn") is None
        from transformers.utils import is_flash_attn_2_available
        assert not is_flash_attn_2_available()
        print("ok")
        """
    )
    assert watched.returncode == 0, watched.stderr[-2000:]
    assert watched.stdout.strip().endswith("ok")


def test_ray_workers_get_the_watch_through_the_runtime_env_hook() -> None:
    """A real local Ray cluster started with kwrl's hook: a task imports SkyRL's wrapper."""
    out = _run(
        f"""
        import os, shutil, tempfile, ray
        os.environ["{compat.HOOK_ENV}"] = "kwrl.train.skyrl.compat.runtime_env_hook"
        tmp = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # short: Ray's socket paths
        ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, _temp_dir=tmp)

        @ray.remote
        def load():
            import {compat.MODEL_WRAPPER} as mw
            return mw.pad_input.__module__

        print("module", ray.get(load.remote()))
        ray.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)
        """
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert "module kwrl.train.skyrl.compat" in out.stdout
