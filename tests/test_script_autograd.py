"""Autodiff through compiled code: `passes.autodiff.differentiate` and `grad_node.attach`.

Forward and backward graphs run through `interpreter.run_graph` (the reference semantics of
compiled programs), so these tests need no code generator. Grads must equal eager autograd.
"""
import numpy as np
import pytest

import jitorch as t

t.manual_seed(0)
from jitorch.script import ir
from jitorch.script.runtime.grad_node import attach, recompute_backward
from jitorch.script.ir.interpreter import run_graph
from jitorch.script.passes.autodiff import NotDifferentiable, differentiate, shape_key_of
from jitorch.script.frontend.trace import trace_graph


def _trace(fn, args):
    with t.no_grad():
        g, _ = trace_graph(fn, args)
    return g


def _fresh(args, rg=None):
    out = []
    for i, a in enumerate(args):
        if isinstance(a, t.Tensor):
            a = a.detach().clone()
            if (rg is None and a.is_floating_point()) or (rg is not None and rg[i]):
                a.requires_grad_(True)
        out.append(a)
    return out


def _grad_outputs(outs, seed=0):
    rng = np.random.default_rng(seed)
    return [t.tensor(rng.standard_normal(o.shape), dtype=o.dtype)
            if isinstance(o, t.Tensor) and o.is_floating_point() else None for o in outs]


def check(fn, args, rg=None, atol=1e-5):
    """differentiate(traced fn) + interpreter == eager autograd, for every input."""
    args = _fresh(args, rg)
    g = _trace(fn, args)
    d = differentiate(g, args)
    n_out = len(g.outputs)
    with t.no_grad():
        res = run_graph(d.forward, args)
    outs, saved = res[:n_out], res[n_out:]
    assert len(saved) == d.n_saved
    gos = _grad_outputs(outs)
    gos = [go if req else None for go, req in zip(gos, d.output_requires_grad)]
    with t.no_grad():
        grads = run_graph(d.backward, gos + list(saved))
    assert len(grads) == len(args)
    # eager reference
    eargs = _fresh(args, [isinstance(a, t.Tensor) and a.requires_grad for a in args])
    eout = fn(*eargs)
    eouts = eout if isinstance(eout, tuple) else (eout,)
    for o, eo in zip(outs, eouts):
        np.testing.assert_allclose(o.detach().numpy(), eo.detach().numpy(), atol=atol)
    pairs = [(eo, go) for eo, go in zip(eouts, gos) if go is not None and eo.requires_grad]
    wrt = [a for a in eargs if isinstance(a, t.Tensor) and a.requires_grad]
    ref = t.autograd.grad([p[0] for p in pairs], wrt, [p[1] for p in pairs], allow_unused=True)
    ref_it = iter(ref)
    for a, gr in zip(eargs, grads):
        if isinstance(a, t.Tensor) and a.requires_grad:
            r = next(ref_it)
            if r is None:
                assert gr is None or np.all(gr.numpy() == 0)
            else:
                assert gr is not None
                assert gr.shape == a.shape and gr.dtype == a.dtype
                np.testing.assert_allclose(gr.numpy(), r.numpy(), atol=atol, rtol=1e-5)
        else:
            assert gr is None
    return d


def R(*shape, dtype=t.float32):
    return t.randn(*shape, dtype=dtype)


def _inplace_fn(x, y):
    z = x * 1
    z[0] = y[1]   # functionalised by the tracer into _index_put
    z.add_(y)
    return z.exp()


