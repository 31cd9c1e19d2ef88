"""Scripted row functions on each device under test (issue 16, step 5): softmax, log-softmax,
layer norm, RMS norm and logsumexp over the last dim equal eager on the CPU (values, dtypes,
shapes), on rows longer than a block of threads, 3-D and non-contiguous inputs, float64, NaN
rows and empty rows. On cuda each row region (passes/fuse_rows.py) is one numba.cuda kernel
with a block per row (targets/cuda/rows.py), shown by `fn.code`; on the cpu the CPU target runs
the same functions.

Device-generic (the `device` fixture, tests/devices.py): the cuda cases run in the simulator
tier (tests/test_cuda_sim_tier.py), or on a GPU.
"""
import numpy as np
import pytest

import jitorch
import jitorch.nn.functional as F


def _softmaxes(x):
    return F.softmax(x, -1), F.log_softmax(x, -1)


def _norms(x, w, b):
    return F.layer_norm(x, [17], w, b, 1e-5), F.rms_norm(x, [17], w, 1e-6)


def _logsumexp(x):
    return x - jitorch.logsumexp(x, -1, keepdim=True)


def _row_stats(x):  # per-row values returned from the region, and a NaN-propagating max
    m = x.mean(-1, keepdim=True)
    return x - m, m, x - x.amax(-1, keepdim=True)


# the row regions each function forms (softmax and log-softmax share their max and sum)
REGIONS = {"_softmaxes": 1, "_norms": 2, "_logsumexp": 1, "_row_stats": 2}
FNS = {f.__name__: (f, jitorch.jit.script(f)) for f in (_softmaxes, _norms, _logsumexp,
                                                         _row_stats)}


def _check(got, want, device):
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.device.type == device, k
        assert g.dtype == w.dtype and tuple(g.shape) == tuple(w.shape), \
            (k, g.dtype, w.dtype, g.shape, w.shape)
        np.testing.assert_allclose(g.cpu().numpy(), w.numpy(), rtol=1e-5, atol=1e-5,
                                   equal_nan=True, err_msg=str(k))


def _row_kernels(fn, device, regions):
    """On cuda: `regions` row kernels (a block per row: `launch_blocks`, a loop over rows),
    nothing else launched and nothing left to the library."""
    if device == "cuda":
        code = fn.code
        assert "# runs interpreted" not in code, code
        assert code.count("launch_blocks(") == regions and "launch(" not in code, code
        assert code.count("cuda.blockIdx.x") == regions and "result(" not in code, code


def _inputs(name, dtype, layout):
    g = jitorch.Generator().manual_seed(3)
    shape = (2, 3, 17) if layout == "3d" else (5, 17) if name == "_norms" else (5, 40)
    x = jitorch.randn(*shape, generator=g, dtype=dtype) * 3
    if layout == "transposed":
        x = jitorch.randn(shape[1], shape[0], generator=g, dtype=dtype).t()
    if name == "_norms":
        return x, jitorch.randn(17, generator=g, dtype=dtype), jitorch.randn(17, generator=g,
                                                                             dtype=dtype)
    return (x,)


CASES = [(name, d, layout) for name in FNS for d in (jitorch.float32, jitorch.float64)
         for layout in (("contiguous", "3d", "transposed") if d is jitorch.float32
                        else ("contiguous",))]


@pytest.mark.parametrize("name,dtype,layout", CASES, ids=[f"{n}-{d}-{lay}"
                                                           for n, d, lay in CASES])
def test_scripted_row_function_matches_eager_on_the_cpu(device, name, dtype, layout):
    py, scripted = FNS[name]
    args = _inputs(name, dtype, layout)
    want = py(*args)
    _check(scripted(*[a.to(device) for a in args]), want, device)
    _row_kernels(scripted, device, regions=REGIONS[name])


@pytest.mark.filterwarnings("ignore:invalid value encountered")  # the simulator's NumPy scalars
def test_nan_rows_propagate_like_eager(device):
    x = jitorch.randn(4, 9)
    x[1, 3] = float("nan")
    x[2] = float("-inf")
    for name in ("_softmaxes", "_logsumexp", "_row_stats"):
        py, scripted = FNS[name]
        _check(scripted(x.to(device)), py(x), device)


def test_empty_rows_give_eagers_results_and_errors(device):
    """A reduction over an empty row is left to the interpreter (eager's values, its error)."""
    e = jitorch.randn(3, 0)
    for name in ("_softmaxes", "_logsumexp"):
        py, scripted = FNS[name]
        _check(scripted(e.to(device)), py(e), device)
    py, scripted = FNS["_row_stats"]
    with pytest.raises(IndexError) as want:
        py(e)
    with pytest.raises(IndexError) as got:
        scripted(e.to(device))
    assert str(want.value) in str(got.value)
    zero_rows = jitorch.randn(0, 5)  # no rows: nothing to launch
    _check(scripted(zero_rows.to(device)), py(zero_rows), device)
