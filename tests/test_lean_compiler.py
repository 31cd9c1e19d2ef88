"""The lean compiler (targets/cpu/lean): generated functions compiled without Numba's frontend.

Every scripted and traced OpInfo test already runs its kernels and entries through it (it is
the default); these tests pin what that table does not reach: each statement form against the
same function compiled by Numba, static raises, references (no leaks), the functions it
declines (Numba's pipeline compiles those inside the same intrinsic), and the setting that
switches it off.
"""
from __future__ import annotations

import importlib.util
import itertools
import pathlib
import textwrap

import numpy as np
import pytest

import jitorch
from jitorch.script.targets.cpu import lean

_HEAD = """
import math
import numba
import numpy as np
from jitorch.script.targets.cpu.lean import body_of
from jitorch.script.kernels.signals import RuntimeError as _RuntimeError
from jitorch.script.targets.cpu.packed import _jt_ints
"""
_n = itertools.count()


def _module(tmp_path, source: str, nargs: int):
    """A module with `kernel_numba` (the source, compiled by Numba) and `kernel` (the same
    source through the lean compiler), both callable from Python."""
    params = ", ".join(f"a{i}" for i in range(nargs))
    text = _HEAD + "\n" + textwrap.dedent(source).strip() + "\n\n" + \
        "kernel_numba = numba.njit(kernel_source)\n_body = body_of(kernel_source)\n\n\n" + \
        f"@numba.njit\ndef kernel({params}):\n    return _body({params})\n"
    name = f"lean_case_{next(_n)}"
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _same(a, b):
    if isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)
    else:
        assert type(a) is type(b) and a == b


LOOPS = """
def kernel_source(p0, p1, k):
    n0, n1 = p0.shape
    out = np.empty((n0, n1), np.float32)
    acc = np.float32(0.0)
    tot = 0.0
    for i in range(n0):
        for j in range(1, n1):
            x = p0[i, j] * p1[j]
            out[i, j] = x if x > np.float32(0.0) else -x
            acc = acc + x
        out[i, 0] = np.float32(i)
        out[i, 0] += p1[0]
    for i in range(n0 - 1, -1, -1):
        tot = tot + np.float64(out[i, n1 - 1])
    step = k
    m = 0
    for i in range(0, n1, step):
        m += 1
    w = 0
    while w < n0 and (w < 3 or k > 100):
        w = w + 1
    back = out[-1, -1]
    flag = (acc > np.float32(0.0)) or (m == 0)
    dims = p0.shape
    return (out, acc, tot, m, w, back, flag, dims[-1], int(k != 1))
"""


@pytest.mark.parametrize("k", [1, 2, 3])
def test_statement_forms_match_numba(tmp_path, k):
    mod = _module(tmp_path, LOOPS, 3)
    rng = np.random.default_rng(k)
    p0 = rng.standard_normal((4, 5)).astype(np.float32)
    p1 = rng.standard_normal(5).astype(np.float32)
    _same(mod.kernel(p0, p1, k), mod.kernel_numba(p0, p1, k))


def test_negative_step_and_empty_ranges(tmp_path):
    mod = _module(tmp_path, """
    def kernel_source(n, s):
        out = np.zeros(8, np.int64)
        c = 0
        for i in range(n, -2, s):
            out[c % 8] += i
            c += 1
        for i in range(n, n):
            c += 100
        return out, c
    """, 2)
    for n, s in [(5, -1), (5, -2), (-3, 1), (0, 2), (6, -3)]:
        _same(mod.kernel(n, s), mod.kernel_numba(n, s))


def test_static_raise_is_the_same_exception(tmp_path):
    mod = _module(tmp_path, """
    def kernel_source(p0, p1):
        if p0.shape[0] != p1.shape[0]:
            raise _RuntimeError('The size of tensor a must match the size of tensor b')
        return p0 + p1
    """, 2)
    a, b = np.ones(3), np.ones(4)
    with pytest.raises(RuntimeError, match="size of tensor a must match") as lean_err:
        mod.kernel(a, b)
    with pytest.raises(RuntimeError) as numba_err:
        mod.kernel_numba(a, b)
    assert type(lean_err.value) is type(numba_err.value)
    assert str(lean_err.value) == str(numba_err.value)
    _same(mod.kernel(a, a), a + a)


