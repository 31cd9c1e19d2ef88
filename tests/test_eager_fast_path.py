"""The registry's eager fast path (`_ops/registry.py: _fast_block`) against the general path.

Each public op function runs a generated shortcut for the common call; `dispatch` is the
general path it must agree with exactly: values, dtypes, errors, view and version sharing, and
what autograd records. Each case below runs both and compares.
"""
import inspect

import numpy as np
import pytest

import jitorch as jt
from jitorch import nn
from jitorch._ops.registry import OPS, dispatch

FLOATS = (jt.float32, jt.float64, jt.float16, jt.bfloat16)
DTYPES = FLOATS + (jt.int64, jt.int8, jt.uint8, jt.bool)


def _tensor(d, shape=(3, 4), seed=0):
    a = np.random.default_rng(seed).standard_normal(shape) * 3
    a.flat[0] = -0.0
    return jt.tensor(a, dtype=d) if d.is_floating_point else jt.tensor(a.round(), dtype=jt.float64).to(d)


def _outcome(f):
    try:
        r = f()
    except Exception as e:  # noqa: BLE001  (the error is part of the outcome compared)
        return ("error", type(e), str(e))
    return ("ok", r)


def _same(a, b):
    assert a[0] == b[0], (a, b)
    if a[0] == "error":
        assert a[1:] == b[1:]
        return
    ra, rb = a[1], b[1]
    assert type(ra) is type(rb) and ra.dtype is rb.dtype and ra.shape == rb.shape
    np.testing.assert_array_equal(ra.detach().float().numpy(), rb.detach().float().numpy())
    assert np.array_equal(np.signbit(ra.detach().float().numpy()),
                          np.signbit(rb.detach().float().numpy()))
    assert ra.requires_grad == rb.requires_grad
    assert (ra.grad_fn is None) == (rb.grad_fn is None)
    if ra.grad_fn is not None:
        assert ra.grad_fn.name() == rb.grad_fn.name()


def _attrs(op, **given):
    """The attrs dict the public function passes to dispatch: the impl's defaults, then `given`."""
    ps = inspect.signature(op.impl).parameters
    return {a: given.get(a, ps[a].default) for a in op.attrs}


UNARY = ("relu", "exp", "neg", "abs", "sigmoid", "sqrt", "t", "sum", "logical_not")
BINARY = ("add", "mul", "sub", "div", "maximum", "eq", "matmul")


@pytest.mark.parametrize("grad", [False, True])
@pytest.mark.parametrize("d", DTYPES, ids=str)
def test_ops_agree_with_dispatch(d, grad):
    x, y = _tensor(d), _tensor(d, seed=1)
    if grad and d.is_floating_point:
        x.requires_grad_()
    for name in UNARY:
        op = OPS[name]
        _same(_outcome(lambda: op.fn(x)), _outcome(lambda: dispatch(op, (x,), _attrs(op))))
    for name in BINARY:
        op = OPS[name]
        yy = y.t() if name == "matmul" else y
        _same(_outcome(lambda: op.fn(x, yy)),
              _outcome(lambda: dispatch(op, (x, yy), _attrs(op))))
    for name in ("cat", "stack"):  # a list of tensors: its own shortcut
        op = OPS[name]
        for ts in ([x, y], (x, y.t()), [x], []):
            _same(_outcome(lambda: op.fn(ts, 1)),
                  _outcome(lambda: dispatch(op, (ts,), _attrs(op, dim=1))))
    with jt.no_grad():
        _same(_outcome(lambda: jt.add(x, y)),
              _outcome(lambda: dispatch(OPS["add"], (x, y), _attrs(OPS["add"]))))


def test_the_fast_path_is_taken_and_memoised():
    OPS["add"].fast.clear()
    x = _tensor(jt.float32)
    jt.add(x, x)
    assert OPS["add"].fast[jt.float32] is jt.float32  # memoised: no cast, output float32
    jt.add(x.half(), x.half())
    assert OPS["add"].fast[jt.float16] is False  # computed in float32: the general path
    with pytest.raises(RuntimeError, match="Boolean inputs not supported for relu"):
        jt.relu(_tensor(jt.bool))
    assert OPS["relu"].fast[jt.bool] is False  # the rule's error: raised by the general path
    old = jt.get_default_dtype()
    try:
        jt.set_default_dtype(jt.float64)
        assert not OPS["add"].fast  # the "float" rules read the default dtype
    finally:
        jt.set_default_dtype(old)