# --- differentiate: grads equal eager autograd ---------------------------------------------------
CASES = {
    "chain_broadcast": (lambda x, b: ((x * b).tanh() + b).sum(1), (R(3, 4), R(4))),
    "broadcast_both": (lambda x, y: (x * y).exp() - y / 2, (R(3, 1), R(1, 4))),
    "scalar_ops": (lambda x: (x * 3.0 + 1).sigmoid() ** 2, (R(5),)),
    "reuse": (lambda x: x * x + x.sin() * x, (R(2, 3),)),
    "mean_keepdim": (lambda x: x.mean(0, keepdim=True) * x, (R(3, 4),)),
    "sum_all": (lambda x, y: (x * y).sum(), (R(2, 3), R(2, 3))),
    "amax_var": (lambda x: x.amax(1) + x.var(1), (R(3, 5),)),
    "logsumexp": (lambda x: x.logsumexp(1), (R(3, 5),)),
    "mlp": (lambda x, w1, b1, w2, b2: ((x @ w1 + b1).clamp_min(0) @ w2 + b2).tanh().mean(),
            (R(4, 3), R(3, 5), R(5), R(5, 2), R(2))),
    "matmul_batched": (lambda a, b: a.matmul(b), (R(2, 3, 4), R(4, 5))),
    "shape_ops": (lambda x: x.reshape(6, 2).t().unsqueeze(0).expand(3, 2, 6).permute(2, 0, 1),
                  (R(3, 4),)),
    "cat_stack": (lambda x, y: t.cat([x, y * 2, x], 0) + t.stack([y, y], 0).sum(0).repeat(3, 1),
                  (R(2, 3), R(2, 3))),
    "transpose_flatten": (lambda x: x.transpose(0, 1).flatten() * 2, (R(2, 3, 2),)),
    "slicing": (lambda x: x[1:, ::2] * x[0, 1::2], (R(3, 4),)),
    "index_tensor": (lambda x, i: x[i].sum(0), (R(4, 3), t.tensor([0, 2, 2]))),
    "where_clamp": (lambda x, y: t.where(x > 0, x, y).clamp(-0.5, 0.5), (R(3, 3), R(3, 3))),
    "two_outputs": (lambda x, y: (x + y, (x * y).sum()), (R(2, 2), R(2, 2))),
    "output_is_input": (lambda x, y: (x, y.exp()), (R(3), R(3))),
    "same_output_twice": (lambda x: (x.sin(), x.sin()), (R(3),)),
    "split_chunks": (lambda x: x.split(2)[1] * x.chunk(2, 1)[0].sum(), (R(4, 2),)),
    "sort_multi": (lambda x: x.sort(1)[0] * 2, (R(3, 4),)),
    "max_dim": (lambda x: x.max(1)[0] + x.min(1)[0], (R(3, 4),)),
    "mixed_dtype": (lambda x, y: (x * y).sum(), (R(3), R(3, dtype=t.float64))),
    "softmaxish": (lambda x: (x - x.logsumexp(-1, keepdim=True)).exp(), (R(2, 5),)),
    "functionalized_inplace": (_inplace_fn, (R(3, 2), R(3, 2))),
    "int_input": (lambda x, n: x * n, (R(3), t.tensor([1, 2, 3]))),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_grads_match_eager(name):
    fn, args = CASES[name]
    check(fn, args)


def test_only_some_inputs_require_grad():
    fn = lambda x, w: (x @ w).tanh().sum()
    d = check(fn, (R(2, 3), R(3, 4)), rg=[False, True])
    assert d.input_requires_grad == (False, True)


def test_saved_values_and_forward_outputs():
    g = _trace(lambda x: x.exp().sum(), (R(3),))
    d = differentiate(g, [R(3).requires_grad_()])
    assert len(d.forward.outputs) == 1 + d.n_saved
    assert len(d.backward.inputs) == 1 + d.n_saved
    assert d.output_requires_grad == (True,)
    # exp's rule reads its result: the forward keeps it as a saved output
    assert any(n.op == "exp" for n in d.forward.block.nodes)
    assert d.forward is not g and d.forward.block.nodes[0] is not g.block.nodes[0]


def test_non_differentiable_output_gets_none_slot():
    fn = lambda x: (x * 2, (x > 0))
    d = check(fn, (R(3),))
    assert d.output_requires_grad == (True, False)
    assert d.backward.inputs[1].type == ir.NONE


@pytest.mark.parametrize("name", ["chain_broadcast", "mlp", "amax_var", "max_dim"])
def test_forward_and_saved_layout_do_not_depend_on_sizes(name):
    # the runtime runs ONE forward program for all sizes and re-derives the backward per key:
    # what is saved, and in which order, must not change with the sizes
    from jitorch.script.passes.autodiff import _structure
    fn, args = CASES[name]
    a = _fresh(args)
    g = _trace(fn, a)
    b = _fresh([t.randn(*[s + 2 if s >= 2 else s for s in x.shape]) for x in args])
    d1 = differentiate(g, a, check_generic=False)
    d2 = differentiate(g, b, check_generic=False)
    assert d1.shape_key != d2.shape_key
    assert _structure(d1.forward) == _structure(d2.forward)
    assert d1.saved_inputs == d2.saved_inputs and d1.n_saved == d2.n_saved
    assert [v.type for v in d1.backward.inputs] != [] and \
        len(d1.backward.inputs) == len(d2.backward.inputs)


def test_shape_key_exact_when_rules_bake_sizes():
    x = R(3, 3)
    # the diagonal's rule builds an identity matrix of the example's size: a baked constant
    g = _trace(lambda x: t.einsum("ii->i", x), (x,))
    d = differentiate(g, [x.requires_grad_()])
    assert d.key_kind == "exact" and d.shape_key == ((3, 3),) == shape_key_of([x])
    assert d.matches([R(3, 3)]) and not d.matches([R(5, 5)])
    assert "baked" in d.extra["sizes"]


# Sizes the rules read are run-time values: ONE backward graph per 0/1/many size pattern
# (traced functions: their forward bakes the sizes they pass to ops, so these avoid that)
SIZE_GENERIC = {
    "sum_dims": (lambda x: x.sum((0, 2)) * 2, [(3, 4, 5)]),
    "mean_dim": (lambda x: x.mean(1) + x.mean(), [(3, 4)]),
    "sum_keepdim": (lambda x: x * x.sum(-1, keepdim=True), [(3, 4)]),
    "reshape_view": (lambda x: x.reshape(-1).sin() + x.view(-1).cos(), [(3, 4)]),
    "flatten": (lambda x: x.flatten(1).exp(), [(3, 2, 2)]),
    "expand_as": (lambda x, y: x.expand_as(y) * y, [(3, 1), (3, 4)]),
    "select_narrow": (lambda x: x.select(1, 1) * x.select(0, 0).sum() + x.narrow(1, 0, 2).sum(1),
                      [(3, 4)]),
    "index": (lambda x, i: x[i].sum(0), [(4, 3), "idx"]),
    "cat_stack_chunk": (lambda x, y: t.cat([x, y], 1).tanh().chunk(2, 1)[0] * 2
                        + t.stack([x, y], 0).sum(0).sum(1, keepdim=True),
                        [(3, 2), (3, 2)]),
    "softmaxish": (lambda x: x.exp() / x.exp().sum(-1, keepdim=True), [(3, 4)]),
    "matmul_broadcast": (lambda a, b: (a @ b).tanh(), [(2, 3, 4), (4, 5)]),
    "max_min_dim": (lambda x: x.max(1)[0] + x.min(0, keepdim=True)[0].sum(), [(3, 4)]),
    "mlp": (lambda x, w, b: ((x @ w + b).clamp_min(0)).mean(), [(4, 3), (3, 5), (5,)]),
}


def _size_args(shapes, grow):
    out = []
    for s in shapes:
        if s == "idx":
            out.append(t.tensor([0, 2, 2]))
        else:
            out.append(R(*[n + grow if n >= 2 else n for n in s]))
    return out


@pytest.mark.parametrize("name", sorted(SIZE_GENERIC))
def test_backward_is_size_generic(name):
    fn, shapes = SIZE_GENERIC[name]
    args = _fresh(_size_args(shapes, 0))
    g = _trace(fn, args)
    d = differentiate(g, args)
    assert d.key_kind == "pattern" and d.symbolic, d.extra
    n_out = len(g.outputs)
    for grow in (0, 3, 5):  # the same graphs serve other sizes; grads equal eager's
        new = _fresh(_size_args(shapes, grow))
        assert d.matches(new)
        with t.no_grad():
            res = run_graph(d.forward, new)
            go = [t.tensor(np.random.default_rng(grow).standard_normal(o.shape),
                           dtype=o.dtype) for o in res[:n_out]]
            grads = run_graph(d.backward, go + list(res[n_out:]))
        wrt = [a for a in new if a.requires_grad]
        ref = t.autograd.grad(list(fn(*new)) if n_out > 1 else fn(*new), wrt,
                              go if n_out > 1 else go[0])
        got = [gr for a, gr in zip(new, grads) if a.requires_grad]
        for a, b in zip(got, ref):
            assert a.shape == b.shape
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-5)


