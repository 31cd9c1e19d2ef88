"""In-place writes in scripted code: PyTorch semantics for the caller and inside the function.

Every case runs the plain Python function eagerly and the scripted one on equal copies of the
arguments, and compares the results AND the arguments afterwards (writes to arguments, through
views and aliases, must reach the caller). Static-index writes must be compiled (no PythonOp).
"""
from typing import List, Tuple

import numpy as np
import pytest

import jitorch as t
from jitorch.jit import ScriptError


def inner(x, y):
    x.add_(1)
    y.mul_(2)
    return x, y + 1


# -- functions under test ----------------------------------------------------------------------
def f_issue_example(x):
    x.add_(1)
    x[0] = 5.0
    return x.sum()


def f_select_view(x):
    x[0].mul_(2)
    return x


def f_flat_view_zero(x):
    x.view(-1).zero_()
    return x.sum()


def f_local_view(x):
    y = x.view(2, 2)
    y.add_(1)
    return x * 1


def f_alias_sees_base_write(x):
    y = x[1]
    x.add_(10)
    return y * 1


def f_loop(x):
    for _ in range(3):
        x.add_(1)
    return x.sum()


def f_if(x, n: int):
    if n > 0:
        x.mul_(2)
    else:
        x[1] = -1.0
    return x.sum()


def f_augassign(x):
    x += 1
    x[1:, 0] = t.tensor([7.0])
    return x.sum()


def f_transpose_view(x):
    y = x.t()
    y[0] = 3.0
    return x * 1


def f_local_alias(x):
    z = x * 2
    w = z
    w.add_(1)
    return z


def f_copy_fill(x, y):
    x.copy_(t.ones(2))
    y.fill_(3)
    return x + y


def f_slice_augassign(x):
    x[:, 1] += 1
    return x.sum()


def f_runtime_index(x, i: int):
    x[i] = 4.0
    return x.sum()


def f_runtime_slice_view(x, i: int):
    x[i:].zero_()
    return x.sum()


def f_permute_view(x):
    x.permute(1, 0)[0] = 1.0
    return x.sum()


def f_returns_argument(x):
    x.sub_(1)
    return x


def f_broadcast_value(x):
    x[0] = t.ones(1, 3)
    x[1:] = t.tensor([2.0, 3.0, 4.0])
    return x


def f_unsqueeze_view(x):
    x.unsqueeze(0).mul_(3)
    return x


def f_callee(a, b):
    p, q = inner(a, b)
    p.add_(100)
    return p, q, a


def f_view_then_loop(x):
    y = x[0]
    s = x.sum() * 0
    for i in range(2):
        y.add_(1)
        s = s + x.sum()  # x is not carried by the loop, but reads the written storage
    return x.sum() + s


def f_mask_write(x):
    x[x > 2] = 0.0  # a tensor index: a PythonOp, still written back
    return x


def f_ellipsis_index(x, j: int):
    x[..., j] = 7.0
    x[0, ..., 1] *= 2
    return x.sum()


def f_list_elements(xs: List[t.Tensor]):
    xs[1][0] = 9.0
    y = xs[0]
    y.mul_(2)
    return xs[0] + 0


def f_sgd(params: List[t.Tensor], grads: List[t.Tensor], lr: float):
    for p, g in zip(params, grads):
        p.add_(g, alpha=-lr)
    return params[0].sum()


def f_int_inplace_float(x):
    x.mul_(0.5)
    return x


def f_out_of_bounds(x):
    x[5] = 1.0
    return x


def f_bad_shape(x):
    x[0] = t.ones(4)
    return x


def f_no_writes(x):
    return x * 2