def test_errors_attributes_and_operands():
    x = _tensor(jt.float32)
    with pytest.raises(RuntimeError, match=r"size of tensor a \(4\) must match the size of "
                                           r"tensor b \(3\)"):
        jt.add(x, _tensor(jt.float32, (3, 3)))
    with pytest.raises(RuntimeError, match="Boolean alpha only supported"):
        jt.add(x, x, alpha=True)  # a non-default alpha reaches the dtype rule
    np.testing.assert_allclose(jt.add(x, x, alpha=2).numpy(), 3 * x.numpy())
    # mixed dtypes and 0-d operands promote on the general path
    assert jt.add(x, _tensor(jt.float64)).dtype is jt.float64
    assert jt.add(x, jt.tensor(1.0, dtype=jt.float64)).dtype is jt.float32
    out = jt.empty(3, 4)
    assert jt.add(x, x, out=out) is out
    w = nn.Parameter(_tensor(jt.float32))  # a Parameter is a fast operand; results are Tensors
    r = jt.mul(w, x)
    assert type(r) is jt.Tensor and r.grad_fn.name() == "MulBackward0"


def test_views_and_autograd_through_the_fast_path():
    base = _tensor(jt.float32, (4, 4))
    for v in (base.view(-1), base.reshape(2, 8), base[1:3], base[3], base.t()):
        assert v._base is base and v._version is base._version
    v = base[1:3]
    v.add_(1.0)
    assert base._version[0] == 1
    np.testing.assert_array_equal(base.numpy()[1:3], v.numpy())
    assert base[0:4]._view_fn.attrs == {"basic": ()}  # a whole-dim slice trims, as _parse does
    assert base[::2].shape == (2, 4) and base[-3:].shape == (3, 4)
    with pytest.raises(ValueError, match="step must be greater than zero"):
        base[::-1]

    a = _tensor(jt.float32).requires_grad_()
    b = _tensor(jt.float32, seed=1).requires_grad_()
    ((jt.relu(a) * b + a).exp().sum()).backward()
    ga, gb = a.grad.numpy().copy(), b.grad.numpy().copy()
    a.grad = b.grad = None
    mul, add, relu, exp = (OPS[n] for n in ("mul", "add", "relu", "exp"))
    h = dispatch(mul, (dispatch(relu, (a,), {}), b), {})
    h = dispatch(exp, (dispatch(add, (h, a), _attrs(add)),), {})
    dispatch(OPS["sum"], (h,), _attrs(OPS["sum"])).backward()
    np.testing.assert_array_equal(ga, a.grad.numpy())
    np.testing.assert_array_equal(gb, b.grad.numpy())


# --- the shortcuts in front of the registry's fast path (issue 20: eager latency) -------------
def _spy_dispatch(monkeypatch, name):
    """Make op `name`'s general path (the `dispatch` its generated function calls) fail, so a
    call that still works took the fast path."""
    def fail(op, slots, attrs):
        raise AssertionError(f"{op.name} took the general path")
    monkeypatch.setitem(OPS[name].fn.__globals__, "_dispatch", fail)


@pytest.mark.parametrize("args,kw,size", [
    ((-1,), {}, (-1,)), ((2, 8), {}, (2, 8)), (((2, 8),), {}, (2, 8)), (([8, 2],), {}, (8, 2)),
    ((), {"size": (16,)}, (16,)), ((np.int64(16),), {}, (16,)), ((jt.tensor(16),), {}, (16,))])
def test_view_and_reshape_sizes_agree_with_dispatch(args, kw, size):
    base = _tensor(jt.float32, (4, 4)).requires_grad_()
    for name, fn, attr in (("view", base.view, "size"), ("reshape", base.reshape, "shape")):
        kws = {attr: v for v in kw.values()}
        _same(_outcome(lambda: fn(*args, **kws)),
              _outcome(lambda: dispatch(OPS[name], (base,), {attr: size})))
        v = fn(*args, **kws)
        assert v._base is base and v._version is base._version
        assert v._view_fn.attrs == {attr: size}


def test_view_is_the_op_and_answers_dtype_and_errors():
    assert jt.Tensor.view is OPS["view"].fn  # no wrapper in front of `x.view(-1)`
    base = _tensor(jt.float32, (4, 4))
    vd = OPS["_view_dtype"]
    for call in (lambda: base.view(jt.int32), lambda: base.view(dtype=jt.int32)):
        _same(_outcome(call), _outcome(lambda: dispatch(vd, (base,), {"dtype": jt.int32})))
        assert call()._base is base
    view = OPS["view"]
    for bad, size in ((lambda: base.t().view(-1), (-1,)), (lambda: base.view(5), (5,)),
                      (lambda: base.view(-1, -1), (-1, -1))):
        got = _outcome(bad)
        assert got[0] == "error" and got[1] is RuntimeError
        _same(got, _outcome(lambda: dispatch(view, (base.t() if size == (-1,) else base,),
                                             {"size": size})))
    with pytest.raises(TypeError, match="expected a sequence of ints, but got an element of "
                                        "type str"):
        base.view("a")