def test_saved_sizes_are_forward_outputs():
    g = _trace(lambda x: x.sum(0), (R(3, 4),))
    d = differentiate(g, [R(3, 4).requires_grad_()])
    assert d.key_kind == "pattern" and d.n_saved == 2  # x.shape[0], x.shape[1]; not x
    assert [v.type for v in d.backward.inputs[1:]] == [ir.INT, ir.INT]
    assert not any(n.op == "prim::Constant" and n.attrs["value"] in ((3, 4), [3, 4])
                   for n in d.backward.block.nodes)
    with t.no_grad():
        res = run_graph(d.forward, [R(6, 2)])
    assert res[1:] == [6, 2]


def test_shape_key_pattern_reused_for_other_sizes():
    fn = lambda x, b, w: ((x * b).tanh() + b) @ w
    args = _fresh((R(3, 4), R(1, 4), R(4, 2)))
    d = differentiate(_trace(fn, args), args)
    assert d.key_kind == "pattern" and d.shape_key == ((2, 2), (1, 2), (2, 2))
    new = _fresh((R(6, 5), R(1, 5), R(5, 3)))
    assert d.matches(new) and not d.matches(_fresh((R(6, 5), R(6, 5), R(5, 3))))
    with t.no_grad():
        res = run_graph(d.forward, new)
        go = t.randn(6, 3)
        grads = run_graph(d.backward, [go] + res[1:])
    ref = t.autograd.grad(fn(*new), new, go)
    for a, b in zip(grads, ref):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-5)


