"""VJP rules of the registry that the compiler differentiates with (no compiler-only twins).

`cat`/`stack` grads are narrows/selects of the incoming grad (ops that lower, with run-time
offsets), and `select`'s grad writes into zeros with `_select_write`, which takes the index as a
value: a run-time index (an int argument, a loop counter) stays one in the compiled backward,
where a rule converting it would bake the example's index into the program.
"""
import numpy as np
import pytest

import jitorch as t


def _grads(fn, args, *extra):
    args = [a.detach().requires_grad_(True) for a in args]
    out = fn(*args, *extra)
    go = t.tensor(np.random.default_rng(1).standard_normal(out.shape), dtype=out.dtype)
    (out * go).sum().backward()
    return [a.grad.numpy() for a in args]


def _check(fn, args, *extra):
    """The scripted fn's grads equal eager's, and nothing ran in the interpreter (a backward
    that is not lowered shows only as a new interpreted reason)."""
    sf = _SCRIPTED.setdefault(fn, t.jit.script(fn))
    before = dict(t.jit.stats()["interpreted_reasons"])
    got = _grads(sf, args, *extra)
    want = _grads(fn, args, *extra)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)
    assert t.jit.stats()["interpreted_reasons"] == before


_SCRIPTED: dict = {}


def cat_rows(x, y):
    return t.cat([x * 2.0, y, x], 1).tanh()


def stack_mid(x, y):
    return t.stack([x, y * 3.0], -2).sin()


def select_row(x, i: int):
    return x.select(0, i) * 2.0


def select_in_loop(x, n: int):
    h = x.select(0, 0) * 0.0
    for i in range(n):
        # a run-time index into a per-step value, and into a captured one
        h = (h + t.stack([h, x.select(0, 1)], 0).select(0, i % 2) * x.select(0, i)).tanh()
    return h


def cat_in_loop(x, n: int):
    h = x.select(0, 0) * 0.0
    for i in range(n):
        h = (t.cat([h, x.select(0, i)], 0).narrow(0, 1, 3) * h + 1.0).tanh()
    return h


R = np.random.default_rng(0)


def _r(*shape):
    return t.tensor(R.standard_normal(shape), dtype=t.float64)


@pytest.mark.parametrize("fn", [cat_rows, stack_mid])
def test_join_backward_is_compiled_and_correct(fn):
    _check(fn, [_r(3, 2), _r(3, 2)])
    _check(fn, [_r(5, 4), _r(5, 4)])  # new sizes: the same programs


def test_select_with_a_run_time_index_is_not_baked():
    x = _r(4, 3)
    for i in (0, 2, -1, 1):  # one program: the index is a run-time int
        _check(select_row, [x], i)


@pytest.mark.parametrize("fn", [select_in_loop, cat_in_loop])
def test_joins_and_selects_in_a_loop(fn):
    _check(fn, [_r(4, 3)], 4)
    _check(fn, [_r(6, 3)], 5)


def narrow_at(x, i: int):
    return x.narrow(0, i, 2) * 2.0


def test_a_rule_that_would_bake_a_run_time_int_is_not_compiled_wrong():
    """narrow's rule checks its start with operator.index, which would bake a run-time start:
    autodiff refuses it (the interpreter differentiates eagerly) instead of compiling the
    example's start into the backward."""
    sf = t.jit.script(narrow_at)
    x = _r(5, 3)
    for i in (0, 3, 1):
        got = _grads(sf, [x], i)
        want = _grads(narrow_at, [x], i)
        np.testing.assert_allclose(got[0], want[0])
