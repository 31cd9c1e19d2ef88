"""The runtime (script/runtime/functions.py): argument checks, specialisation keys, fallbacks,
stats, log.

Programs here are hand-written sources fed through the `programs._lower` seam, so these tests
do not depend on the code generator; each source compiles once per process (modules are shared
by content hash).
"""
import numpy as np
import pytest

import jitorch
import jitorch.jit
from jitorch.script import ir
from jitorch.script.runtime import functions as runtime, programs, stats
from jitorch.script.frontend.trace import trace_graph


class Program:
    def __init__(self, source, entry, output_types):
        self.source, self.entry, self.output_types = source, entry, output_types


MULADD = """
import numpy as np
import numba

@numba.njit(nogil=True, error_model="numpy", cache=False)
def muladd(x, y):
    if x.shape != y.shape:
        raise ValueError("muladd: shapes differ")
    return (x * y + x,)
"""

BAD = """
import numba

@numba.njit(nogil=True, cache=False)
def bad(x, y):
    return (x.no_such_attribute,)
"""


@pytest.fixture(autouse=True)
def cache_dir(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("JITORCH_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "jcache"))
    monkeypatch.delenv("JITORCH_LOG", raising=False)
    monkeypatch.delenv("JITORCH_STRICT", raising=False)


def hand_lower(source, entry):
    def lower(graph, arg_types, static=None):
        out = ir.TensorType(arg_types[0].dtype, (None,) * arg_types[0].ndim)
        return graph, Program(source, entry, [out]), None
    return lower


def traced_muladd():
    g, _ = trace_graph(lambda x, y: x * y + x, (jitorch.ones(2, 3), jitorch.ones(2, 3)))
    for v in g.inputs:
        v.type = programs._symbolic(v.type)
    return runtime.ScriptFunction(g, name="muladd_fn")


def test_compiled_call_matches_eager_and_new_size_does_not_compile(monkeypatch):
    monkeypatch.setattr(programs, "_lower", hand_lower(MULADD, "muladd"))
    f = traced_muladd()
    x, y = jitorch.randn(3, 4), jitorch.randn(3, 4)
    r = f(x, y)
    assert isinstance(r, jitorch.Tensor) and r.dtype == jitorch.float32
    np.testing.assert_allclose(r.numpy(), (x * y + x).numpy(), rtol=1e-6)
    assert "def muladd" in f.code and "cache=True" in f.code
    before = jitorch.jit.stats()
    for shape in [(5, 7), (1, 1), (64, 2)]:
        a, b = jitorch.randn(*shape), jitorch.randn(*shape)
        np.testing.assert_allclose(f(a, b).numpy(), (a * b + a).numpy(), rtol=1e-6)
    after = jitorch.jit.stats()
    assert after.compiles == before.compiles
    assert after.memory_hits == before.memory_hits + 3
    disp = f._last.fn
    assert len(disp.signatures) == 1  # one Numba specialisation serves every size


def test_strided_inputs_take_one_A_overload_without_copies(monkeypatch):
    monkeypatch.setattr(programs, "_lower", hand_lower(MULADD, "muladd"))
    f = traced_muladd()
    y = jitorch.randn(3, 4)
    f(jitorch.randn(3, 4), y)
    before = set(f._last.fn.signatures)
    x = jitorch.randn(4, 3).t()  # Fortran order: typed 'A', not 'F'
    np.testing.assert_allclose(f(x, y).numpy(), (x * y + x).numpy(), rtol=1e-6)
    sigs = set(f._last.fn.signatures)
    new = sigs - before
    assert [s[0].layout for s in new] in ([], ["A"]) and all(s[0].layout != "F" for s in sigs)
    z = jitorch.randn(3, 8)[:, ::2]  # strided and neither C nor F: the same 'A' overload
    np.testing.assert_allclose(f(z, y).numpy(), (z * y + z).numpy(), rtol=1e-6)
    assert set(f._last.fn.signatures) == sigs
    assert len(f._cache) == 2  # layout is part of the key: one entry per (C, A) pattern


def test_new_dtype_compiles_and_log_names_the_change(monkeypatch, capfd):
    monkeypatch.setattr(programs, "_lower", hand_lower(MULADD, "muladd"))
    monkeypatch.setenv("JITORCH_LOG", "compile")
    f = traced_muladd()
    f(jitorch.randn(2, 2), jitorch.randn(2, 2))
    n = jitorch.jit.stats().compiles
    r = f(jitorch.randn(2, 2, dtype=jitorch.float64), jitorch.randn(2, 2, dtype=jitorch.float64))
    assert r.dtype == jitorch.float64
    assert jitorch.jit.stats().compiles == n + 1
    err = capfd.readouterr().err
    assert "jitorch: compile muladd_fn: first call" in err
    assert "'x' float32 ndim=2 -> float64 ndim=2" in err and " ms" in err


def test_error_inside_program_propagates_and_keeps_program(monkeypatch):
    monkeypatch.setattr(programs, "_lower", hand_lower(MULADD, "muladd"))
    f = traced_muladd()
    # the program's own error ("shapes differ") makes the interpreter rerun the call, which
    # raises eager's error (kernels/signals.py)
    with pytest.raises(RuntimeError, match="must match the size of tensor b"):
        f(jitorch.randn(2, 3), jitorch.randn(3, 2))
    n = jitorch.jit.stats().compiles
    f(jitorch.randn(2, 3), jitorch.randn(2, 3))
    assert jitorch.jit.stats().compiles == n


def test_not_lowered_falls_back_to_interpreter_and_records_reason(monkeypatch):
    monkeypatch.setattr(programs, "_lower",
                        lambda g, t, s=None: (g, None, "not lowered: op foo: no rule"))
    f = traced_muladd()
    x, y = jitorch.randn(3), jitorch.randn(3)
    np.testing.assert_allclose(f(x, y).numpy(), (x * y + x).numpy())
    st = jitorch.jit.stats()
    assert st.interpreted_reasons.get("not lowered: op foo: no rule", 0) >= 1
    assert f.code.startswith("# runs interpreted: not lowered: op foo")
    runs = st.interpreted_runs
    f(x, y)
    assert jitorch.jit.stats().interpreted_runs == runs + 1


def test_numba_typing_error_falls_back(monkeypatch):
    monkeypatch.setattr(programs, "_lower", hand_lower(BAD, "bad"))
    f = traced_muladd()
    x, y = jitorch.randn(3), jitorch.randn(3)
    np.testing.assert_allclose(f(x, y).numpy(), (x * y + x).numpy())
    assert "numba could not compile the program: TypingError" in f.code


def test_real_pipeline_gives_right_values():
    # whatever parts of the compiler exist: compiled or interpreted, the values are eager's
    f = jitorch.jit.trace(lambda x: (x * 2).tanh().sum(1), (jitorch.randn(3, 4),))
    x = jitorch.randn(5, 4)
    # (atol: a float32 sum of four tanh values may cancel to near zero, where a last-bit
    # difference between the compiled tanh and NumPy's is a large relative error)
    np.testing.assert_allclose(f(x).numpy(), (x * 2).tanh().sum(1).numpy(), rtol=1e-5,
                               atol=1e-6)
    assert isinstance(str(f.graph), str) and "tanh" in str(f.graph)
    assert f.graph_for(x) is not None
    assert f.__wrapped__ is not None


def test_trace_returns_tuple_when_function_does():
    f = jitorch.jit.trace(lambda x: (x + 1,), (jitorch.ones(2),))
    r = f(jitorch.ones(3))
    assert isinstance(r, tuple) and len(r) == 1
    np.testing.assert_allclose(r[0].numpy(), np.full(3, 2.0))


def _hand_graph(*types_names):
    params = [ir.Value(t, n) for t, n in types_names]
    return ir.Graph("g", ir.Block(params=params, returns=[params[0]]))


def test_argument_checks_are_pytorch_like(monkeypatch):
    monkeypatch.setattr(programs, "_lower", lambda g, t, s=None: (g, None, "test"))
    g = _hand_graph((ir.TensorType(), "x"), (ir.FLOAT, "alpha"), (ir.INT, "n"))
    f = runtime.ScriptFunction(g, name="g", defaults={"n": 3})
    x = jitorch.ones(2)
    assert f(x, 2) is x and f(x, alpha=1.5, n=4) is x  # int accepted for float
    with pytest.raises(TypeError, match=r"g\(\) Expected a value of type 'Tensor' for argument "
                                         r"'x' but instead found type 'int'"):
        f(1, 2.0)
    with pytest.raises(TypeError, match="Expected a value of type 'int' for argument 'n'"):
        f(x, 1.0, 2.5)
    with pytest.raises(TypeError, match="Expected a value of type 'float'"):
        f(x, "a")
    with pytest.raises(TypeError, match=r"missing value for argument 'alpha'"):
        f(x)
    with pytest.raises(TypeError, match=r"expected at most 3 argument\(s\) but received 4"):
        f(x, 1.0, 2, 3)
    with pytest.raises(TypeError, match="unexpected keyword argument 'beta'"):
        f(x, 1.0, beta=2)
    with pytest.raises(TypeError, match="multiple values for argument 'x'"):
        f(x, 1.0, x=x)


def test_static_args_are_part_of_the_key(monkeypatch):
    seen = []

    def lower(graph, arg_types, static=None):
        seen.append(dict(static))
        return graph, None, "test"
    monkeypatch.setattr(programs, "_lower", lower)
    g = _hand_graph((ir.TensorType(), "x"), (ir.INT, "k"))
    f = runtime.ScriptFunction(g, name="g", static_args=("k",))
    x = jitorch.ones(2)
    f(x, 1), f(x, 1), f(x, 2)
    assert seen == [{"k": 1}, {"k": 2}]


def test_requires_grad_path_gives_eager_gradients(monkeypatch):
    # forward and backward programs interpreted here (fast); the compiled pair is exercised by
    # the OpInfo tests. What is tested: the autodiff runtime's split, saved values, tape node.
    monkeypatch.setattr(programs, "_lower", lambda g, t, s=None: (g, None, "test"))
    def fn(x, w):
        return (x * w).tanh().sum()
    x = jitorch.randn(3, 4, dtype=jitorch.float64, requires_grad=True)
    w = jitorch.randn(3, 4, dtype=jitorch.float64, requires_grad=True)
    f = jitorch.jit.trace(fn, (x.detach(), w.detach()))
    gx, gw = jitorch.autograd.grad(f(x, w), (x, w))
    ex, ew = jitorch.autograd.grad(fn(x, w), (x, w))
    np.testing.assert_allclose(gx.numpy(), ex.numpy(), rtol=1e-10)
    np.testing.assert_allclose(gw.numpy(), ew.numpy(), rtol=1e-10)
    with jitorch.no_grad():  # grad mode off: another specialisation, no tape
        assert f(x, w).grad_fn is None
    assert "forward runs interpreted: test" in f.code
    # a new shape: same forward, a backward for the new shapes
    x2 = jitorch.randn(2, 4, dtype=jitorch.float64, requires_grad=True)
    w2 = jitorch.randn(1, 4, dtype=jitorch.float64, requires_grad=True)
    l2 = f(x2, w2)
    l2.backward()
    ex, ew = jitorch.autograd.grad(fn(x2, w2), (x2, w2))
    np.testing.assert_allclose(x2.grad.numpy(), ex.numpy(), rtol=1e-10)
    np.testing.assert_allclose(w2.grad.numpy(), ew.numpy(), rtol=1e-10)
    with pytest.raises(RuntimeError, match="second time"):
        l2.backward()


def test_stats_snapshot_and_reset():
    s = jitorch.jit.stats()
    for k in ("compiles", "numba_compiles", "disk_hits", "memory_hits", "interpreted_runs",
              "interpreted_reasons", "compile_seconds", "calls"):
        assert k in s
    assert s.calls == s["calls"]
    stats.reset()
    assert jitorch.jit.stats().calls == 0


def test_facade_names():
    j = jitorch.jit
    for name in ("script", "trace", "ScriptFunction", "ScriptError", "Error", "annotate",
                 "ignore", "unused", "is_scripting", "export", "Final", "fork", "wait",
                 "stats", "save", "load", "freeze"):
        assert getattr(j, name) is not None
    from jitorch.script.kernels.signals import ScriptRuntimeError
    assert j.Error is ScriptRuntimeError  # what generated programs and the interpreter raise
    assert jitorch.script is not None and callable(jitorch.script)


def test_zero_dim_tensors_keep_their_shape(monkeypatch):
    monkeypatch.setattr(programs, "_lower", hand_lower(MULADD, "muladd"))
    f = traced_muladd()
    x, y = jitorch.tensor(2.0), jitorch.tensor(3.0)
    r = f(x, y)
    assert r.shape == () and float(r) == 8.0


@jitorch.jit.ignore
def _python_side(x):
    return x + 1


def _calls_python(x):
    return _python_side(x) * 2


def test_ignored_python_call_is_noted_and_logged(monkeypatch, capfd):
    monkeypatch.setenv("JITORCH_LOG", "compile")
    f = jitorch.jit.script(_calls_python)
    np.testing.assert_allclose(f(jitorch.ones(2)).numpy(), [4.0, 4.0])
    assert "# note: this program calls Python (_python_side)" in f.code
    err = capfd.readouterr().err
    assert "jitorch: compile _calls_python: first call ->" in err
