"""CPU code generator, type specialisation and fuser: generated programs vs the interpreter.

Graphs are traced from small functions, specialised (dtype/rank, sizes dropped), fused and
lowered; the generated module is loaded from a temp file (the runtime's own loader is not
needed here) and its results compared with `interpreter.run_graph` on the traced graph, also
at other sizes than the trace's (a program must not depend on sizes). Each program compiles
once per test.
"""
from __future__ import annotations

import hashlib
import math
import importlib.util
import sys
import tempfile

import numpy as np
import pytest

import jitorch as t
from jitorch.script.kernels import cache
from jitorch.script.ir import interpreter
from jitorch.script import ir
from jitorch.script.codegen import NotLowered
from jitorch.script.codegen.target import get_target
from jitorch.script.targets.cpu import program as cpu
from jitorch.script.passes import fuse
from jitorch.script.passes.types import specialize
from jitorch.script.frontend.trace import trace_graph, value_type

_DIR = tempfile.mkdtemp(prefix="jitorch_codegen_test_")


def load(prog):
    for ksrc in prog.kernels:  # the kernels the entry imports (targets/cpu/kernel.py)
        cache.load_module(ksrc)
    h = hashlib.sha256(prog.source.encode()).hexdigest()[:16]
    name = f"_jitorch_codegen_test_{h}"
    if name in sys.modules:
        return getattr(sys.modules[name], prog.entry)
    path = f"{_DIR}/{name}.py"
    with open(path, "w") as f:
        f.write(prog.source)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return getattr(mod, prog.entry)


def _specialise(graph, args):
    """`graph` typed for `args`, compiled for the CPU target (what fusion may group)."""
    sg = specialize(graph, [value_type(a) for a in args])
    sg.capabilities = get_target("cpu").capabilities
    return sg


def lower(graph, args):
    sg = fuse.run(_specialise(graph, args))
    return sg, cpu.generate(sg)


def raw(x):
    return x._data if isinstance(x, t.Tensor) else x


def compare(graph, fn, args, rtol=1e-5, atol=1e-6):
    ref = interpreter.run_graph(graph, list(args))
    got = fn(*[raw(a) for a in args])
    assert isinstance(got, tuple) and len(got) == len(ref)
    for r, o in zip(ref, got):
        r = np.asarray(raw(r))
        o = np.asarray(o)
        assert o.dtype == r.dtype, (o.dtype, r.dtype)
        assert o.shape == r.shape, (o.shape, r.shape)
        if r.dtype.kind in "fc":
            np.testing.assert_allclose(o, r, rtol=rtol, atol=atol)
        else:
            np.testing.assert_array_equal(o, r)


def check(f, args, *others, rtol=1e-5, atol=1e-6):
    """Trace `f` on `args`, lower, and compare at `args` and at every other argument tuple."""
    g, _ = trace_graph(f, args)
    sg, prog = lower(g, args)
    fn = load(prog)
    for a in (args,) + others:
        compare(g, fn, a, rtol, atol)
    return sg, prog, fn


R = t.randn

# --- elementwise chains -------------------------------------------------------------------------


def test_broadcast_chain_fused_and_size_independent():
    sg, prog, fn = check(lambda x, y: ((x - y) * 0.5).sigmoid() + x.exp(),
                         (R(3, 4), R(1, 4)), (R(5, 1), R(1, 7)), (R(2, 3), R(1, 3)))
    fused = [n for n in sg.nodes() if n.op == "prim::Fused"]
    assert len(fused) == 1 and fused[0].attrs["ops"] == "sub -> mul -> sigmoid -> exp -> add"
    # one loop nest, no temporaries, a new size did not recompile
    assert prog.full_source.count("_jt_empty(") == 1
    assert len(fn.signatures) == 1
    assert "divmod" not in prog.full_source


def _two_outputs(x, y, z):
    a = (x * y).tanh()
    b = a + z
    return a, b @ b.transpose(0, 1)  # (a second compute node: the group becomes a kernel)


