"""Row fusion (passes/fuse_rows.py, targets/cpu/lower_rows.py): softmax / layer-norm patterns run as
one loop nest over rows; values and grads vs eager, edge cases (NaN, -inf, large inputs, empty
rows, broadcasting along and across rows, rank 3, float64).

Every scripted function is module level and called with few (dtype, rank) patterns, so each
compiles once or twice for the whole file.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

import jitorch as t


def layernorm_softmax(x, w, b):
    mu = x.mean(-1, keepdim=True)
    d = x - mu
    var = (d * d).mean(-1, keepdim=True)
    y = d * t.rsqrt(var + 1e-5) * w + b
    e = t.exp(y - y.amax(-1, keepdim=True))
    return e / e.sum(-1, keepdim=True)


def softmax(x):
    e = t.exp(x - x.amax(-1, keepdim=True))
    return e / e.sum(-1, keepdim=True)


def log_softmax(x):
    z = x - x.amax(-1, keepdim=True)
    return z - t.log(t.exp(z).sum(-1, keepdim=True))


def layernorm_stats(x, w, b):
    # returns the per-row statistics too (row-sized outputs of the region)
    mu = x.mean(-1, keepdim=True)
    d = x - mu
    rstd = t.rsqrt((d * d).mean(-1, keepdim=True) + 1e-5)
    return d * rstd * w + b, mu, rstd


def rmsnorm(x, w):
    return x * t.rsqrt((x * x).mean(-1, keepdim=True) + 1e-6) * w


def log_softmax_lse(x, w):
    y = x * w
    return y - y.logsumexp(-1, keepdim=True), y.logsumexp(-1, keepdim=True)


def scaled_softmax(x, s):
    # s may be (rows, 1): an input broadcast along the row (the general nest)
    z = x * s
    e = t.exp(z - z.amax(-1, keepdim=True))
    return e / e.sum(-1, keepdim=True), z.amin(-1, keepdim=True)


def row_of_one(x, s):
    # s may be (rows, 1) while x is (rows, n): the reductions read only s, over one element
    z = s - s.amax(-1, keepdim=True)
    e = t.exp(z)
    return x * e / e.sum(-1, keepdim=True)


def shared_buffer(x):
    # u's row buffer is reused by v1 in the pass that still reads u for v2
    u = x - x.amax(-1, keepdim=True)
    s = u.sum(-1, keepdim=True)
    v1 = x * s
    v2 = u * s
    return v1 - v1.amax(-1, keepdim=True), v2


FUNCS = (shared_buffer, layernorm_softmax, softmax, log_softmax, layernorm_stats, rmsnorm, scaled_softmax,
         log_softmax_lse, row_of_one)
SF = {f.__name__: t.script(f) for f in FUNCS}
EAGER = {f.__name__: f for f in FUNCS}


def _rows_nodes(fn, *args):
    g = fn.graph_for(*args)
    return [n for n in g.nodes() if n.op == "prim::Fused" and n.attrs.get("kind") == "rows"]


def _check(name, *arrays, rtol=2e-5, atol=1e-6, dtype=np.float32):
    args = [t.from_numpy(np.asarray(a, dtype)) for a in arrays]
    got = SF[name](*args)
    ref = EAGER[name](*args)
    got = got if isinstance(got, tuple) else (got,)
    ref = ref if isinstance(ref, tuple) else (ref,)
    for g_, r_ in zip(got, ref):
        assert g_.dtype == r_.dtype and tuple(g_.shape) == tuple(r_.shape)
        np.testing.assert_allclose(g_.numpy(), r_.numpy(), rtol=rtol, atol=atol)
    assert SF[name].stats["interpreted"] == {}
    return got


rng = np.random.default_rng(0)


def R(*shape):
    return rng.standard_normal(shape)


def test_layernorm_softmax_is_one_loop_nest():
    x, w, b = (t.from_numpy(a.astype(np.float32)) for a in (R(3, 8), R(8), R(8)))
    nodes = _rows_nodes(SF["layernorm_softmax"], x, w, b)
    assert len(nodes) == 1
    assert nodes[0].attrs["ops"] == ("mean -> sub -> mul -> mean -> add -> rsqrt -> mul -> mul "
                                     "-> add -> amax -> sub -> exp -> sum -> div")
    # the whole program is that node: no other loop over the tensor
    g = SF["layernorm_softmax"].graph_for(x, w, b)
    assert [n.op for n in g.block.nodes if n.op != "prim::Constant"] == ["prim::Fused"]
    src = SF["layernorm_softmax"].code
    assert src.count("_jt_empty(") == 2  # the output and one row buffer (reused by 3 values)
    for shape in ((3, 8), (1, 1024), (64, 33), (1, 1)):
        _check("layernorm_softmax", R(*shape), R(shape[-1]), R(shape[-1]))


def test_reused_row_buffer_is_read_before_it_is_written():
    _check("shared_buffer", R(3, 11))
    # two outputs, one row buffer (u, then v1), one scratch row for the amax of the input
    assert SF["shared_buffer"].code.count("_jt_empty(") == 4


def test_broadcast_weights_and_rank3():
    _check("layernorm_softmax", R(2, 3, 16), R(16), R(16))
    _check("layernorm_softmax", R(2, 3, 16), R(3, 16), R(1, 1, 16))   # b broadcast over rows
    _check("layernorm_softmax", R(1, 3, 16), R(2, 1, 16), R(16))      # x broadcast over dim 0
    _check("layernorm_softmax", R(4, 16), R(1), R(16))                # w broadcast along rows
    with pytest.raises(RuntimeError, match="must match the size"):
        SF["layernorm_softmax"](*(t.from_numpy(a.astype(np.float32))
                                  for a in (R(4, 16), R(15), R(16))))


def test_softmax_stability_and_special_values():
    x = R(5, 12) * 1e4  # exp would overflow without the max subtraction
    _check("softmax", x)
    _check("log_softmax", x, rtol=1e-4, atol=1e-3)
    x = R(4, 6)
    x[0, 2] = -np.inf              # a zero probability
    x[1, :] = -np.inf              # all -inf: nan like eager
    x[2, 3] = np.nan               # nan propagates through amax
    x[3, 1] = np.inf
    got = _check("softmax", x)[0].numpy()
    assert got[0, 2] == 0 and np.isnan(got[1]).all() and np.isnan(got[2]).all()
    _check("log_softmax", x)


def test_empty_rows_and_empty_batch():
    _check("softmax", np.zeros((0, 7)))
    _check("layernorm_stats", np.zeros((0, 7)), R(7), R(7))
    _check("layernorm_stats", np.zeros((3, 0)), np.zeros(0), np.zeros(0))  # mean of 0: nan
    for fn in (SF["softmax"], softmax):   # amax of an empty row raises, compiled or not
        with pytest.raises(IndexError, match="Expected reduction dim 1 to have non-zero size"):
            fn(t.zeros(3, 0))


def test_row_outputs_and_rmsnorm_float64():
    y, mu, rstd = _check("layernorm_stats", R(6, 10), R(10), R(10))
    assert tuple(mu.shape) == (6, 1) and tuple(rstd.shape) == (6, 1)
    _check("layernorm_stats", R(2, 5, 10), R(10), R(10), dtype=np.float64, rtol=1e-12)
    _check("rmsnorm", R(6, 10), R(10))
    assert len(_rows_nodes(SF["rmsnorm"], t.randn(2, 3), t.randn(3))) == 1


def _outer_row_loops(code: str) -> int:
    """The loop nests of a program's row region: its least indented `for` lines."""
    fors = [ln for ln in code.splitlines() if re.match(r"\s*for \w+ in range\(\w+\):$", ln)]
    least = min(len(ln) - len(ln.lstrip()) for ln in fors)
    return sum(1 for ln in fors if len(ln) - len(ln.lstrip()) == least)