def test_arrays_are_not_leaked(tmp_path):
    """Variables reassigned with new arrays, views of temporaries, arrays returned in a tuple:
    Numba's runtime counts the same live allocations before and after many calls."""
    from numba.core.runtime import _nrt_python as nrt
    from numba.core.runtime import rtsys
    mod = _module(tmp_path, """
    def kernel_source(p0):
        buf = np.empty(p0.shape[0], np.float64)
        for r in range(3):
            buf = np.empty(p0.shape[0] + r, np.float64)
            buf[0] = r
        v = np.ascontiguousarray(p0).reshape(p0.shape[0], 1)
        w = p0.copy()[1:]
        keep = (v, w[0])
        return keep[0], buf
    """, 1)
    x = np.arange(6.0)
    stats_were_on = nrt.memsys_stats_enabled()
    nrt.memsys_enable_stats()
    mod.kernel(x)  # (compiled, and its one-time allocations made)
    before = rtsys.get_allocation_stats()
    for _ in range(50):
        out = mod.kernel(x)
    del out
    after = rtsys.get_allocation_stats()
    if not stats_were_on:
        nrt.memsys_disable_stats()
    live = (after.alloc - after.free) - (before.alloc - before.free)
    assert live == 0, (before, after)
    assert after.mi_alloc - after.mi_free == before.mi_alloc - before.mi_free


def test_variables_stored_once_and_unpacked_tuples_count_references(tmp_path):
    """Variables stored by one statement outside loops skip the release of the null they
    held, and an unpacked new tuple hands its references to the variables (lower.py); a tuple
    variable unpacked twice, a variable stored in a branch and one stored in a loop keep the
    general rule. Values as Numba's, and no allocation leaked or freed twice."""
    from numba.core.runtime import _nrt_python as nrt
    from numba.core.runtime import rtsys
    from jitorch.script.targets.cpu.lean import lower
    src = """
    def kernel_source(p0, k):
        a, b = (np.empty(3), p0.copy())
        pair = (a, b)
        c, d = pair
        e, f = pair
        if k > 0:
            g = c[:2]
        else:
            g = d[:2]
        h = d
        for i in range(k):
            h = h + 1.0
        a[:] = 1.0
        return e, f, g, h
    """
    import ast
    tree = ast.parse(textwrap.dedent(src)).body[0]
    assert lower._stored_once(tree) == {"a", "b", "pair", "c", "d", "e", "f"}
    mod = _module(tmp_path, src, 2)
    x = np.arange(4.0)
    for k in (0, 3):
        _same(mod.kernel(x, k), mod.kernel_numba(x, k))
    stats_were_on = nrt.memsys_stats_enabled()
    nrt.memsys_enable_stats()
    mod.kernel(x, 2)
    before = rtsys.get_allocation_stats()
    for k in range(50):
        out = mod.kernel(x, k % 3)
    del out
    after = rtsys.get_allocation_stats()
    if not stats_were_on:
        nrt.memsys_disable_stats()
    assert (after.alloc - after.free) - (before.alloc - before.free) == 0, (before, after)
    assert after.mi_alloc - after.mi_free == before.mi_alloc - before.mi_free


def test_a_variable_rebound_with_another_type_is_typed(tmp_path):
    """A name bound to a 3-d array, then to a 4-d one (lower_conv.py's `cv1`), each binding at
    the top level: a variable per definition (lean/rename.py), typed by the lean compiler, not
    declined; a rebinding inside a loop still unifies (the accumulator)."""
    mod = _module(tmp_path, """
    def kernel_source(p0, k):
        cv1 = np.ascontiguousarray(p0)
        n = cv1.shape[0]
        cv1 = cv1.reshape((1, cv1.shape[0], cv1.shape[1], cv1.shape[2]))
        acc = 0
        for i in range(k):
            acc = acc + cv1[0, i, 0, 0]
        first, cv1 = cv1, cv1.sum()
        return first, cv1, n, acc
    """, 2)
    declined = lean.counts["declined"]
    x = np.arange(24.0).reshape(2, 3, 4)
    _same(mod.kernel(x, 2), mod.kernel_numba(x, 2))
    assert lean.counts["declined"] == declined
    assert not [r for (m, _, _), r in lean.unsupported.items() if m == mod.__name__]


@pytest.mark.parametrize("body, why", [
    ("for v in p0:\n    t = t + v", "a for loop not over range()"),
    ("try:\n    t = p0[0]\nexcept Exception:\n    t = 0.0", "Try"),
    ("p0 = p0 + 1.0", "assignment to parameter p0"),
    ("if t > 1.0:\n    raise _RuntimeError(str(t))", "raise with a run-time argument"),
    ("t = sum([v for v in range(4)])", "ListComp"),
])
def test_declines_what_it_does_not_compile(tmp_path, body, why):
    """... and Numba's pipeline compiles them, inside the same intrinsic: the same results."""
    mod = _module(tmp_path, "def kernel_source(p0):\n    t = 0.0\n" +
                  textwrap.indent(body, "    ") + "\n    return t\n", 1)
    x = np.arange(3.0)
    declined = lean.counts["declined"]
    try:
        want = mod.kernel_numba(x.copy())
    except Exception as e:  # noqa: BLE001 - the same exception, either way
        with pytest.raises(type(e), match=str(e)[:20]):
            mod.kernel(x.copy())
    else:
        _same(mod.kernel(x.copy()), want)
    reasons = [r for (m, _, _), r in lean.unsupported.items() if m == mod.__name__]
    assert reasons and reasons[0].startswith(why), reasons
    assert lean.counts["declined"] == declined + 1