def test_kernel_shape_code_is_computed_once_and_flat_views_are_intrinsics():
    """What a kernel costs Numba to compile follows its lines and the functions it calls:
    each broadcast size and 0/1 multiplier is one assignment however many outputs use it
    (Emitter.named), and the flat loop views its operands through views.py's intrinsic (no
    `np.ascontiguousarray` overload to compile per array type). Both loops stay correct:
    contiguous operands of one shape, broadcasts, a transposed view."""
    import re
    _, prog, _ = check(_two_outputs, (R(3, 4), R(3, 4), R(3, 4)),
                       (R(3, 1), R(1, 4), R(3, 4)), (R(4, 3).t(), R(3, 4), R(1, 4)))
    (group,) = [k for k in prog.kernels if "tanh" in k]
    assert "_jt_flat(" in group and "ascontiguousarray" not in group
    assert "int(p0.shape[0] != 1)" in group  # (output `a` has its own shape: the nest)
    for k in prog.kernels:
        shape_code = re.findall(r"^    [nm]\d+ = (.*)$", k, re.M)  # the top level's
        assert len(shape_code) == len(set(shape_code)), k
        assert "no_cpython_wrapper=True" in k and "no_cfunc_wrapper=True" in k  # (test_kernels.py)


def _with_mm(a):
    return a, a @ a.transpose(0, 1)  # (a second compute node: the group becomes a kernel)


def test_operands_of_the_loops_rank_make_one_flat_loop():
    """A group whose operands all have the loop's rank and whose outputs its shape is one flat
    loop over each operand's dense elements (views.py's _jt_dense): no strided nest, nor its 0/1
    multipliers, for Numba to compile (issue 17). Correct for contiguous operands, broadcasts,
    transposed and strided views, 0-size ones. A lower-rank operand keeps the nest."""
    import re
    _, prog, _ = check(lambda x, y: _with_mm((x * y).tanh() + x), (R(3, 4), R(3, 4)),
                       (R(3, 1), R(1, 4)), (R(4, 3).t(), R(3, 4)),
                       (R(2, 1, 3)[:, 0].t(), R(1, 1)), (R(0, 4), R(1, 4)))
    (group,) = [k for k in prog.kernels if "tanh" in k]
    assert "_jt_dense(" in group and "int(p0.shape[0] != 1)" not in group
    assert len(re.findall(r"^ *for ", group, re.M)) == 1, group
    _, prog, _ = check(lambda x, b: _with_mm((x * b).tanh()), (R(3, 4), R(4)),
                       (R(4, 3).t(), R(1)))
    (bias,) = [k for k in prog.kernels if "tanh" in k]
    assert "_jt_dense(" not in bias and "int(p1.shape[0] != 1)" in bias
    # any rank: _jt_dense takes the array itself (its values at rank 9: the test below)
    nine = (R(1, 2, 1, 1, 1, 1, 1, 3, 4),) * 2
    _, prog = lower(trace_graph(lambda x, y: ((x * y).tanh() + x, (x * y).sum()), nine)[0], nine)
    (group,) = [k for k in prog.kernels if "tanh" in k]
    assert "_jt_dense(" in group and len(re.findall(r"^ *for ", group, re.M)) == 1, group


def test_shape_ops_lowered_in_the_entry_are_no_compute_nodes():
    """A reshape, unsqueeze, expand or 2-D transpose is lowered in the entry (one intrinsic
    call or an expression: lower_shape.in_entry), so it does not count towards a program's
    kernels (targets/cpu/kernel.py): with one compute node besides, the program is one
    function and jit.stats() counts no kernel for it (it was an entry calling one kernel: two
    Numba compiles). A transpose of rank 3 is a copy loop: a kernel of its own."""
    args = (R(2, 6), R(3, 4))
    _, prog = lower(trace_graph(lambda x, w: x.reshape(-1, 4).unsqueeze(0).expand(2, -1, -1)
                                @ w.t(), args)[0], args)
    assert prog.kernels == [] and "_jt_reshape(" in prog.source
    args = (R(3, 4, 2), R(3, 4))
    _, prog = lower(trace_graph(lambda x, w: x.transpose(0, 2) @ w, args)[0], args)
    assert len(prog.kernels) == 2