def test_maybe_views_share_exactly_when_numpy_shares():
    """reshape's result is a view (shared storage and version) exactly when NumPy's is: the
    fast path's base test, against `np.may_share_memory` and dispatch's marking."""
    base = _tensor(jt.float32, (4, 4))
    reshape = OPS["reshape"]
    for x, shape in ((base, (16,)), (base.t(), (16,)), (base[:, :2], (2, 2, 2)),
                     (base[1:3], (8,)), (base[:, 1], (2, 2)), (base[::2].t(), (8,))):
        r = x.reshape(shape)
        ref = dispatch(reshape, (x,), {"shape": shape})
        shares = np.may_share_memory(r._data, base._data)
        assert (r._base is base) == shares == (ref._base is base)
        assert (r._version is base._version) == shares
        np.testing.assert_array_equal(r.numpy(), ref.numpy())


@pytest.mark.parametrize("d", [jt.int64, jt.int32])
def test_index_tensor_fast_path(monkeypatch, d):
    x = _tensor(jt.float32, (5, 3)).requires_grad_()
    idx = jt.tensor([4, 0, -1, 4], dtype=d)
    index = OPS["_index"]
    for i in (idx, idx.view(2, 2)):
        _same(_outcome(lambda: x[i]), _outcome(lambda: dispatch(index, (x, [i]), {
            "basic": (), "adv": (0,)})))
        _same(_outcome(lambda: x[i]), _outcome(lambda: x[(i,)]))  # _parse's split
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 5"):
        x[jt.tensor([1, 5])]
    x[idx].sum().backward()
    np.testing.assert_array_equal(x.grad.numpy()[:, 0], [1, 0, 0, 0, 3])
    from jitorch._ops import indexing
    monkeypatch.setattr(indexing, "_parse", None)  # x[index tensor] no longer parses...
    _spy_dispatch(monkeypatch, "_index")  # ...and runs the op's fast path
    assert x[idx].grad_fn.name() == "IndexBackward0"


def test_cat_common_join_agrees_with_the_checks(monkeypatch):
    x, y = _tensor(jt.float32), _tensor(jt.float32, seed=1)
    cat = OPS["cat"]
    cases = [([x, y], 0), ([x, y], -1), ([x, y.t()], 0), ([x, _tensor(jt.float64)], 0),
             ([x, jt.tensor([])], 0), ([x.view(-1), jt.tensor([])], 0), ([x, y], 2),
             ([jt.tensor(1.0), jt.tensor(2.0)], 0), ([jt.tensor([]), jt.tensor([])], 1),
             ([x, jt.zeros(0, 4)], 0), ([x], 1), ([_tensor(jt.int64), x], -2),
             ([_tensor(jt.int8), _tensor(jt.uint8)], 0), ([x, jt.zeros(3, 2)], 0)]
    for ts, dim in cases:
        _same(_outcome(lambda: jt.cat(ts, dim)),
              _outcome(lambda: dispatch(cat, (ts,), {"dim": dim})))
    assert jt.cat([_tensor(jt.int64), x]).dtype is jt.float32  # (NumPy's: float64)
    from jitorch._ops import join
    monkeypatch.setattr(join, "_cat_arrays", None)  # the common join: no per-array checks
    r = jt.cat([x, y], 1)
    assert r.shape == (3, 8) and r._base is None and not np.shares_memory(r._data, x._data)
    r = jt.cat([x.t(), y.t()], -1)
    np.testing.assert_array_equal(r.numpy(), np.concatenate([x.numpy().T, y.numpy().T], 1))
    with pytest.raises(TypeError):  # a dtype mix: PyTorch's promotion, in the checked join
        jt.cat([_tensor(jt.int64), x])


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_functional_softmax_calls_the_one_op_directly(monkeypatch, name):
    """F.softmax's common call runs the fused op (through its generated function, as every op)
    without the autocast wrapper of `jitorch.softmax` in front; under autocast it goes through
    that wrapper; dtype=, int, empty and out-of-range calls run the composite."""
    fn = getattr(jt.nn.functional, name)
    x = _tensor(jt.float32, (3, 4)).requires_grad_()
    want = getattr(jt, name)(x, 1)
    monkeypatch.setattr(jt.nn.functional, "_" + name, None)  # the wrapped public function
    got = fn(x, dim=1)
    _same(("ok", got), ("ok", want))
    fused = OPS["_" + name + "_fused"]
    _same(("ok", got), _outcome(lambda: dispatch(fused, (x,), {"dim": 1})))
    assert got.grad_fn.name() == want.grad_fn.name()
    composite = fn(x, dim=1, dtype=jt.float32)  # the composite's ops: another last node
    assert composite.grad_fn.name() != got.grad_fn.name()
    np.testing.assert_allclose(composite.detach().numpy(), got.detach().numpy(), rtol=1e-6)
    assert fn(x[:0], dim=0).shape == (0, 4)
    with pytest.raises(NotImplementedError):
        fn(x.int(), dim=1)
    with pytest.raises(IndexError):
        fn(x, dim=2)
    with jt.autocast("cpu"):  # autocast's policy applies: the wrapped public function
        with pytest.raises(TypeError):
            fn(x, dim=1)