def test_input_broadcast_along_the_row_takes_the_one_nest():
    # s of last dim 1 is read along the row: the same nest reads it through a 0/1 multiplier
    # (a second, general nest doubled the compile cost of every such row kernel: issue 17)
    _check("scaled_softmax", R(4, 9), R(4, 1))
    assert _outer_row_loops(SF["scaled_softmax"].code) == 1
    _check("scaled_softmax", R(4, 9), R(4, 9))
    _check("scaled_softmax", R(4, 1), R(4, 9))   # x broadcast along the row instead
    _check("scaled_softmax", R(4, 1), R(1, 1))   # rows of length 1
    _check("scaled_softmax", R(1, 9), R(3, 1))   # both broadcast, different dims


def test_reduction_of_a_row_broadcast_along_a_longer_row():
    # the reductions run over s's own row (one element), not x's: the interpreter runs that
    # call (eager's result); rows of one length run compiled
    _check("row_of_one", R(4, 9), R(4, 9))
    assert _outer_row_loops(SF["row_of_one"].code) == 1
    x, s = (t.from_numpy(a.astype(np.float32)) for a in (R(4, 9), R(4, 1)))
    np.testing.assert_allclose(SF["row_of_one"](x, s).numpy(), row_of_one(x, s).numpy(),
                               rtol=1e-6)