def test_cat_of_one_dtype_is_copy_nests():
    """cat of one dtype: PyTorch's size check and a copy nest per part, not np.concatenate
    (Numba compiled its implementation, ~0.25 CPU-s, per tuple of array types: issue 17).
    Correct for transposed views and 0-size parts."""
    _, prog, _ = check(lambda x, y: _with_mm(t.cat([x, y * 2, x], 1)), (R(3, 2), R(3, 4)),
                       (R(2, 3).t(), R(3, 0)), (R(0, 2), R(0, 5)))
    assert "np.concatenate" not in prog.full_source and "Sizes of tensors" in prog.full_source


def test_dense_elements_are_emitted_in_place_for_any_dtype():
    """views._jt_dense is an intrinsic: a view where the operand is C-contiguous, else a copy in
    C order, with no Numba function of its own compiled per dtype and linked into every caller
    (first-ever compile of a one-group program: ~0.2 of ~0.8 CPU-s)."""
    import numba
    from numba.core.dispatcher import Dispatcher
    from jitorch.script.targets.cpu.views import _jt_dense, _jt_expand
    assert not isinstance(_jt_dense, Dispatcher)

    @numba.njit
    def dense(x):
        return _jt_dense(x)

    @numba.njit
    def dense_expanded(x, n):
        e = _jt_expand(x, (2, n, x.shape[1]))
        return _jt_dense(e)

    x = np.arange(24, dtype=np.float64).reshape(2, 3, 4)
    got = dense(x)
    assert np.shares_memory(got, x) and np.array_equal(got, x.ravel())  # C-contiguous: a view
    for v in (x.transpose(2, 0, 1), x[:, ::2, 1:3], x[:, :0]):  # transposed, strided, empty
        got = dense(v)
        assert not np.shares_memory(got, x) and np.array_equal(got, v.ravel())
    nine = np.arange(48.0).reshape(2, 1, 1, 1, 2, 1, 1, 3, 4).transpose(8, 1, 2, 3, 4, 5, 6, 7, 0)
    assert np.array_equal(dense(nine), nine.ravel())  # rank 9, not C-contiguous
    i = np.arange(4, dtype=np.int32).reshape(1, 4)  # a broadcast, another dtype
    assert np.array_equal(dense_expanded(i, 3), np.broadcast_to(i, (2, 3, 4)).ravel())


ZERO_D = t.tensor(1.5, dtype=t.float64)


def _zoo(x, y64, a, b, i64, z):
    return (x * 0.5 + 2,                      # typed float32 literals
            (a + b) * 3 - a,                  # int32 wraps like PyTorch
            x * 2 + y64,                      # f32 tensor + f64 tensor -> f64
            i64 * 2.5 + 1,                    # int64 tensor, float scalar -> float32
            x + z,                            # 0-d f64 tensor: lower tier, stays f32
            t.where(x > 0, x, x * 0.1),
            (x > 0) & (x < 1),
            (x.abs() + 1).log() * x.tanh() - x.clamp(-0.5, 0.5),
            x.clamp(min=0.1) + x.clamp(max=0.2),  # one-sided clamps
            ZERO_D)                               # a 0-d tensor constant stays 0-d


ZOO_ARGS = (R(3, 4), R(4, dtype=t.float64), t.tensor([[2 ** 30, 5], [-7, 3]], dtype=t.int32),
            t.tensor([2 ** 30, 1], dtype=t.int32), t.tensor([1, 2, 3]),
            t.tensor(2.0, dtype=t.float64))


@pytest.fixture(scope="module")
def zoo():
    return check(_zoo, ZOO_ARGS, rtol=2e-5)


def test_elementwise_dtypes_and_promotion(zoo):
    _, _, fn = zoo
    g, _ = trace_graph(_zoo, ZOO_ARGS)
    other = (R(2, 5), R(5, dtype=t.float64), t.tensor([[7], [2 ** 31 - 1]], dtype=t.int32),
             t.tensor([1, 2], dtype=t.int32), t.tensor([4]), t.tensor(-1.0, dtype=t.float64))
    compare(g, fn, other, rtol=2e-5)