@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_without_grad_runs_the_program_without_the_op_function(monkeypatch, name):
    """A softmax that records nothing (no requires_grad input, no profiler, mode or device)
    runs the fused op's program from `_run_softmax`, the op function skipped: the op's values
    to the bit for C-ordered, transposed and strided inputs and negative dims; a
    requires_grad input, or an active profiler, still goes through the op function."""
    fn = getattr(jt.nn.functional, name)
    fused = OPS["_" + name + "_fused"]
    # the keys of test_eager_fused_ops and of the test above, and for softmax one non-contiguous
    # input (each new key compiles a program: ~1 CPU-s)
    x3 = _tensor(jt.float64, (3, 4, 2))
    cases = [(_tensor(jt.float32), 1), (x3, -3), (x3, -1)]
    if name == "softmax":
        cases.append((x3.transpose(0, 2), -1))
    for x, dim in cases:
        _same(_outcome(lambda: fn(x, dim)), _outcome(lambda: dispatch(fused, (x,), {"dim": dim})))
    xg = cases[-1][0].detach().requires_grad_()
    fn(xg, -1).pow(2).sum().backward()
    g = xg.grad
    xg.grad = None
    dispatch(fused, (xg,), {"dim": -1}).pow(2).sum().backward()
    np.testing.assert_array_equal(g.numpy(), xg.grad.numpy())
    monkeypatch.setitem(fused.fn.__globals__, "_impl", None)  # the op function's fast path
    want = dispatch(fused, (x3,), {"dim": 0})
    _same(("ok", fn(x3, 0)), ("ok", want))
    with pytest.raises(TypeError):
        fn(xg, -1)
    with jt.autograd.profiler.profile() as prof:
        y = fn(x3, 0)
    _same(("ok", y), ("ok", want))
    assert [e.name for e in prof.events()] == [f"aten::_{name}_fused"]

def test_one_switch_follows_every_reason_to_leave_the_fast_path():
    """The fast path reads one switch (`_profiling.slow`) for the profiler, autocast, an open
    forward-AD level and a dispatch mode: each sets it while active and clears it after; a mode
    pushed on another thread sends this thread's ops to the general path, which runs them
    as usual (modes are per thread)."""
    import threading
    from jitorch import _profiling
    from jitorch._ops import registry
    from jitorch.autograd import forward_ad as fwAD
    x = _tensor(jt.float32)
    base = _profiling.slow[0]  # (what other tests left open, e.g. a mode on a dead thread)
    with jt.autograd.profiler.profile():
        assert _profiling.slow[0] & _profiling.INTERCEPT
    with jt.autocast("cpu"):
        assert _profiling.slow[0]
    with fwAD.dual_level():
        assert _profiling.slow[0]
        y = fwAD.make_dual(x, jt.ones_like(x)).exp()
        np.testing.assert_allclose(fwAD.unpack_dual(y).tangent.numpy(), y.detach().numpy())
    assert _profiling.slow[0] == base
    seen, pushed, done = [], threading.Event(), threading.Event()

    def other():
        registry.push_mode(lambda op, slots, attrs: seen.append(op.name) or "mode")
        try:
            assert jt.exp(x) == "mode"
            pushed.set()
            done.wait(10)
        finally:
            registry.pop_mode()

    th = threading.Thread(target=other)
    th.start()
    assert pushed.wait(10) and _profiling.slow[0]
    _same(("ok", x.exp()), ("ok", dispatch(OPS["exp"], (x,), {})))
    done.set()
    th.join()
    assert seen == ["exp"] and _profiling.slow[0] == base


def test_a_thread_that_ends_with_a_mode_pushed_is_counted_out():
    """A thread that ends with a dispatch mode still pushed no longer counts as one with a mode:
    the fast path's switch goes back to what it was (it stayed on for good, every op of every
    thread taking the general path)."""
    import gc
    import threading
    from jitorch import _profiling
    from jitorch._ops import registry
    on, bit = registry._modes_on[0], _profiling.slow[0] & _profiling.MODES
    th = threading.Thread(target=lambda: registry.push_mode(lambda op, slots, attrs: "mode"))
    th.start()
    th.join()
    gc.collect()  # (CPython drops the thread's state at its end; other runtimes may need this)
    assert registry._modes_on[0] == on and _profiling.slow[0] & _profiling.MODES == bit