# --- NotDifferentiable ---------------------------------------------------------------------------
def _graph_with(op, blocks=()):
    x = ir.Value(ir.TensorType(t.float32, (3,)), "x")
    n = ir.Node(op, [x], [x.type], blocks=blocks,
                attrs={"fn": (lambda a: a)} if op == "prim::PythonOp" else {})
    return ir.Graph("g", ir.Block([x], [n], [n.output]))


@pytest.mark.parametrize("op", ["prim::If", "prim::Loop", "prim::PythonOp"])
def test_control_flow_not_differentiable(op):
    g = _graph_with(op, blocks=[ir.Block(), ir.Block()] if op == "prim::If" else
                    [ir.Block()] if op == "prim::Loop" else [])
    with pytest.raises(NotDifferentiable):
        differentiate(g, [R(3).requires_grad_()])


def _scalar_graph(op, attr_tail=()):
    """op(x, a, *attr_tail) with `a` a non-constant scalar input (as the script frontend gives)."""
    x = ir.Value(ir.TensorType(t.float32, (3,)), "x")
    a = ir.Value(ir.FLOAT, "a")
    nodes, ins = [], [x, a]
    for c in attr_tail:
        k = ir.Node("prim::Constant", (), (ir.INT,), attrs={"value": c})
        nodes.append(k)
        ins.append(k.output)
    n = ir.Node(op, ins, [x.type])
    return ir.Graph("g", ir.Block([x, a], nodes + [n], [n.output]))


def test_scalar_graph_input_is_saved_not_baked():
    g = _scalar_graph("mul")
    x = R(3).requires_grad_()
    d = differentiate(g, [x, 2.5])
    k = d.saved_inputs.index(1)  # `a` is saved (a backward input), not a constant
    assert d.backward.inputs[1 + k].type == ir.FLOAT
    assert not any(n.op == "prim::Constant" and n.attrs["value"] == 2.5
                   for n in d.backward.block.nodes)
    with t.no_grad():
        res = run_graph(d.forward, [x, -4.0])   # another value: same graphs
        go = t.ones(3)
        (gx, ga) = run_graph(d.backward, [go] + res[1:])
    np.testing.assert_allclose(gx.numpy(), -4 * np.ones(3))
    assert ga is None