def test_typed_literals(zoo):
    _, prog, _ = zoo
    src = prog.full_source
    assert "np.float32(0.5)" in src and "np.float32(2.0)" in src
    assert " 0.5" not in src.replace("np.float32(0.5)", "")
    assert "np.int32(" in src  # int32 results cast back (Numba computes int32 + int32 in int64)


def test_scalar_runtime_input():
    g, _ = trace_graph(lambda x: x * 3.0, (R(4),))
    s = ir.Value(ir.FLOAT, "s")  # make the scalar a run-time input instead of a constant
    g.block.params.append(s)
    mul = [n for n in g.block.nodes if n.op == "mul"][0]
    mul.inputs[1] = s
    sg, prog = lower(g, [R(4), 3.0])
    fn = load(prog)
    compare(g, fn, [R(5), 1.5])


# --- reductions ---------------------------------------------------------------------------------


def _reductions(x, i):
    return (x.amax(-1), x.amin(0).sum(), x.mean((0, 1)), x.sum(0, keepdim=True),
            x.prod(1, keepdim=True), x.sum(1).mean(), i.sum())


def test_reductions_nan_and_empty():
    i = t.tensor([[1, 2], [3, 4]], dtype=t.int32)
    g, prog, fn = check(_reductions, (R(3, 4), i), (R(5, 2), i))
    x = np.array([[1.0, np.nan, 3.0], [0.0, 1.0, 2.0]], np.float32)
    out = fn(x, i._data)[0]
    assert np.isnan(out[0]) and out[1] == 2.0
    with pytest.raises(IndexError, match="Expected reduction dim 1 to have non-zero size"):
        fn(np.zeros((2, 0), np.float32), i._data)


def _prologues(x, y):
    e = (x - x.amax(-1, keepdim=True)).exp()
    return (((x - y) * 0.5).exp().sum(-1),
            (x * x).mean(-1, keepdim=True) + 1,
            e / e.sum(-1, keepdim=True))          # softmax: e is used twice, not absorbed


def test_reduction_prologue_fused():
    sg, prog, fn = check(_prologues, (R(3, 4), R(4)), (R(5, 7), R(1)), rtol=2e-5)
    ops = [n.attrs["ops"] for n in sg.nodes() if n.op == "prim::Fused"]
    assert "sub -> mul -> exp -> sum" in ops and "mul -> mean" in ops
    with pytest.raises(IndexError, match="Expected reduction dim 1 to have non-zero size"):
        fn(np.zeros((2, 0), np.float32), np.zeros(1, np.float32))


# --- matmul -------------------------------------------------------------------------------------


def test_mlp():
    w1, b1, w2 = R(4, 8), R(8), R(8, 3)

    def mlp(x):
        h = (x @ w1 + b1).tanh()
        return (h @ w2).sum(-1)
    sg, prog, _ = check(mlp, (R(5, 4),), (R(1, 4),), rtol=1e-4, atol=1e-5)
    assert "matmul2(" in prog.full_source  # BLAS or the small-M kernel, inside the program


def _products(a3, b3, b2, v4, m34, c3, x, w, i, m1, m2):
    return (a3 @ b3, a3 @ b2, v4 @ b2, m34 @ v4, v4 @ v4, c3 @ b3, t.bmm(a3, b3),
            t.addmm(i, m1, m2, beta=0.5, alpha=2.0), x @ w.t())


def test_matmul_ranks_and_shape_error():
    args = (R(2, 3, 4), R(2, 4, 5), R(4, 5), R(4), R(3, 4), R(1, 3, 4), R(3, 4), R(5, 4), R(3),
            R(2, 4), R(4, 3))
    _, _, fn = check(_products, args, rtol=1e-4, atol=1e-5)
    bad = [raw(a) for a in args]
    bad[7] = np.ones((5, 3), np.float32)
    # a program's raise is static (codegen/emitter.py raise_): the class and the check; the
    # numbers come from the interpreter's rerun that the runtime makes for the user's error
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(\?x\? "
                                         r"and \?x\?\)"):
        fn(*bad)


