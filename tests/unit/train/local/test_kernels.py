"""The Triton head kernels against the learner's torch functions, run by Triton's interpreter on
the CPU (TRITON_INTERPRET=1, in a subprocess: the flag is read when the kernels are defined)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("triton")

SCRIPT = textwrap.dedent(
    """
    import torch
    from kwrl.train.local import kernels
    from kwrl.train.local.learner import _dlogits_fused, _logprob_lse

    g = torch.Generator().manual_seed(0)
    for N, V, T in ((3, 9000, 0.7), (2, 4096, 1.0), (1, 100, 1.3)):  # blocks: 3, exactly 1, partial
        x = (torch.randn(N, V, generator=g) * 3).bfloat16()
        t = torch.randint(0, V, (N,), generator=g)
        up = torch.randn(N, generator=g)
        lp, lse = kernels.logprob_lse(x, t, T)
        ref_lp, ref_lse = _logprob_lse(x, t, T)
        assert lp.dtype == lse.dtype == torch.float32
        assert torch.allclose(lp, ref_lp, atol=1e-4) and torch.allclose(lse, ref_lse, atol=1e-4)
        ref = _dlogits_fused(x, ref_lse, t, up, T).float()
        buf = x.clone()
        d = kernels.dlogits_(buf, lse, t, up, T)
        assert d.data_ptr() == buf.data_ptr() and d.dtype == torch.bfloat16  # in place
        err = (d.float() - ref).abs().max() / ref.abs().max()
        assert err < 1e-2, (N, V, float(err))
        assert d.float()[torch.arange(N), t].sign().eq(up.sign()).all()  # the target's term
    try:
        kernels.logprob_lse(torch.zeros(2, 3, 4), torch.zeros(2, dtype=torch.long), 1.0)
    except ValueError as e:
        assert "N x V" in str(e)
    else:
        raise AssertionError("a 3-d input was accepted")
    print("ok")
    """
)


def test_head_kernels_match_the_torch_functions_under_the_interpreter() -> None:
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=600
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-3000:]
