"""TorchScript as people write it (issue 11): `with no_grad():` in scripted code, and functions
defined inside functions whose annotations name the enclosing function's variables. Each case
is checked against the eager Python function."""
# (no `from __future__ import annotations`: the annotations below are evaluated at definition)

import numpy as np
import pytest

import jitorch


def _ng(x, w):
    with jitorch.no_grad():
        y = x * 2
        n = 3
    with jitorch.enable_grad():
        z = x * w
    return y * n + z


def _ng_return(x):
    with jitorch.no_grad():
        return x * 2, x + 1


def _set_grad(x):
    with jitorch.set_grad_enabled(False):
        y = x.exp()
    return y + x


def _grads(f, *args):
    out = f(*args)
    out.sum().backward()
    return out.detach().numpy(), [a.grad.numpy().copy() for a in args]


def _fresh(*vals):
    return [jitorch.tensor(v, requires_grad=True) for v in vals]


@pytest.mark.parametrize("fn,vals", [(_ng, ([1.0, 2.0], [3.0, -1.0])), (_set_grad, ([0.5, 1.0],))])
def test_no_grad_block_matches_eager_values_and_grads(fn, vals):
    want, want_g = _grads(fn, *_fresh(*vals))
    sf = jitorch.jit.script(fn)
    got, got_g = _grads(sf, *_fresh(*vals))
    np.testing.assert_allclose(got, want, rtol=1e-6)
    for a, b in zip(got_g, want_g):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    assert "_no_grad_value" in str(sf.graph)  # compiled: no Python call for the block
    assert "PythonOp" not in str(sf.graph)


def test_return_inside_no_grad_has_no_history():
    x = jitorch.ones(3, requires_grad=True)
    a, b = jitorch.jit.script(_ng_return)(x)
    ea, eb = _ng_return(x)
    assert not a.requires_grad and not b.requires_grad and not ea.requires_grad
    np.testing.assert_array_equal(a.numpy(), ea.numpy())
    np.testing.assert_array_equal(b.numpy(), eb.numpy())


def test_grad_mode_blocks_are_named_in_errors():
    def bad(x):
        with jitorch.no_grad() as g:
            y = x * 2
        return y
    with pytest.raises(jitorch.jit.ScriptError, match="'with no_grad\\(\\) as name:'"):
        jitorch.jit.script(bad)

    def other(x):
        with open("f"):
            y = x
        return y
    with pytest.raises(jitorch.jit.ScriptError, match="with statements are not supported"):
        jitorch.jit.script(other)


# --- names of the enclosing function in annotations -----------------------------------------
def _make():
    T = jitorch.Tensor  # a local alias only the annotations use (no closure cell keeps it)

    @jitorch.jit.script
    class Point:
        def __init__(self, v: jitorch.Tensor):
            self.v = v

    def inner(x: T) -> T:
        return x * 2

    def make(x: T) -> Point:
        return Point(x + 1)

    def use(p: Point) -> T:
        return p.v * 3
    return inner, make, use


def test_annotations_name_the_enclosing_scope():
    inner, make, use = _make()  # the enclosing frame is gone
    x = jitorch.arange(3.0)
    np.testing.assert_array_equal(jitorch.jit.script(inner)(x).numpy(), inner(x).numpy())
    p = jitorch.jit.script(make)(x)
    np.testing.assert_array_equal(p.v.numpy(), (x + 1).numpy())
    np.testing.assert_array_equal(jitorch.jit.script(use)(p).numpy(), ((x + 1) * 3).numpy())


def _make_plain():
    class Acc:  # not decorated: compiled when scripted code first uses it, as TorchScript does
        def __init__(self, total: jitorch.Tensor):
            self.total = total

        def add(self, x: jitorch.Tensor) -> jitorch.Tensor:
            return self.total + x

    def start(x: jitorch.Tensor) -> Acc:
        return Acc(x * 2)

    def step(a: Acc, x: jitorch.Tensor) -> jitorch.Tensor:
        return a.add(x)
    return start, step


def test_undecorated_classes_of_the_enclosing_scope_compile():
    start, step = _make_plain()
    x = jitorch.arange(3.0)
    a = jitorch.jit.script(start)(x)
    np.testing.assert_array_equal(a.total.numpy(), (x * 2).numpy())
    np.testing.assert_array_equal(jitorch.jit.script(step)(a, x).numpy(), step(a, x).numpy())