# --- shape ops ----------------------------------------------------------------------------------


def _shapes(x, x3, y, v, s):
    return (x.reshape(-1, 2).transpose(0, 1).contiguous().view(-1) * 2,
            x3.permute(2, 0, 1).flatten(1) + 1,
            x.unsqueeze(1).expand(3, 5, 4) * x.unsqueeze(1),
            x[1:, None, ::2] + x[0, ::2],
            t.cat([x, y], 1).sum(-1) + t.stack([x, x], 0).sum(0).sum(1),
            x.select(1, 2) * 2 + x.narrow(1, 1, 1).sum(1),
            x.double() * 2,
            v.expand_as(x) + 1,
            s[1],
            x.ravel().reshape_as(x) + v.broadcast_to((3, 4)))


def test_shape_ops():
    _, prog, _ = check(_shapes, (R(3, 4), R(2, 3, 4), R(3, 2), R(4), R(3)))
    # expand's view is views.py's intrinsic: no Numba broadcast_to overload per rank
    assert "_jt_expand(" in prog.full_source and "np.broadcast_to" not in prog.full_source


def _expand_runtime(x, n: int):
    return x.expand(n, 3, 4) + 1


def test_expand_to_runtime_sizes_and_negative_size_error():
    f = t.jit.script(_expand_runtime)
    x = R(3, 1)
    np.testing.assert_array_equal(f(x, 2).numpy(), _expand_runtime(x, 2).numpy())
    np.testing.assert_array_equal(f(x, 0).numpy(), _expand_runtime(x, 0).numpy())
    with pytest.raises(RuntimeError) as eager:
        _expand_runtime(x, -2)
    with pytest.raises(RuntimeError) as scripted:  # (the program hands it to the interpreter)
        f(x, -2)
    assert str(eager.value) in str(scripted.value)


def test_runtime_errors_have_pytorch_messages():
    g, _ = trace_graph(lambda x, y: (x + y, x[2] * 1, x.reshape(2, 3)), (R(6), R(6)))
    _, prog = lower(g, [R(6), R(6)])
    fn = load(prog)
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(\?\) must match the size of "
                                         r"tensor b \(\?\) at non-singleton dimension 0"):
        fn(np.ones(3, np.float32), np.ones(4, np.float32))
    with pytest.raises(IndexError, match=r"index 2 is out of bounds for dimension 0 with size \?"):
        fn(np.ones(2, np.float32), np.ones(2, np.float32))
    # a reshape is views.py's _jt_reshape, which signals the interpreter (it raises eager's
    # exact message: tests/test_kernels.py's test_reshapes_are_emitted_in_place_not_kernels)
    from jitorch.script.kernels.signals import RaiseInInterpreter
    with pytest.raises(RaiseInInterpreter):
        fn(np.ones(5, np.float32), np.ones(5, np.float32))


# --- control flow (hand-built IR: the frontends are tested elsewhere) ---------------------------


def _loop_graph():
    """def f(x, n): for i in range(n): x = x * 0.5 + 1;  return x (with an if on n > 2)."""
    x = ir.Value(ir.TensorType(t.float32, (None,)), "x")
    n = ir.Value(ir.INT, "n")
    true = ir.Node("prim::Constant", (), (ir.BOOL,), {"value": True})
    half = ir.Node("prim::Constant", (), (ir.FLOAT,), {"value": 0.5})
    bi, bx = ir.Value(ir.INT, "i"), ir.Value(x.type, "c")
    bh = ir.Value(ir.FLOAT)  # a captured scalar
    btrue = ir.Node("prim::Constant", (), (ir.BOOL,), {"value": True})
    bo = ir.Node("prim::Constant", (), (ir.INT,), {"value": 1})
    m = ir.Node("mul", (bx, bh), (x.type,))
    a = ir.Node("add", (m.output, bo.output, bo.output), (x.type,))
    body = ir.Block([bi, bx, bh], [btrue, bo, m, a], [btrue.output, a.output])
    loop = ir.Node("prim::Loop", (n, true.output, x, half.output), (x.type,), blocks=[body])
    two = ir.Node("prim::Constant", (), (ir.INT,), {"value": 2})
    gt = ir.Node("prim::ScalarOp", (n, two.output), (ir.BOOL,), {"fn": "gt"})
    tx, ex = ir.Value(x.type), ir.Value(x.type)
    neg = ir.Node("neg", (tx,), (x.type,))
    iff = ir.Node("prim::If", (gt.output, loop.output), (x.type,),
                  blocks=[ir.Block([tx], [neg], [neg.output]), ir.Block([ex], [], [ex])])
    nodes = [true, half, loop, two, gt, iff]
    return ir.Graph("loop", ir.Block([x, n], nodes, [iff.output]))