@pytest.mark.parametrize("error", [lean.Unsupported("declined by the test"),
                                   KeyError("a bug in the typer")])
def test_a_declined_program_runs_compiled(monkeypatch, tmp_path, error):
    """A program whose functions the lean compiler declines (or fails to type: a bug of its
    own) still runs compiled (Numba's pipeline compiled them), and the stats say so."""
    monkeypatch.setenv("JITORCH_CACHE_DIR", str(tmp_path / "jt"))
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "nb"))
    monkeypatch.setenv("JITORCH_COMPILE", "sync")

    def decline(*_a, **_k):
        raise error

    monkeypatch.setattr(lean, "infer", decline)

    c = 1.8125 if isinstance(error, lean.Unsupported) else 1.6875  # (new programs each time)

    @jitorch.jit.script
    def f(x, y):
        return (x * c + y).relu().sum(0) - 0.4375

    x, y = jitorch.randn(6, 3), jitorch.randn(6, 3)
    jitorch.jit.reset_stats()
    got = f(x, y)
    want = (x * c + y).relu().sum(0) - 0.4375
    assert jitorch.allclose(got, want)
    s = jitorch.jit.stats()
    assert s["compiled_runs"] == 1, s
    assert s["lean"]["declined"] >= 1 and s["lean"]["compiled"] == 0, s["lean"]


def test_the_lean_compiler_compiles_by_default(monkeypatch, tmp_path):
    monkeypatch.setenv("JITORCH_CACHE_DIR", str(tmp_path / "jt"))
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "nb"))
    monkeypatch.setenv("JITORCH_COMPILE", "sync")
    monkeypatch.delenv("JITORCH_LEAN", raising=False)

    @jitorch.jit.script
    def g(x, y):
        return (x * 2.0625 - y).tanh().sum(1) + 0.8125

    x, y = jitorch.randn(4, 5), jitorch.randn(4, 5)
    jitorch.jit.reset_stats()
    assert jitorch.allclose(g(x, y), (x * 2.0625 - y).tanh().sum(1) + 0.8125)
    k = jitorch.jit.stats()["lean"]
    assert k["compiled"] >= 1 and k["declined"] == 0, k


def test_the_setting(monkeypatch):
    monkeypatch.setenv("JITORCH_LEAN", "0")
    assert not lean.enabled()
    monkeypatch.setenv("JITORCH_LEAN", " 1")
    assert lean.enabled()
    monkeypatch.setenv("JITORCH_LEAN", "yes")
    with pytest.raises(ValueError, match="JITORCH_LEAN must be 0 or 1, not 'yes'"):
        lean.enabled()


def test_numba_setting_writes_the_old_module_form(monkeypatch):
    from jitorch.script.targets.cpu import kernel as kernel_mod

    class _Em:
        params = ["p0"]

    def text(setting):
        monkeypatch.setenv("JITORCH_LEAN", setting)
        monkeypatch.setattr("jitorch.script.targets.cpu.module_text.module_head",
                            lambda em: ("import numba\n", ["    y = p0 + 1"]))
        return kernel_mod.kernel_source(_Em(), ["y"])

    assert "body_of(kernel_source)" in text("1") and "def kernel(p0):" in text("1")
    old = text("0")
    assert "body_of" not in old and "kernel_source" not in old and "def kernel(p0):" in old


def test_reads_the_checked_source_not_the_file_again(monkeypatch, tmp_path):
    """The cache checks a module's text once; the lean compiler, which reads a function's
    source when it types it, must get that text even if the file changed since."""
    monkeypatch.setenv("JITORCH_CACHE_DIR", str(tmp_path / "jt"))
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "nb"))
    monkeypatch.delenv("JITORCH_LEAN", raising=False)
    from jitorch.script.kernels import cache
    src = "import numba\n\n\n" + lean.function_text(
        "@numba.njit(nogil=True)", "kernel", "a0", "    return a0 + 1.0625\n")
    mod, _ = cache.load_module(src)
    path = pathlib.Path(mod.__file__)
    path.write_text(path.read_text().replace("a0 + 1.0625", "a0 - 1000.0"))
    assert mod.kernel(1.0) == 2.0625