def test_frontend_style_graph_with_size_read():
    # what the script frontend gives for `n = x.size(0); return (x * a).sum(0) / n`
    x = ir.Value(ir.TensorType(None, None), "x")
    a = ir.Value(ir.FLOAT, "a")
    nodes = []

    def node(op, ins, ty, **attrs):
        nodes.append(ir.Node(op, ins, [ty], attrs=attrs))
        return nodes[-1].output

    shape = node("prim::GetAttr", [x], ir.ListType(ir.INT), name="shape")
    n = node("prim::ScalarOp", [shape, node("prim::Constant", [], ir.INT, value=0)], ir.INT,
             fn="getitem")
    y = node("mul", [x, a], ir.TensorType())
    s = node("sum", [y, node("prim::Constant", [], ir.INT, value=0),
                     node("prim::Constant", [], ir.BOOL, value=False),
                     node("prim::Constant", [], ir.NONE, value=None)], ir.TensorType())
    out = node("div", [s, n, node("prim::Constant", [], ir.NONE, value=None)], ir.TensorType())
    g = ir.Graph("g", ir.Block([x, a], nodes, [out]))
    xv = R(4, 3).requires_grad_()
    d = differentiate(g, [xv, 0.5])
    # `n` (div's `other`) and `a` (mul's `other`) are backward inputs, not baked constants
    scalars = [i for i in d.backward.inputs if i.type in (ir.INT, ir.FLOAT)
               and i.name.startswith("saved")]
    assert len(scalars) == 2
    assert d.key_kind == "pattern"  # sum's rule reads x's sizes: saved, run-time values
    with t.no_grad():  # another value of `a`: the same graphs
        res = run_graph(d.forward, [xv.detach(), 2.0])
        (gx, ga) = run_graph(d.backward, [t.ones(3)] + res[1:])
    assert ga is None
    np.testing.assert_allclose(gx.numpy(), np.full((4, 3), 2.0 / 4), rtol=1e-6)


def test_scalar_arithmetic_in_rule_not_differentiable():
    # pow's rule computes `exponent - 1` in Python: that would bake the exponent
    g = _scalar_graph("pow")
    with pytest.raises(NotDifferentiable, match="non-constant"):
        differentiate(g, [R(3).requires_grad_(), 3.0])


# --- grad_node.attach: a scripted call as one node on the eager tape ------------------------------
def compiled(fn, example, higher_order=False):
    """A callable running differentiate's graphs through the interpreter, attached to the tape
    (what the runtime does with compiled programs)."""
    g = _trace(fn, example)
    d = differentiate(g, _fresh(example))
    n_out = len(g.outputs)

    def call(*args):
        with t.no_grad():
            res = run_graph(d.forward, args)
        outs, saved = res[:n_out], res[n_out:]

        def run_backward(grads):
            with t.no_grad():
                return run_graph(d.backward, list(grads) + list(saved))
        outs = attach(outs, args, run_backward, saved=d.saved_to_check(args, outs),
                      differentiable=d.output_requires_grad,
                      create_graph_backward=recompute_backward(g, args) if higher_order
                      else None)
        return outs[0] if n_out == 1 else tuple(outs)
    return call


def test_gradcheck_through_attach():
    fn = lambda x, w, b: ((x @ w + b).tanh() * x.sum(1, keepdim=True)).sum(0)
    args = (R(3, 2, dtype=t.float64), R(2, 4, dtype=t.float64), R(4, dtype=t.float64))
    f = compiled(fn, args)
    assert t.autograd.gradcheck(f, _fresh(args))


def test_gradcheck_two_outputs():
    fn = lambda x, y: (x * y.exp(), (x - y).sin())
    args = (R(3, dtype=t.float64), R(3, dtype=t.float64))
    f = compiled(fn, args)
    a, b = _fresh(args)
    assert t.autograd.gradcheck(lambda a, b: f(a, b)[0] + f(a, b)[1] * 2, (a, b))