def test_loop_and_if():
    g = _loop_graph()
    _, prog = lower(g, [R(4), 3])
    fn = load(prog)
    for n in (0, 2, 3, 5):
        compare(g, fn, [R(4), n])
    assert "while " in prog.full_source and "if " in prog.full_source


# --- what is not lowered ------------------------------------------------------------------------


def test_not_lowered_reasons():
    g, _ = trace_graph(lambda x: x * 2, (R(3, dtype=t.float16),))
    with pytest.raises(NotLowered, match="float16"):
        lower(g, [R(3, dtype=t.float16)])
    g, _ = trace_graph(lambda x: x.sort(-1)[0] + 1, (R(3),))
    with pytest.raises(NotLowered, match="op sort"):
        lower(g, [R(3)])
    g, _ = trace_graph(lambda x: x.squeeze(1) + 1, (R(3, 1),))
    with pytest.raises(NotLowered):
        lower(g, [R(3, 1)])


# --- one-sided clamps, shape queries, run-time select, chunk, math, None outputs -----------------


def test_one_sided_clamps_fused():
    w, b = R(5, 4), R(5)

    def f(x):
        h = (x @ w.t() + b).clamp(min=0.0)
        return (t.clamp(h, max=0.5) * 2 + t.clamp_min(h, 0.1) - t.clamp_max(h, 0.2),
                t.maximum(h, t.tensor(0.25)) + t.minimum(h, t.tensor(0.3)))
    sg, prog, _ = check(f, (R(3, 4),), (R(1, 4),))
    ops = " ".join(n.attrs["ops"] for n in sg.nodes() if n.op == "prim::Fused")
    assert "clamp" in ops and "maximum" in ops


def _shapes_loop(x, h, w, i: int):
    n = x.size(0) + len(x) + x.dim() + x.shape[-1]
    s = math.exp(0.5 * i) + math.sqrt(float(n)) + math.floor(1.5)
    for k in range(x.shape[0]):
        a, b = (x[k] @ w).chunk(2, 1)
        h = a.sigmoid() * b.tanh() + h
    return h * n + s, x[i], x[-1 - i], None


def _script_lower(f, args):
    from jitorch.script.passes import pipeline
    g = t.script(f).graph
    sg = pipeline.run(_specialise(g, args))
    return g, load(cpu.generate(sg))


def test_shape_queries_runtime_select_chunk_math_none():
    args = (R(3, 2, 4), R(2, 3), R(4, 6), 1)
    g, fn = _script_lower(_shapes_loop, args)
    for a in (args, (R(5, 1, 4), R(1, 3), R(4, 6), -2)):
        ref = interpreter.run_graph(g, list(a))
        got = fn(*[raw(v) for v in a])
        assert got[3] is None and ref[3] is None
        for r, o in zip(ref[:3], got[:3]):
            np.testing.assert_allclose(o, raw(r), rtol=1e-5, atol=1e-5)
    with pytest.raises(IndexError, match=r"index \? is out of bounds for dimension 0 with size \?"):
        fn(*[raw(v) for v in args[:3]], 3)
    with pytest.raises(ValueError, match=r"not enough values to unpack \(expected 2, got \?\)"):
        fn(raw(R(3, 2, 4)), raw(R(2, 1)), raw(R(4, 1)), 0)
