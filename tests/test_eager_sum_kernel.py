"""Eager `sum` / `mean` of a large contiguous float tensor run the compiled blocked sum
(_ops/_sum_kernels.py): the compiled reductions' algorithm, so eager and scripted results are
the same bits; values against a float64 reference, NaN and infinities, keepdim, transposed
input; what the kernel does not take (non-contiguous, read-only, big-endian, small) stays on
NumPy; and the kernel compiles in jitorch's compile worker, never in the caller."""
from __future__ import annotations

import numpy as np
import pytest

import jitorch as jt
from jitorch._ops import reduce as _reduce
from jitorch._ops import _sum_kernels


@jt.script
def _scripted_sum(x):
    return x.sum()


@jt.script
def _scripted_mean(x):
    return x.mean()


def test_the_block_is_the_compiled_reductions_block():
    from jitorch.script.targets.cpu import lower_reduce
    assert _sum_kernels.BLOCK == lower_reduce.BLOCK


@pytest.mark.parametrize("dtype", [jt.float32, jt.float64])
@pytest.mark.parametrize("n", [_reduce.BLOCKED_MIN, 5_000, 100_003])
def test_large_sums_agree_with_float64_and_with_scripted_code(dtype, n):
    jt.manual_seed(n)
    x = jt.randn(n, dtype=dtype) + 0.25
    ref = x.numpy().astype(np.float64)
    s, m = x.sum(), x.mean()
    assert s.dtype == m.dtype == dtype and s.shape == m.shape == ()
    tol = 1e-6 if dtype == jt.float32 else 1e-13
    np.testing.assert_allclose(s.item(), ref.sum(), rtol=tol)
    np.testing.assert_allclose(m.item(), ref.mean(), rtol=tol)
    # the same algorithm as the compiled reductions: bit for bit
    assert s.item() == _scripted_sum(x).item() and m.item() == _scripted_mean(x).item()
    assert jt.jit.stats()["fused_loops"][f"sum {str(dtype).split('.')[1]}"] in (
        "compiled in this process", "loaded from the disk cache")


def test_float32_ones_past_two_to_the_24_are_exact_and_specials_propagate():
    assert jt.ones(2 ** 24 + 40).sum().item() == 2 ** 24 + 40  # a sequential sum gives 2**24
    x = jt.zeros(10_000)
    x[7] = float("inf")
    assert x.sum().item() == float("inf")
    x[9_000] = float("-inf")
    assert np.isnan(x.sum().item())
    y = jt.ones(10_000, dtype=jt.float64)
    y[5_000] = float("nan")
    assert np.isnan(y.sum().item()) and np.isnan(y.mean().item())


def test_keepdim_transposed_and_multi_dim_inputs():
    x = jt.randn(64, 100, dtype=jt.float64)
    ref = x.numpy().sum()
    k = x.sum(keepdim=True)
    assert k.shape == (1, 1) and x.mean(keepdim=True).shape == (1, 1)
    np.testing.assert_allclose(k.numpy()[0, 0], ref, rtol=1e-13)
    np.testing.assert_allclose(x.t().sum().item(), ref, rtol=1e-13)  # Fortran order: taken
    np.testing.assert_allclose(x.sum(dim=(0, 1)).item(), ref, rtol=1e-13)  # NumPy serves dims


def test_what_the_kernel_does_not_take_is_summed_by_numpy(monkeypatch):
    calls = []
    real = _sum_kernels.blocked_total
    monkeypatch.setattr(_sum_kernels, "blocked_total", lambda a: calls.append(a) or real(a))
    a = np.random.default_rng(0).standard_normal((200, 100)).astype(np.float32)
    _reduce._sum(a)
    assert len(calls) == 1  # taken
    ro = a.copy()
    ro.flags.writeable = False
    big_endian = a.astype(">f4")
    for arr in (a[:, ::2], ro, big_endian, a[:40], a.astype(np.float16)):
        got = _reduce._sum(arr)
        np.testing.assert_allclose(got, arr.astype(np.float64).sum(), rtol=1e-3)
    assert len(calls) == 1  # none of those


def test_a_cold_kernel_compiles_in_the_compile_worker_while_numpy_sums(monkeypatch, tmp_path):
    """Without the kernel in the disk cache, the first large sum queues it on the compile worker
    and NumPy serves the call; after `jitorch.jit.wait_compiled()` the kernel loads from disk."""
    monkeypatch.setenv("JITORCH_COMPILE", "background")
    monkeypatch.setenv("JITORCH_CACHE_DIR", str(tmp_path / "cache"))  # no marker there
    monkeypatch.setattr(_sum_kernels.LOOPS, "loaded", {})
    monkeypatch.setattr(_sum_kernels.LOOPS, "jobs", {})
    calls = []
    real = _sum_kernels.blocked_total
    monkeypatch.setattr(_sum_kernels, "blocked_total", lambda a: calls.append(a) or real(a))
    x = jt.randn(5_000, dtype=jt.float64)
    s = x.sum()
    assert not calls  # NumPy's sum
    assert jt.jit.stats()["fused_loops"]["sum float64"] == "compiling in the compile worker"
    assert jt.jit.wait_compiled(600)
    assert x.sum().item() == pytest.approx(s.item(), rel=1e-13)
    assert calls and calls[-1].size == 5_000  # the kernel served it (after its warm-up call)
    assert jt.jit.stats()["fused_loops"]["sum float64"] == "loaded from the disk cache"