def test_mix_with_eager_and_backward_twice():
    fn = lambda x, w: (x @ w).clamp_min(0)
    args = (R(2, 3), R(3, 4))
    f = compiled(fn, args)
    x, w = _fresh(args)
    x0 = x.detach().clone().requires_grad_()
    loss = (f(x0 * 2, w).sigmoid() * 3).sum()   # eager before and after the scripted node
    assert loss.grad_fn is not None
    loss.backward(retain_graph=True)
    gx, gw = x0.grad.clone(), w.grad.clone()
    loss.backward()  # retained: works, accumulates
    np.testing.assert_allclose(x0.grad.numpy(), 2 * gx.numpy(), rtol=1e-6)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        loss.backward()
    # reference: eager
    xe, we = x0.detach().clone().requires_grad_(), w.detach().clone().requires_grad_()
    (fn(xe * 2, we).sigmoid() * 3).sum().backward()
    np.testing.assert_allclose(gx.numpy(), xe.grad.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gw.numpy(), we.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_autograd_grad_and_unused_output():
    fn = lambda x, y: (x.exp(), y * 2)
    args = (R(3), R(3))
    f = compiled(fn, args)
    x, y = _fresh(args)
    a, b = f(x, y)
    assert b.grad_fn is a.grad_fn and a.grad_fn.name() == "ScriptFunctionBackward"
    gx, gy = t.autograd.grad(a.sum(), (x, y), allow_unused=True)
    np.testing.assert_allclose(gx.numpy(), x.detach().exp().numpy(), rtol=1e-6)
    assert gy is None or np.all(gy.numpy() == 0)


def test_inplace_on_saved_input_raises():
    fn = lambda x: x.sin()
    f = compiled(fn, (R(3),))
    x = R(3).requires_grad_()
    xx = x * 1
    y = f(xx)
    with t.no_grad():
        xx.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_identity_and_duplicate_outputs():
    f = compiled(lambda x: (lambda y: (x, y, y))(x.sin()), (R(3),))
    x = R(3).requires_grad_()
    a, b, c = f(x)
    assert a is not x and x.grad_fn is None and a.grad_fn is not None and b is not c
    assert b.grad_fn is c.grad_fn
    (a * 2 + b + c * 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 + 4 * np.cos(x.detach().numpy()), rtol=1e-5)


def test_double_backward():
    fn = lambda x, w: (x @ w).tanh() * x.sum()
    args = (R(2, 3, dtype=t.float64), R(3, 2, dtype=t.float64))
    before = t.jit.stats()
    assert t.autograd.gradgradcheck(compiled(fn, args, higher_order=True), _fresh(args))
    after = t.jit.stats()  # the eager fallback is recorded
    from jitorch.script.runtime.grad_node import CREATE_GRAPH_REASON
    assert after.interpreted_reasons.get(CREATE_GRAPH_REASON, 0) > \
        before.interpreted_reasons.get(CREATE_GRAPH_REASON, 0)
    assert after.interpreted_runs > before.interpreted_runs
    x, w = _fresh(args)
    y = compiled(fn, args)(x, w).sum()
    with pytest.raises(RuntimeError, match="double backward"):
        t.autograd.grad(y, x, create_graph=True)


def test_hooks_and_retain_grad():
    f = compiled(lambda x: x.exp() * 2, (R(3),))
    x = R(3).requires_grad_()
    y = f(x)
    y.retain_grad()
    seen = []
    y.grad_fn.register_hook(lambda gi, go: seen.append(len(gi)))
    y.register_hook(lambda g: g * 10)
    y.sum().backward()
    assert seen == [1]
    np.testing.assert_allclose(y.grad.numpy(), 10 * np.ones(3))
    np.testing.assert_allclose(x.grad.numpy(), 20 * np.exp(x.detach().numpy()), rtol=1e-5)


def test_inplace_on_saved_output_raises():
    f = compiled(lambda x: x.exp(), (R(3),))   # exp's rule reads its result
    x = R(3).requires_grad_()
    y = f(x)
    with t.no_grad():
        y.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_failing_rule_is_not_differentiable():
    from jitorch._ops.registry import OPS

    def bad_vjp(g, input):
        raise NotImplementedError("no rule for this case")
    op = OPS["sin"]
    old, old_params = op.vjp, op.vjp_params
    op.vjp, op.vjp_params = bad_vjp, (("slot", "input"),)
    try:
        g = _trace(lambda x: x.sin(), (R(3),))
        with pytest.raises(NotDifferentiable, match="no rule for this case"):
            differentiate(g, [R(3).requires_grad_()])
    finally:
        op.vjp, op.vjp_params = old, old_params


def test_no_grad_inputs_attach_nothing():
    f = compiled(lambda x: x * 2, (R(3),))
    y = f(R(3))
    assert not y.requires_grad and y.grad_fn is None


# --- the runtime: one backward program for every batch size --------------------------------------
@t.jit.script
def _train_step(x, w, b, w2):
    h = (x @ w + b).tanh()                        # matmul with a broadcast bias
    sm = h.exp() / h.exp().sum(-1, keepdim=True)  # softmax-like: sum with a dim, keepdim
    flat = h.reshape(-1).sum() / h.size(0)        # reshape; a run-time size
    return (sm @ w2).mean(1).sum() + flat + h.amax(1).mean()


def test_scripted_training_steps_share_one_backward():
    rng = np.random.default_rng(3)
    ws = [rng.standard_normal(s) for s in ((3, 4), (4,), (4, 2))]
    base = first = t.jit.stats()
    for k, batch in enumerate((5, 7, 9)):
        xs = rng.standard_normal((batch, 3))
        x = t.tensor(xs, dtype=t.float32)
        w, b, w2 = [t.tensor(a, dtype=t.float32).requires_grad_() for a in ws]
        if k == 1:  # the first step built the forward and the backward
            base = t.jit.stats()
        _train_step(x, w, b, w2).backward()
        ref = _eager_step(t.tensor(xs, dtype=t.float32), *ws)
        for got, want in zip((w.grad, b.grad, w2.grad), ref):
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-5)
    after = t.jit.stats()
    assert base.compiles == first.compiles + 2  # batch 5: the forward and ONE backward
    assert after.compiles == base.compiles, (base, after)  # batch sizes 7 and 9: no new build


