"""The LLVM pipelines of generated code (kernels/llvm_pipelines.py, issue 17): an entry that
outlines its compute nodes and has no loop of its own is marked in its source and its code
library is built with the glue pipeline; every kernel is marked for the kernel pipeline
(function passes at O1, module passes at O3); any other entry keeps Numba's; results are the same;
a Numba without the wrapped internals keeps its default pipeline."""
from __future__ import annotations

import contextlib
import re
import types

import numba
import numpy as np
import pytest

import jitorch as jt
import jitorch.jit
from jitorch.script.kernels import cache, llvm_pipelines as ep, numba_cache

from fresh_modules import set_aside


@pytest.fixture(autouse=True)
def fresh_cache(monkeypatch, tmp_path):
    # an empty cache directory, and the modules this process loaded set aside (another test's
    # copy of a program would be reused, and nothing compiled here to record a pipeline)
    monkeypatch.setenv("JITORCH_CACHE_DIR", str(tmp_path / "cache"))
    ep.RECORD.clear()
    with set_aside():
        yield


def test_an_outlined_entry_gets_the_glue_pipeline_with_the_same_results():
    @jt.jit.script
    def two_kernels(x):
        return x.sum(0), x.sum(1)

    x = np.arange(12, dtype=np.float32).reshape(3, 4) / 7
    a, b = two_kernels(jt.tensor(x))
    assert ep.mark_line(ep.GLUE) in two_kernels.code
    got = [p for m, p in list(ep.RECORD) if p == ep.GLUE.name]
    assert len(got) == 1  # the entry
    # its two kernels' modules carry the kernel pipeline's mark (whether they compiled here or
    # were in memory already, from another test of this process)
    names = re.findall(r"caller\('(_jitorch_prog_\w+)'", two_kernels.code)
    assert len(names) == 2
    for name in names:
        with open(cache.loaded(name).__file__) as fh:
            assert ep.mark_line(ep.KERNEL) in fh.read()
    np.testing.assert_allclose(a.numpy(), x.sum(0), rtol=1e-6)
    np.testing.assert_allclose(b.numpy(), x.sum(1), rtol=1e-6)


def test_an_entry_with_its_own_loop_keeps_numbas_pipeline():
    @jt.jit.script
    def one_loop(x):
        return x * 3.0 + 1.0

    y = one_loop(jt.arange(5, dtype=jt.float32))
    assert ep.MARK not in one_loop.code
    assert [p for _, p in list(ep.RECORD)] and \
        all(p == ep.DEFAULT for _, p in list(ep.RECORD))
    assert y.tolist() == [1.0, 4.0, 7.0, 10.0, 13.0]


def test_the_criterion():
    assert ep.is_glue(True, ["    k1 = _k0(a0_)", "    while c and i < n:", "        i += 1"])
    assert not ep.is_glue(True, ["    for k in range(n):", "        o[k] = a[k]"])
    assert not ep.is_glue(False, ["    v = a0_.shape[0]"])


_GLUE = ("entry", "def entry(a, b):\n    c = np.empty(a.shape[0], np.float64)\n"
                  "    c[0] = a[0] + b\n    return c, a.shape[0] * 2\n")  # loop-free glue
_LOOP = ("kernel", "def kernel(a, w):\n    s = 0.0\n    for i in range(a.shape[0]):\n"
                   "        s += a[i] * w[i & 3]\n    return s\n")


def _njit(name: str, pipeline, fn=_GLUE):
    """An njit function `fn` (its name, its source) of a module `name`, the module marked for
    `pipeline` (None: not marked)."""
    ns = {"__name__": name, "np": np}
    if pipeline is not None:
        exec(ep.mark_line(pipeline), ns)
    exec(fn[1], ns)
    return numba.njit(ns[fn[0]])


def test_the_hook_applies_to_the_marked_library_and_its_object_is_cacheable(monkeypatch):
    f = _njit("jitorch_test_glue_a", ep.GLUE)
    sig = (numba.float64[::1], numba.float64)
    machines = []
    tm = ep._target_machine
    monkeypatch.setattr(ep, "_target_machine",
                        lambda cg, level: machines.append(level) or tm(cg, level))
    numba_cache.compile_program(f, sig)
    assert machines == [ep.GLUE.codegen]  # its machine code emitted at the glue's level
    assert list(ep.RECORD) == [("jitorch_test_glue_a", ep.GLUE.name)]
    c, k = f(np.array([1.5, 2.0]), 2.0)
    assert c[0] == 3.5 and k == 4
    lib = f.overloads[sig].library
    # what Numba's disk cache saves: the machine code emitted here (llvm_pipelines._wrap_emission)
    name, kind, data = lib.serialize_using_object_code()[:3]
    assert kind == "object" and data[0][:4] == b"\x7fELF"


def test_a_numba_without_the_internals_keeps_its_default(monkeypatch):
    assert not ep.wrap(types.SimpleNamespace())
    assert not ep.wrap(types.SimpleNamespace(CPUCodeLibrary=object, CPUCodegen=object))
    monkeypatch.setattr(ep, "INSTALLED", False)  # (what install() leaves on such a Numba)
    f = _njit("jitorch_test_glue_b", ep.GLUE)
    numba_cache.compile_program(f, (numba.float64[::1], numba.float64))
    assert list(ep.RECORD) == [("jitorch_test_glue_b", ep.DEFAULT)]
    assert f(np.array([1.0]), 1.0)[0][0] == 2.0


def _levels(monkeypatch):
    """{(library name, stage): {opt levels of the pass builders made for it}}, filled as Numba
    optimises libraries from here on (a pass builder per function of the module, then two for
    the module)."""
    import llvmlite.binding as ll
    seen, current = {}, []
    orig_opt, orig_pb = ep._optimising, ll.create_pass_builder

    @contextlib.contextmanager
    def spy(library, stage):
        current.append((library.name, stage))
        try:
            with orig_opt(library, stage):
                yield
        finally:
            current.pop()

    def pass_builder(tm, pto):
        if current:
            seen.setdefault(current[-1], set()).add(int(pto.speed_level))
        return orig_pb(tm, pto)
    monkeypatch.setattr(ep, "_optimising", spy)
    monkeypatch.setattr(ll, "create_pass_builder", pass_builder)
    return seen


def _check(f):
    a = np.arange(10.0)
    w = np.array([1.0, -1.0, 2.0, 0.5])
    assert f(a, w) == sum(a[i] * w[i & 3] for i in range(10))


def test_a_kernel_gets_function_passes_at_o1_and_module_passes_at_o3(monkeypatch):
    seen = _levels(monkeypatch)
    f = _njit("jitorch_test_kernel_a", ep.KERNEL, _LOOP)
    numba_cache.compile_program(f, (numba.float64[::1], numba.float64[::1]))
    assert list(ep.RECORD) == [("jitorch_test_kernel_a", ep.KERNEL.name)]
    assert seen[("kernel", "functions")] == {1}  # Numba's: 3
    assert seen[("kernel", "module")] == {0, 3}  # (its cheap pass before refprune, then O3)
    _check(f)


def test_an_unmarked_function_keeps_numbas_levels(monkeypatch):
    seen = _levels(monkeypatch)
    f = _njit("jitorch_test_plain_a", None, _LOOP)
    numba_cache.compile_program(f, (numba.float64[::1], numba.float64[::1]))
    assert list(ep.RECORD) == [("jitorch_test_plain_a", ep.DEFAULT)]
    assert seen[("kernel", "functions")] == {3}
    assert seen[("kernel", "module")] == {0, 3}
    _check(f)
