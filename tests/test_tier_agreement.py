"""Eager, scripted and traced (compiled) code agree to the bit on softmax, log_softmax and relu.

softmax / log_softmax: eager code runs the program the code generator makes for the scripted
call (_ops/_row_programs.py), the very overload a scripted call of the same input runs (checked:
one entry point, so no second copy of the loops can drift), on the last dim (a row region) and
another dim (the unfused kernels), C-contiguous and strided inputs (a strided row is summed in
another order than a contiguous one), with -inf elements and a row of -inf only (nan, as in
PyTorch). Compared as bits.
relu: PyTorch's rule, 0 where x < 0 else x, so relu(-0.0) is -0.0 and nan stays nan, in eager
(function, method, in place), scripted and traced code alike.
"""
import numpy as np
import pytest

import jitorch
import jitorch.nn.functional as F


@jitorch.jit.script
def _softmax_last(x):
    return F.softmax(x, -1)


@jitorch.jit.script
def _log_softmax_last(x):
    return F.log_softmax(x, -1)


@jitorch.jit.script
def _softmax_0(x):
    return F.softmax(x, 0)


@jitorch.jit.script
def _log_softmax_0(x):
    return F.log_softmax(x, 0)


_SCRIPTED = {(F.softmax, -1): _softmax_last, (F.log_softmax, -1): _log_softmax_last,
             (F.softmax, 0): _softmax_0, (F.log_softmax, 0): _log_softmax_0}


def _bits(t):
    a = t.detach().numpy()
    return a.view(np.int32 if a.dtype == np.float32 else np.int64)


def _input(case):
    rng = np.random.default_rng(7)
    if case == "f32-4x4":  # the eager benchmark's call; a row of -inf, a -inf element
        a = rng.standard_normal((4, 4)).astype(np.float32) * 3
        a[1] = -np.inf
        a[2, 1] = -np.inf
        return jitorch.tensor(a)
    if case == "f32-strided":  # rows of 40 with a stride of 6: the vectorised sums' length
        a = rng.standard_normal((40, 6)).astype(np.float32) * 3
        a[5, 2] = -np.inf
        return jitorch.tensor(a).t()
    if case == "f64-5x3":
        a = rng.standard_normal((5, 3)) * 3
        a[:, 1] = -np.inf
        a[0, 0] = -np.inf
        return jitorch.tensor(a)
    a = rng.standard_normal((130, 3)).astype(np.float32) * 3  # float32 sums over dim 0
    return jitorch.tensor(a)


@pytest.mark.parametrize("fn", [F.softmax, F.log_softmax], ids=["softmax", "log_softmax"])
@pytest.mark.parametrize("case,dim", [("f32-4x4", -1), ("f32-strided", -1), ("f64-5x3", 0),
                                      ("f32-130x3", 0)])
def test_softmax_eager_scripted_traced_bits(fn, case, dim):
    x = _input(case)
    eager = fn(x, dim)
    scripted = _SCRIPTED[fn, dim](x)
    traced = jitorch.jit.trace(lambda t: fn(t, dim), (x,), check_trace=False)(x)
    assert eager.dtype is x.dtype and eager.shape == x.shape
    np.testing.assert_array_equal(_bits(eager), _bits(scripted))
    np.testing.assert_array_equal(_bits(eager), _bits(traced))
    # eager ran the scripted call's own compiled overload, not a copy of its loops
    from jitorch._ops import _row_programs
    a = x._data
    ep = _row_programs.EPS[fn.__name__, dim, a.dtype, a.ndim, a.flags.c_contiguous]
    assert any(ep is e for ent in _SCRIPTED[fn, dim]._cache.values() for e in ent.eps.values())
    # a slice of -inf only gives nan, as in PyTorch
    assert np.isnan(eager.numpy()).any() == ((case, dim) in (("f32-4x4", -1), ("f64-5x3", 0)))


@jitorch.jit.script
def _relu(x):
    return jitorch.relu(x)


@pytest.mark.parametrize("dtype", [jitorch.float32, jitorch.float64])
def test_relu_keeps_negative_zero_in_every_tier(dtype):
    x = jitorch.tensor([-0.0, 0.0, -1.0, float("nan"), -float("inf"), 2.0, -0.0], dtype=dtype)
    want_sign = [True, False, False, False, False, False, True]
    inplace = x.clone()
    inplace.relu_()
    results = [jitorch.relu(x), F.relu(x), x.relu(), inplace]
    if dtype is jitorch.float32:  # compiled code: one dtype (the scalar template is generic)
        results += [_relu(x), jitorch.jit.trace(lambda t: jitorch.relu(t), (x,),
                                                check_trace=False)(x)]
    for got in results:
        assert np.signbit(got.numpy()).tolist() == want_sign
        np.testing.assert_array_equal(got.numpy(), [0, 0, 0, np.nan, 0, 2, 0])
    strided = F.relu(x[::2])  # -0.0, -1, -inf, -0.0
    assert np.signbit(strided.numpy()).tolist() == [True, False, False, True]
    assert np.signbit(jitorch.relu(jitorch.tensor(-0.0, dtype=dtype)).numpy())