R = lambda: t.arange(6.0).reshape(2, 3)  # noqa: E731
CASES = [
    (f_issue_example, lambda: (t.zeros(3),)),
    (f_select_view, lambda: (R(),)),
    (f_flat_view_zero, lambda: (R(),)),
    (f_local_view, lambda: (t.arange(4.0),)),
    (f_alias_sees_base_write, lambda: (R(),)),
    (f_loop, lambda: (R(),)),
    (f_if, lambda: (R(), 1)),
    (f_if, lambda: (R(), 0)),
    (f_augassign, lambda: (R(),)),
    (f_transpose_view, lambda: (R(),)),
    (f_local_alias, lambda: (R(),)),
    (f_copy_fill, lambda: (t.zeros(2, 2), t.zeros(2, dtype=t.int64))),
    (f_slice_augassign, lambda: (R(),)),
    (f_runtime_index, lambda: (t.zeros(3), -1)),
    (f_runtime_slice_view, lambda: (t.arange(5.0), 2)),
    (f_permute_view, lambda: (R(),)),
    (f_returns_argument, lambda: (R(),)),
    (f_broadcast_value, lambda: (t.zeros(3, 3),)),
    (f_unsqueeze_view, lambda: (R(),)),
    (f_callee, lambda: (t.zeros(2), t.ones(2))),
    (f_view_then_loop, lambda: (R(),)),
    (f_mask_write, lambda: (R(),)),
    (f_ellipsis_index, lambda: (R(), -1)),
    (f_list_elements, lambda: ([t.ones(2), t.ones(3)],)),
    (f_sgd, lambda: ([t.ones(2), t.ones(3)], [t.ones(2), t.full((3,), 2.0)], 0.5)),
]
_SCRIPTED = {}


def scripted(fn):
    if fn not in _SCRIPTED:
        _SCRIPTED[fn] = t.jit.script(fn)
    return _SCRIPTED[fn]


def same(a, b):
    if isinstance(a, (tuple, list)):
        assert isinstance(b, (tuple, list)) and len(a) == len(b)
        for x, y in zip(a, b):
            same(x, y)
    elif isinstance(a, t.Tensor):
        assert isinstance(b, t.Tensor) and a.dtype == b.dtype and a.shape == b.shape, (a, b)
        np.testing.assert_allclose(a.numpy(), b.numpy())
    else:
        assert a == b


def copies(args):
    return [a.clone() if isinstance(a, t.Tensor) else
            [e.clone() for e in a] if isinstance(a, list) else a for a in args]


@pytest.mark.parametrize("fn,make", CASES, ids=lambda v: getattr(v, "__name__", ""))
def test_writes_match_eager(fn, make):
    args = make()
    ea, sa = copies(args), copies(args)
    versions = [a._version[0] if isinstance(a, t.Tensor) else None for a in sa]
    want = fn(*ea)
    got = scripted(fn)(*sa)
    same(got, want)
    same(sa, ea)  # the caller sees every write
    for a, e, o, v in zip(sa, ea, args, versions):
        if isinstance(a, t.Tensor) and not t.equal(e, o):
            assert a._version[0] > v  # written arguments' version counters move


def test_static_writes_are_compiled():
    for fn in (f_issue_example, f_select_view, f_flat_view_zero, f_local_view, f_loop,
               f_augassign, f_transpose_view, f_copy_fill, f_slice_augassign, f_broadcast_value,
               f_unsqueeze_view, f_view_then_loop, f_runtime_index, f_ellipsis_index):
        sf = scripted(fn)
        ops = {n.op for n in sf.graph.nodes()} if hasattr(sf.graph, "nodes") else set()
        assert "prim::PythonOp" not in ops, fn.__name__
        args = dict(CASES)[fn]()
        sf(*copies(args))
        assert sf._last.kind == "compiled", (fn.__name__, sf._last.reason)


def test_results_that_are_the_argument_are_the_callers_tensor():
    x = R()
    assert scripted(f_returns_argument)(x) is x
    a, b = t.zeros(2), t.ones(2)
    p, q, a2 = scripted(f_callee)(a, b)
    assert p is a and a2 is a