def test_range_of_narrow_integers(tmp_path):
    """range() over int32 and uint64 bounds: the loop variable's type is Numba's."""
    mod = _module(tmp_path, """
    def kernel_source(n, m):
        t = 0
        for i in range(np.int32(n)):
            t += i
        for j in range(np.uint64(1), np.uint64(m)):
            t += j
        for k in range(np.int32(n), np.int64(m) + 3, np.int8(2)):
            t += k
        return t, i, j, k
    """, 2)
    _same(mod.kernel(5, 4), mod.kernel_numba(5, 4))


def _direct_loads(src: str, argtys) -> list:
    """The subscripts of `src`'s function that nonneg.py addresses directly, as source text."""
    import ast

    from numba.core.registry import cpu_target

    from jitorch.script.targets.cpu.lean.typer import infer
    cpu_target.typing_context.refresh()
    cpu_target.target_context.refresh()
    fn = ast.parse(textwrap.dedent(src)).body[0]
    typed = infer(fn, {"np": np}, argtys, cpu_target.typing_context)
    return sorted(ast.unparse(n) for n in ast.walk(fn) if id(n) in typed.direct)


def test_direct_addressing_only_where_no_index_can_be_negative():
    from numba.core import types
    got = _direct_loads("""
    def f(p0, p1, k):
        n = p0.shape[0]
        m = int(n != 1)
        t = np.float64(0.0)
        j = 0
        for i in range(n):
            t = t + p0[i * m] + p1[i, j % n]
            j = j + 1
        for i2 in range(1, n, 2):
            t = t + p0[i2]
        for i3 in range(n - 1, 0, -1):
            t = t + p0[i3]
        w = 0
        w = k
        t = t + p0[k] + p0[n - 1] + p0[w] + p0[-1] + p1[min(j, n), 0]
        p1[n // 2, j] = t
        return t
    """, (types.float64[::1], types.float64[:, ::1], types.int64))
    assert got == ["p0[i * m]", "p0[i2]", "p1[i, j % n]", "p1[min(j, n), 0]",
                   "p1[n // 2, j]"], got


def test_negative_indices_still_wrap(tmp_path):
    mod = _module(tmp_path, """
    def kernel_source(p0, k):
        t = np.float64(0.0)
        j = 0
        for i in range(k - 3, 3):
            t = t + p0[i]
        j = k - 5
        t = t + p0[j] * 100.0
        p0[k - 6] = t
        return t, p0[-1]
    """, 2)
    x = np.arange(1.0, 7.0)
    _same(mod.kernel(x.copy(), 1), mod.kernel_numba(x.copy(), 1))


def test_literal_arguments_and_run_time_tuple_indices(tmp_path):
    """A constant is a literal to the function it is passed to (packed.py's `_jt_ints` needs
    one, `-1` included, which CPython's bytecode folds), a homogeneous tuple takes a run-time
    index, and a tuple a static slice."""
    mod = _module(tmp_path, """
    def kernel_source(a, p0, k):
        u = _jt_ints(a, 3)
        dims = p0.shape
        return u[-1] + u[0], dims[k % 2], dims[-1], -2.5, u[1:], u[::-1], dims[:-1]
    """, 3)
    a = np.arange(10, 13, dtype=np.int64)
    p0 = np.ones((2, 5))
    for k in (0, 1, 3):
        _same(mod.kernel(a, p0, k), mod.kernel_numba(a, p0, k))
    assert not [r for (m, _, _), r in lean.unsupported.items() if m == mod.__name__]


def test_library_helpers_are_typed_for_plain_arguments(tmp_path):
    """An njit helper called with constants (pool.py's `pool_out_size(h, 2, 2, 0, 1, False)`
    in a pooling kernel) is compiled for the constants' plain types, one overload for every
    kernel size, not a literal-specialised copy per call site as Numba's frontend makes."""
    from numba import types
    from jitorch.script.targets.cpu.pool import pool_out_size
    mod = _module(tmp_path, """
    from jitorch.script.targets.cpu.pool import pool_out_size
    def kernel_source(n):
        return pool_out_size(n, 3, 2, 1, 1, False) + pool_out_size(n, 5, 1, 0, 2, True)
    """, 1)
    before = set(pool_out_size.overloads)
    got = mod.kernel(17)
    added = set(pool_out_size.overloads) - before
    assert not [sig for sig in added if any(isinstance(t, types.Literal) for t in sig)], added
    assert (types.int64,) * 5 + (types.boolean,) in pool_out_size.overloads
    assert got == mod.kernel_numba(17)