def test_grads_through_the_fused_program():
    f = SF["layernorm_softmax"]
    xs = [R(4, 8), R(8), R(8)]
    args = [t.from_numpy(a.astype(np.float64)).requires_grad_() for a in xs]
    ref_args = [t.from_numpy(a.astype(np.float64)).requires_grad_() for a in xs]
    g = t.from_numpy(R(4, 8))
    out = f(*args)
    (out * g).sum().backward()
    (layernorm_softmax(*ref_args) * g).sum().backward()
    np.testing.assert_allclose(out.detach().numpy(),
                               layernorm_softmax(*ref_args).detach().numpy(), rtol=1e-12)
    for a, r in zip(args, ref_args):
        np.testing.assert_allclose(a.grad.numpy(), r.grad.numpy(), rtol=1e-9, atol=1e-12)
    assert f.stats["interpreted"] == {}


def test_grads_log_softmax_float32():
    f = SF["log_softmax"]
    x = t.from_numpy(R(3, 7).astype(np.float32)).requires_grad_()
    xr = t.from_numpy(x.detach().numpy().copy()).requires_grad_()
    f(x).sum().backward()
    log_softmax(xr).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xr.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_log_softmax_via_logsumexp():
    x = R(4, 6)
    x[0, 1], x[1, :], x[2, 2] = np.nan, -np.inf, np.inf
    x[3] *= 1e4
    got = _check("log_softmax_lse", x, np.abs(R(6)) + 0.1, atol=1e-3)
    assert np.isneginf(got[1].numpy()[1, 0])  # all -inf: -inf like eager, not nan
    assert len(_rows_nodes(SF["log_softmax_lse"], t.randn(2, 3), t.randn(3))) == 1
    _check("log_softmax_lse", R(2, 3, 5), R(2, 1, 5))
    _check("log_softmax_lse", R(4, 6), R(4, 1))   # the general nest
    _check("log_softmax_lse", np.zeros((3, 0)), np.zeros(0))  # empty rows: -inf


def _max_then_min(x):
    return x.amax(-1) - x.amin(-1)


def test_row_helpers_are_library_code_compiled_once():
    # the unrolled row reductions live in row_helpers.py (compiled once per process and dtype,
    # cached), not in each kernel module that calls them (typed and compiled again per module)
    from jitorch.script.targets.cpu import row_helpers
    f = t.jit.trace(_extremes, (t.randn(3, 4, 5),))
    g = t.jit.trace(_max_then_min, (t.randn(2, 7),))
    x, y = t.randn(3, 4, 5), t.randn(2, 7)
    f(x)
    compiled = {k: len(v.overloads) for k, v in (("amax", row_helpers._row_amax),
                                                  ("amin", row_helpers._row_amin))}
    np.testing.assert_array_equal(g(y).numpy(), _max_then_min(y).numpy())
    assert f.stats["interpreted"] == {} and g.stats["interpreted"] == {}
    for fn in (f, g):
        assert "_row_amax(" in fn.code and "def _row_amax" not in fn.code
    # the second function's programs compile no helper of their own (a warm disk cache loads
    # the helpers with the programs: then none is compiled in this process at all)
    assert {k: len(v.overloads) for k, v in (("amax", row_helpers._row_amax),
                                             ("amin", row_helpers._row_amin))} == compiled


def _extremes(x):
    return x.amax(-1), x.amin(-1, keepdim=True), x.amax(1)


def test_last_dim_amax_amin_outside_rows():
    # lower_reduce takes the same unrolled row helper for a lone last-dim amax/amin
    f = t.jit.trace(_extremes, (t.randn(3, 4, 5),))
    for shape in ((3, 4, 5), (2, 1, 17), (1, 2, 1)):
        x = t.from_numpy(R(*shape).astype(np.float32))
        x[0, 0, 0] = float("nan")
        x[-1, -1, -1] = float("-inf")
        for a, b in zip(f(x), _extremes(x)):
            np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert f.stats["interpreted"] == {} and "_row_amax(" in f.code
    with pytest.raises(IndexError, match="Expected reduction dim 2 to have non-zero size"):
        f(t.zeros(2, 3, 0))