def test_graph_outputs_only_what_is_written():
    assert scripted(f_no_writes).graph.mutated_inputs == ()
    assert scripted(f_copy_fill).graph.mutated_inputs == (0, 1)
    assert len(scripted(f_issue_example).graph.outputs) == 2


def test_writes_through_argument_views_reach_the_base():
    base = t.zeros(3, 4)
    scripted(f_issue_example)(base[1])  # a row: contiguous view
    col = base[:, 2]                    # a column: a strided view
    scripted(f_select_view)(col + 0)    # a copy: the base is untouched
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        f_flat_view_zero(base.t())            # eager refuses to view a transpose flat
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        scripted(f_flat_view_zero)(base.t())  # and so does the program
    scripted(f_flat_view_zero)(base[1])   # a flat view of a row view: zeroes the row
    assert float(base.abs().sum()) == 0.0
    base = t.ones(3, 4)
    scripted(f_issue_example)(base[:, 1])
    np.testing.assert_allclose(base[:, 1].numpy(), [5.0, 2.0, 2.0])
    np.testing.assert_allclose(base[:, 0].numpy(), [1.0, 1.0, 1.0])


def test_int_tensor_refuses_a_float_result_like_eager():
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Long"):
        f_int_inplace_float(t.arange(3))
    x = t.arange(3)
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Long"):
        scripted(f_int_inplace_float)(x)
    np.testing.assert_array_equal(x.numpy(), [0, 1, 2])


def test_index_errors_like_eager():
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 3"):
        scripted(f_out_of_bounds)(t.zeros(3))
    # a run-time int index is TorchScript's select, in every tier (kernels/signals.py)
    with pytest.raises(IndexError, match=r"index 3 out of range for tensor of size \[3\]"):
        scripted(f_runtime_index)(t.zeros(3), 3)
    with pytest.raises(RuntimeError):
        f_bad_shape(t.zeros(2, 3))
    with pytest.raises(RuntimeError):
        scripted(f_bad_shape)(t.zeros(2, 3))


def test_leaf_that_requires_grad_cannot_be_written():
    x = t.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        f_issue_example(x)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        scripted(f_issue_example)(x)
    with t.no_grad():  # an optimizer step: allowed, and visible
        scripted(f_issue_example)(x)
    np.testing.assert_allclose(x.detach().numpy(), [5.0, 1.0, 1.0])


def _mul_inplace(x, w):
    x.mul_(w)
    x[0] = 1.0
    return x.sum()


def test_autograd_through_written_arguments_matches_eager():
    sf = scripted(_mul_inplace)
    grads = []
    for fn in (_mul_inplace, sf):
        a = t.tensor([1.0, 2.0, 3.0], requires_grad=True)
        w = t.tensor([2.0, 3.0, 4.0], requires_grad=True)
        x = a * 1
        r = fn(x, w)
        r.backward()
        grads.append((r.detach(), x.detach(), a.grad, w.grad))
        assert x.grad_fn is not None
    same(grads[1], grads[0])


def _local_list_write(a, b):
    lst = [a, b]  # a list built here may hold aliases of arguments: refused, not diverged
    lst[0].add_(1)
    return a


def _tuple_arg_write(p: Tuple[t.Tensor, t.Tensor]):
    p[0].add_(1)
    return p[1]


def _first_row(x):
    return x[0]


def _write_through_returned_view(x):
    _first_row(x).add_(1)
    return x


def _write_chosen(x, y, n: int):
    z = x if n > 0 else y
    z.add_(1)
    return z


@pytest.mark.parametrize("fn", [_local_list_write, _tuple_arg_write,
                                _write_through_returned_view, _write_chosen])
def test_writes_the_compiler_cannot_follow_are_refused(fn):
    with pytest.raises(ScriptError, match="in-place modification of a tensor whose storage"):
        t.jit.script(fn)


def test_expanded_argument_refused_like_eager():
    x = t.zeros(3).expand(2, 3)
    with pytest.raises(RuntimeError, match="more than one element"):
        scripted(f_loop)(x)
