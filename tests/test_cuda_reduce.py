"""Scripted reductions on each device under test (issue 16, step 5): sum, mean, prod, amax and
amin over given dims (keepdim, negative dims, every dim, `dtype=`) equal eager on the CPU in
values, dtypes and shapes, for float32/float64/int/bool inputs, contiguous or not, with NaN, on
0-d and empty tensors; eager's errors stay eager's. On cuda each reduction is a numba.cuda kernel
of the CUDA target (targets/cuda/reduce.py: a block per output element), shown by `fn.code`;
on the cpu the same functions run as the CPU target compiles them.

Device-generic (the `device` fixture, tests/devices.py): the cuda cases run in the simulator
tier (tests/test_cuda_sim_tier.py), or on a GPU.
"""
import numpy as np
import pytest

import jitorch


def _sums(x):
    return x.sum(1), x.sum((0, -1), keepdim=True), x.sum(), x.sum(-1, dtype=jitorch.float64)


def _means(x):
    return x.mean(-1), x.mean((0, 1), keepdim=True), x.mean(), x.mean(1, dtype=jitorch.float64)


def _prods(x):
    return x.prod(1), x.prod(), x.prod(0, keepdim=True), x.prod(-1, dtype=jitorch.float64)


def _extremes(x):
    return x.amax(1), x.amin((0, 2), keepdim=True), x.amax(), x.amin(-1), x.amin(dim=())


def _chain(x, b):  # an elementwise kernel feeding a reduction feeding another kernel
    return ((x * 2 + b).sum(-1) + 1).relu()


FNS = {f.__name__: (f, jitorch.jit.script(f)) for f in (_sums, _means, _prods, _extremes)}


def _input(dtype, layout, special):
    """A (3, 4, 5) tensor of `dtype`, laid out as `layout`; float ones with NaN and -inf where
    `special` (amax/amin: NaN wins)."""
    g = jitorch.Generator().manual_seed(7)
    x = jitorch.randn(3, 4, 5, generator=g)
    if dtype is jitorch.bool:
        x = x > 0
    elif not dtype.is_floating_point:
        x = (x * 3).to(dtype)
    else:
        x = x.to(dtype)
        if special:
            x[1, 2, 3] = x[2, 0, 4] = float("nan")
            x[2, 3, 0] = float("-inf")
    if layout == "transposed":
        x = x.transpose(0, 2)
    elif layout == "sliced":
        x = x[1:, ::2]
    return x


def _check(got, want, device):
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.device.type == device, k
        assert g.dtype == w.dtype and tuple(g.shape) == tuple(w.shape), \
            (k, g.dtype, w.dtype, g.shape, w.shape)
        if w.dtype.is_floating_point:
            np.testing.assert_allclose(g.cpu().numpy(), w.numpy(), rtol=1e-5, atol=1e-5,
                                       equal_nan=True, err_msg=str(k))
        else:
            np.testing.assert_array_equal(g.cpu().numpy(), w.numpy(), err_msg=str(k))


def _is_compiled_reduction(fn, device, calls=1):
    """On cuda: a kernel for each reduction, not a call of its implementation (the program's
    code, `fn.code`); the cpu runs what its target compiles (amax of bool runs interpreted)."""
    if device == "cuda":
        code = fn.code
        assert "# runs interpreted" not in code, code
        assert code.count("launch_blocks(") == calls and "cuda.shared.array(" in code and \
            "cuda.syncthreads()" in code, code


# mean of an integer tensor raises (test_mean_of_integers_raises_eagers_error); the layouts on
# float32 only (the simulator runs a Python thread per CUDA thread: few cases, small tensors)
CASES = [(name, d, layout) for name in FNS
         for d in (jitorch.float32, jitorch.float64, jitorch.int32, jitorch.bool)
         for layout in (("contiguous", "transposed", "sliced") if d is jitorch.float32
                        else ("contiguous",))
         if name != "_means" or d.is_floating_point]


@pytest.mark.parametrize("name,dtype,layout", CASES, ids=[f"{n}-{d}-{lay}"
                                                           for n, d, lay in CASES])
def test_scripted_reduction_matches_eager_on_the_cpu(device, name, dtype, layout):
    py, scripted = FNS[name]
    x = _input(dtype, layout, special=name == "_extremes")
    want = py(x)
    _check(scripted(x.to(device)), want, device)
    _is_compiled_reduction(scripted, device, calls=len(want))


def test_reduction_between_elementwise_kernels(device):
    x, b = jitorch.randn(6, 70), jitorch.randn(70)  # rows longer than a block of threads
    f = jitorch.jit.script(_chain)
    _check(f(x.to(device), b.to(device)), _chain(x, b), device)
    _is_compiled_reduction(f, device)
    if device == "cuda":
        assert f.code.count("@cuda.jit") == 3  # the chain, the sum, the epilogue


def _zero_d_eager(x):
    return x.sum(), x.amax(0), x.mean(0, keepdim=True), x.prod()


def test_zero_d_and_empty_reductions_give_eagers_values(device):
    z = jitorch.tensor(2.5)
    f = jitorch.jit.script(_zero_d_eager)
    _check(f(z.to(device)), _zero_d_eager(z), device)
    _is_compiled_reduction(f, device, calls=4)
    e = jitorch.randn(3, 0, 4)
    for name in ("_sums", "_prods", "_means"):
        py, scripted = FNS[name]
        _check(scripted(e.to(device)), py(e), device)  # 0, 1 and NaN over the empty dim
    _check(FNS["_sums"][1](e[:, :, :0].to(device)), _sums(e[:, :, :0]), device)


def test_amax_of_an_empty_dim_raises_eagers_error(device):
    e = jitorch.randn(3, 0, 4)
    f = FNS["_extremes"][1]
    with pytest.raises(IndexError) as want:
        _extremes(e)
    with pytest.raises(IndexError) as got:
        f(e.to(device))
    assert str(want.value) in str(got.value)  # (a compiled raise may add the user's line)


def test_mean_of_integers_raises_eagers_error(device):
    x = jitorch.arange(12).reshape(3, 4)
    f = FNS["_means"][1]
    with pytest.raises(RuntimeError, match=r"mean\(\): could not infer output dtype.*Long"):
        f(x.to(device))


@pytest.mark.filterwarnings("ignore:overflow encountered")  # the simulator's NumPy scalars
def test_sum_of_integers_wraps_and_accumulates_in_int64(device):
    x = jitorch.full((3, 40), 2 ** 30, dtype=jitorch.int32)
    f = FNS["_sums"][1]
    got = f(x.to(device))
    assert got[0].dtype == jitorch.int64 and got[0].tolist() == [40 * 2 ** 30] * 3
    big = jitorch.full((2, 4), 2 ** 62, dtype=jitorch.int64)
    _check(f(big.to(device)), _sums(big), device)  # int64 wraps around as in eager
