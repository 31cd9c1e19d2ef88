"""Eager softmax, log_softmax, F.linear and nll_loss run as one op each (`_softmax_fused`,
`_log_softmax_fused`, `_linear_fused`, `_nll_loss_fused`; cross_entropy as log_softmax's and
nll_loss's): the values of the composites that scripted code inlines, one autograd node,
and gradients (first and second order, forward AD) that match; and autograd's per-op
recorders build the node the generic recorder builds."""
import numpy as np
import pytest

import jitorch as jt
import jitorch.nn.functional as F
from jitorch.autograd import forward_ad as fwAD, gradcheck, gradgradcheck
from jitorch._ops import nn_activation as na, nn_loss as nl, nn_misc as nm

_SOFT = [(F.softmax, na._softmax, "SoftmaxFusedBackward0"),
         (F.log_softmax, na._log_softmax, "LogSoftmaxFusedBackward0")]


@pytest.mark.parametrize("fn,comp,node", _SOFT)
@pytest.mark.parametrize("dim", [0, -1])
def test_softmax_one_op(fn, comp, node, dim):
    x = jt.randn(3, 4, 2, dtype=jt.float64, requires_grad=True)
    y = fn(x, dim)
    assert y.grad_fn.name() == node
    # the composite run op by op (NumPy's exp and sums) within rounding; eager follows the
    # compiled composite to the bit (tests/test_tier_agreement.py)
    np.testing.assert_allclose(y.detach().numpy(), comp.body(dim, None)(x).detach().numpy(),
                               rtol=1e-14, atol=1e-300)
    assert gradcheck(lambda t: fn(t, dim), (x,))
    assert gradgradcheck(lambda t: fn(t, dim), (x,))
    t = jt.randn(3, 4, 2, dtype=jt.float64)
    with fwAD.dual_level():
        tan = fwAD.unpack_dual(fn(fwAD.make_dual(x.detach(), t), dim)).tangent
        ref = fwAD.unpack_dual(comp.body(dim, None)(fwAD.make_dual(x.detach(), t))).tangent
    np.testing.assert_allclose(tan.numpy(), ref.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("shape", [(5,), (2, 3, 5)])
@pytest.mark.parametrize("with_bias", [True, False])
def test_linear_one_op(shape, with_bias):
    x = jt.randn(*shape, dtype=jt.float64, requires_grad=True)
    w = jt.randn(4, 5, dtype=jt.float64, requires_grad=True)
    args = (x, w) + ((jt.randn(4, dtype=jt.float64, requires_grad=True),) if with_bias else ())
    y = F.linear(*args)
    assert y.grad_fn.name() == "LinearFusedBackward0"
    np.testing.assert_array_equal(y.detach().numpy(), nm._linear.body()(*args).detach().numpy())
    assert gradcheck(F.linear, args)
    assert gradgradcheck(F.linear, args)
    tans = [jt.randn(*a.shape, dtype=jt.float64) for a in args]
    with fwAD.dual_level():
        duals = [fwAD.make_dual(a.detach(), t) for a, t in zip(args, tans)]
        tan = fwAD.unpack_dual(F.linear(*duals)).tangent
        ref = fwAD.unpack_dual(nm._linear.body()(*duals)).tangent
    np.testing.assert_allclose(tan.numpy(), ref.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("with_weight", [True, False])
def test_nll_loss_one_op(reduction, with_weight):
    x = jt.randn(3, 5, dtype=jt.float64, requires_grad=True)
    tgt = jt.tensor([1, -100, 4])
    w = jt.rand(5, dtype=jt.float64) if with_weight else None
    for fn, comp in ((F.nll_loss, nl._nll_loss.body(-100, reduction)),
                     (F.cross_entropy, nl._cross_entropy.body(-100, reduction, 0.0))):
        y = fn(x, tgt, w, reduction=reduction)
        assert y.grad_fn.name() == "NllLossFusedBackward0"
        ref = comp(x, tgt, w)
        if fn is F.nll_loss:
            np.testing.assert_array_equal(y.detach().numpy(), ref.detach().numpy())
        else:  # eager log_softmax follows compiled code; the composite's runs NumPy's ops
            np.testing.assert_allclose(y.detach().numpy(), ref.detach().numpy(), rtol=1e-14)
        assert y.shape == ref.shape
        assert gradcheck(lambda t: fn(t, tgt, w, reduction=reduction), (x,))
    assert gradgradcheck(lambda t: F.nll_loss(t, tgt, w, reduction=reduction), (x,))
    t = jt.randn(3, 5, dtype=jt.float64)
    with fwAD.dual_level():
        tan = fwAD.unpack_dual(F.nll_loss(fwAD.make_dual(x.detach(), t), tgt, w,
                                          reduction=reduction)).tangent
    ref = nl._nll_loss.body(-100, reduction)(t, tgt, w)
    np.testing.assert_allclose(tan.numpy(), ref.numpy(), rtol=1e-12, atol=1e-12)
    with pytest.raises(IndexError, match="Target 7 is out of bounds."):
        F.nll_loss(x, jt.tensor([1, 7, 0]), w, reduction=reduction)


def test_uncommon_calls_keep_the_composite():
    """dtype=, integer inputs, out-of-range dims, mismatched shapes: the composite's results
    and PyTorch's errors."""
    x = jt.randn(2, 3)
    assert F.softmax(x, 1, dtype=jt.float64).dtype == jt.float64
    with pytest.raises(IndexError, match="Dimension out of range"):
        F.softmax(x, 2)
    with pytest.raises(NotImplementedError, match="softmax_lastdim_kernel_impl"):
        F.softmax(jt.tensor([1, 2]), 0)
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        F.linear(x, jt.randn(4, 2))
    assert F.softmax(jt.randn(0, 3), 0).shape == (0, 3)


@pytest.mark.parametrize("call", [
    lambda a, b: jt.add(a, b, alpha=2),        # two slots, an attr
    lambda a, b: a.sum(1),                     # a shape
    lambda a, b: jt.sort(a, 1)[0],             # several outputs, `result`
    lambda a, b: F.linear(a, b),               # an absent optional slot
])
def test_per_op_recorder_builds_the_generic_node(call):
    """autograd/graph.py's generated per-op recorders make the node `_record_any` makes."""
    from jitorch.autograd import graph

    def node_of(make):
        graph.clear_recorders()
        saved_make = graph._make_recorder
        graph._make_recorder = make
        try:
            a = jt.randn(3, 3, requires_grad=True)
            b = jt.randn(3, 3)
            n = call(a, b).grad_fn
        finally:
            graph._make_recorder = saved_make
            graph.clear_recorders()
        return (n.op, [e if e is None else (type(e[0]), e[1]) for e in n.next_edges],
                n.in_meta, n.out_meta, n.multi,
                None if n.saved is None else sorted(n.saved),
                [(tuple(t.shape), v) for t, v in n.versions])

    assert node_of(graph._make_recorder) == node_of(lambda op: False)
