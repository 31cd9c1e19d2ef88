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
    assert base[0:4]._view_spec[2] == {"basic": ()}  # a whole-dim slice trims, as _parse does
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