def _eager_step(x, *ws):
    w, b, w2 = [t.tensor(a, dtype=t.float32).requires_grad_() for a in ws]
    h = (x @ w + b).tanh()
    sm = h.exp() / h.exp().sum(-1, keepdim=True)
    flat = h.reshape(-1).sum() / h.size(0)
    ((sm @ w2).mean(1).sum() + flat + h.amax(1).mean()).backward()
    return [a.grad.numpy() for a in (w, b, w2)]


def test_forward_program_returns_no_input_nor_a_view_of_one():
    """The runtime hands the inputs it holds to the backward, and a Linear's `t(weight)` is
    recomputed there: the compiled forward returns neither (each returned array costs compile
    time; issue 17). Gradients stay eager's, over two calls (the second takes the direct
    path of AutodiffEntry.run)."""
    from jitorch.script.frontend.trace import tensor_type
    from jitorch.script.runtime import autodiff as rad

    def step(x, w, b):
        return (x @ w.t() + b).relu().sum()

    s = t.jit.script(step)
    for seed in (1, 2):
        x = R(4, 3)
        w, b = R(2, 3).requires_grad_(), R(2).requires_grad_()
        s(x, w, b).backward()
        ew, eb = w.detach().clone().requires_grad_(), b.detach().clone().requires_grad_()
        step(x, ew, eb).backward()
        np.testing.assert_allclose(w.grad.numpy(), ew.grad.numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(b.grad.numpy(), eb.grad.numpy(), rtol=1e-5, atol=1e-6)
    base = rad._pre_fusion(s.graph, [tensor_type(a, symbolic=True) for a in (x, w, b)])
    d = rad._differentiate(base, [x, w, b])
    assert d.key_kind == "pattern"  # one backward for every batch size, as before
    assert 0 in d.saved_inputs and 1 in d.saved_inputs  # x and w: saved, not returned
    params = {p.uid for p in d.forward.inputs}
    assert not any(r.uid in params or (r.node is not None and r.node.op == "t")
                   for r in d.forward.outputs)
    assert len(d.forward.outputs) == 1 + sum(i is None for i in d.saved_inputs)


def test_forward_program_returns_no_view_of_a_saved_value_nor_an_unread_one():
    """Views (constant attributes) of an input, of such a view, or of a value the backward
    reads anyway, and products of two such values, are recomputed there (`t(narrow(w))`,
    `q = h * h` with `h` saved by tanh, `q.transpose(0, 1)`), and values no backward node
    reads (`mul`'s `self` when only the constant's grad would need it) are not saved: the
    forward returns none of them (issue 17). The pair, interpreted, gives eager's
    gradients."""
    from jitorch.script.frontend.trace import tensor_type
    from jitorch.script.runtime import autodiff as rad

    def step(x, w, b):
        h = (x @ w.narrow(0, 0, 2).t() + b).tanh()
        q = h * h
        return ((q.transpose(0, 1) @ q) * t.tensor(2.0)).sum()

    x, w, b = R(4, 3), R(3, 3).requires_grad_(), R(2).requires_grad_()
    base = rad._pre_fusion(t.jit.script(step).graph,
                           [tensor_type(a, symbolic=True) for a in (x, w, b)])
    d = differentiate(base, [x, w, b])
    outs = [v for v in d.forward.outputs[1:] if v.type != ir.INT]
    assert sorted(v.node.op if v.node is not None else v.name for v in outs) == \
        ["tanh", "w", "x"]  # not q, q^T, t(narrow(w)), nor q^T @ q
    with t.no_grad():
        res = run_graph(d.forward, [x, w, b])
        grads = run_graph(d.backward, [t.tensor(1.0), *res[1:]])
    step(x, w, b).backward()
    for got, want in zip(grads[1:], (w.grad, b.grad)):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-7)
