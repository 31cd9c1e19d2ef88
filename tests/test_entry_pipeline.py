"""The glue entries' LLVM pipeline (kernels/entry_pipeline.py, issue 17): an entry that outlines
its compute nodes and has no loop of its own is marked in its source and its code library is
built with the cheaper pipeline; any other entry keeps Numba's; results are the same; a Numba
without the wrapped internals keeps its default pipeline."""
from __future__ import annotations

import types

import numba
import numpy as np
import pytest

import jitorch as jt
import jitorch.jit
from jitorch.script.kernels import entry_pipeline as ep, numba_cache


@pytest.fixture(autouse=True)
def fresh_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("JITORCH_CACHE_DIR", str(tmp_path / "cache"))
    ep.RECORD.clear()


def test_an_outlined_entry_gets_the_glue_pipeline_with_the_same_results():
    @jt.jit.script
    def two_kernels(x):
        return x.sum(0), x.sum(1)

    x = np.arange(12, dtype=np.float32).reshape(3, 4) / 7
    a, b = two_kernels(jt.tensor(x))
    assert ep.mark_line() in two_kernels.code
    got = [p for m, p in list(ep.RECORD) if p == ep.PIPELINE]
    assert len(got) == 1  # the entry (its kernels: Numba's pipeline)
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


def _marked(name: str, marked: bool = True):
    """An njit `entry` of module `name` (loop-free glue), its module carrying the mark."""
    ns = {"__name__": name, "np": np}
    if marked:
        exec(ep.mark_line(), ns)
    exec("def entry(a, b):\n    c = np.empty(a.shape[0], np.float64)\n"
         "    c[0] = a[0] + b\n    return c, a.shape[0] * 2\n", ns)
    return numba.njit(ns["entry"])


def test_the_hook_applies_to_the_marked_library_and_its_object_is_cacheable(monkeypatch):
    f = _marked("jitorch_test_glue_a")
    sig = (numba.float64[::1], numba.float64)
    machines = []
    tm = ep._target_machine
    monkeypatch.setattr(ep, "_target_machine", lambda cg: machines.append(cg) or tm(cg))
    numba_cache.compile_program(f, sig)
    assert len(machines) == 1  # its machine code emitted at ep.CODEGEN_LEVEL
    assert list(ep.RECORD) == [("jitorch_test_glue_a", ep.PIPELINE)]
    c, k = f(np.array([1.5, 2.0]), 2.0)
    assert c[0] == 3.5 and k == 4
    lib = f.overloads[sig].library
    # what Numba's disk cache saves: the machine code emitted here (entry_pipeline._wrap_emission)
    name, kind, data = lib.serialize_using_object_code()[:3]
    assert kind == "object" and data[0][:4] == b"\x7fELF"


def test_a_numba_without_the_internals_keeps_its_default(monkeypatch):
    assert not ep.wrap(types.SimpleNamespace())
    assert not ep.wrap(types.SimpleNamespace(CPUCodeLibrary=object, CPUCodegen=object))
    monkeypatch.setattr(ep, "INSTALLED", False)  # (what install() leaves on such a Numba)
    f = _marked("jitorch_test_glue_b")
    numba_cache.compile_program(f, (numba.float64[::1], numba.float64))
    assert list(ep.RECORD) == [("jitorch_test_glue_b", ep.DEFAULT)]
    assert f(np.array([1.0]), 1.0)[0][0] == 2.0
