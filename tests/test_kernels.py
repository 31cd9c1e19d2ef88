"""Kernels as the unit of compilation (script/targets/cpu/kernel.py, kernel_call.py).

A kernel is named by what it computes, so the same computation in two functions, two layers or
two processes is compiled once; a different dtype or rank is another kernel (or overload) and
never collides; entries call kernels through symbols and a cached entry whose kernel cache is
gone recompiles instead of calling a null address.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap

import numba
import numpy as np

import jitorch
import jitorch.nn.functional as F
from jitorch.script.runtime import stats
from jitorch.script.targets.cpu import program as cpu
from jitorch.script.kernels import kernel_call


def _program(fn, *args):
    """The Program (entry + kernels) of scripted `fn` for `args`."""
    from jitorch.script.passes import pipeline  # noqa: F401 - (graph_for runs the passes)
    g = fn.graph_for(*args)
    return cpu.generate(g)


def weird_local_name_f(x, y):
    weird_local_name_t = (x * y).tanh()
    return weird_local_name_t @ weird_local_name_t.transpose(-1, -2)


def other_g(a, b):
    c = (a * b).tanh()
    return c @ c.transpose(-1, -2)


def only_for_stats(a, b):
    return (a + b).exp() @ b.t()


def single(x, y):
    return (x * y).tanh()


def test_same_computation_in_two_functions_is_one_kernel():
    f, g = jitorch.jit.script(weird_local_name_f), jitorch.jit.script(other_g)
    x, y = jitorch.randn(3, 4), jitorch.randn(3, 4)
    pf, pg = _program(f, x, y), _program(g, jitorch.randn(5, 2), jitorch.randn(5, 2))
    assert pf.kernels and pf.kernels == pg.kernels  # sizes and names are not part of a kernel
    assert not any("weird_local_name" in k for k in pf.kernels)
    np.testing.assert_allclose(f(x, y).numpy(), weird_local_name_f(x, y).numpy(), rtol=1e-5, atol=1e-6)
    before = dict(kernel_call.counts)
    np.testing.assert_allclose(g(x, y).numpy(), other_g(x, y).numpy(), rtol=1e-5, atol=1e-6)
    # g's kernels were f's: nothing compiled or loaded for them
    assert kernel_call.counts["compiled"] == before["compiled"]
    assert kernel_call.counts["disk"] == before["disk"]


def test_a_program_of_one_compute_node_is_one_function():
    f = jitorch.jit.script(single)
    x = jitorch.randn(3, 4)
    p = _program(f, x, x)
    assert p.kernels == [] and "for " in p.source  # (two compiles would share nothing)
    np.testing.assert_allclose(f(x, x).numpy(), single(x, x).numpy(), rtol=1e-5, atol=1e-6)


def test_dtype_and_rank_are_other_kernels():
    f = jitorch.jit.script(weird_local_name_f)
    x32 = jitorch.randn(3, 4)
    x64, x3 = x32.double(), jitorch.randn(2, 3, 4)
    p32, p64, p3 = (_program(f, a, a) for a in (x32, x64, x3))
    # the elementwise kernel has typed literals: another source per dtype; the matmul kernel
    # is one source with an overload per dtype (Numba's types are in its cache key)
    assert p32.kernels != p64.kernels and p32.kernels != p3.kernels
    for a in (x32, x64, x3):
        got = f(a, a)
        assert got.dtype == a.dtype
        np.testing.assert_allclose(got.numpy(), weird_local_name_f(a, a).numpy(), rtol=1e-5, atol=1e-6)


def test_broadcast_patterns_share_a_kernel_and_agree():
    f = jitorch.jit.script(weird_local_name_f)
    for xs, ys in [((3, 4), (3, 4)), ((3, 4), (1, 4)), ((3, 1), (1, 4)), ((1, 4), (3, 4))]:
        x, y = jitorch.randn(*xs), jitorch.randn(*ys)
        np.testing.assert_allclose(f(x, y).numpy(), weird_local_name_f(x, y).numpy(),
                                   rtol=1e-5, atol=1e-6)


class _Two(jitorch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = jitorch.nn.Linear(6, 6)
        self.b = jitorch.nn.Linear(6, 6)

    def forward(self, x):
        return self.b(self.a(x).tanh()).tanh()


def test_second_layer_reuses_the_first_layers_kernels():
    m = _Two()
    sm = jitorch.jit.script(m)
    x = jitorch.randn(4, 6)
    np.testing.assert_allclose(sm(x).detach().numpy(), m(x).detach().numpy(), rtol=1e-5,
                               atol=1e-6)
    src = sm.code
    calls = [ln for ln in src.splitlines() if re.search(r"= _k\w+\(", ln)]
    kernels = src.count("# --- kernel ")
    assert kernels and len(calls) >= 2 * kernels - 1  # each layer calls the same kernels


def test_stats_count_kernels():
    stats.reset()
    f = jitorch.jit.script(only_for_stats)
    x = jitorch.randn(2, 3, dtype=jitorch.float64)
    f(x, x)
    k = jitorch.jit.stats()["kernels"]
    assert k["compiled"] + k["disk"] + k["shared"] >= 1  # (what this process had decides which)


_CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    import jitorch

    def h(x, y):
        t = (x - y).sigmoid() * 3.0 + x.exp()
        return t @ t.t()

    f = jitorch.jit.script(h)
    x, y = jitorch.randn(3, 5), jitorch.randn(3, 5)
    r = f(x, y)
    ok = bool(np.allclose(r.numpy(), h(x, y).numpy(), rtol=1e-5))
    s = jitorch.jit.stats()
    print(json.dumps({"ok": ok, "disk_hits": s["disk_hits"], "kernels": s["kernels"]}))
""")


def _child(tmp_path, extra_env=None):
    cache_dir = tmp_path / "cache"
    env = dict(os.environ, JITORCH_CACHE_DIR=str(cache_dir), **(extra_env or {}))
    env["JITORCH_COMPILE"] = "sync"
    script = tmp_path / "child_kernels.py"  # (scripting needs the function's source file)
    script.write_text(_CHILD)
    p = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_cached_entry_with_a_lost_kernel_cache_recompiles(tmp_path):
    first = _child(tmp_path)
    assert first["ok"] and first["kernels"]["compiled"] >= 1
    second = _child(tmp_path)  # everything from disk: the entry too
    assert second["ok"] and second["disk_hits"] == 1 and second["kernels"]["compiled"] == 0
    pyc = tmp_path / "cache" / "__pycache__"
    kernel_files = [p for p in pyc.iterdir() if ".kernel-" in p.name]
    assert kernel_files
    for p in kernel_files:  # every kernel's compiled code is gone; the entry's is still there
        p.unlink()
    third = _child(tmp_path)  # must not call a kernel that this process never registered
    assert third["ok"] and third["disk_hits"] == 0 and third["kernels"]["compiled"] >= 1


def product_plain(x, w):
    return (x * 2.0) @ w


def product_transposed(x, w):
    return (x * 2.0) @ w.t()


def test_matrix_products_call_the_blas_library_through_symbols():
    """blas.py's entry points and float path are compiled once per dtype and process and
    called through symbols (kernel_call.library; float operands of any layout as 'A'): a
    kernel that multiplies never has the library's code linked into it (Numba would optimise
    it again inside every such kernel), and a new layout compiles the kernel alone."""
    from jitorch.script.targets.cpu import blas
    x = jitorch.randn(3, 5, dtype=jitorch.float64)
    w = jitorch.randn(5, 4, dtype=jitorch.float64)
    f, g = jitorch.jit.script(product_plain), jitorch.jit.script(product_transposed)
    np.testing.assert_allclose(f(x, w).numpy(), product_plain(x, w).numpy(), rtol=1e-12)
    before = dict(kernel_call.library_counts)
    wt = w.t().contiguous()  # (4, 5): g multiplies by a transposed (F-ordered) view of it
    np.testing.assert_allclose(g(x, wt).numpy(), product_transposed(x, wt).numpy(), rtol=1e-12)
    # the second layout reused the float64 library code this process already had
    assert kernel_call.library_counts["compiled"] == before["compiled"]
    assert kernel_call.library_counts["disk"] == before["disk"]
    ident = blas.matmul2_by_symbol.library_id
    symbols = {s for (key, tys), (s, _) in kernel_call._bound.items()
               if key == ident and str(tys[0].dtype) == "float64"}
    assert len(symbols) == 1  # one float64 overload ('A' operands) for both layouts
    a = x.numpy()
    for prog, b in ((_program(f, x, w), w.numpy()), (_program(g, x, wt), wt.numpy().T)):
        srcs = [k for k in prog.kernels if "matmul2(" in k]
        assert len(srcs) == 1
        ns: dict = {}  # a fresh dispatcher (the source says cache=False): compiled here
        exec(compile(srcs[0], "<kernel>", "exec"), ns)
        kern = ns["kernel"]  # called from native code only: a kernel has no CPython wrapper
        np.testing.assert_allclose(numba.njit(lambda a, b: kern(a, b))(a, b), a @ b,
                                   rtol=1e-12)
        (cres,) = kern.overloads.values()
        llvm = cres.library.get_llvm_str()
        assert any(s in llvm for s in symbols)  # called by its symbol...
        for fn in ("matmul2", "mm_into", "_float_mm", "_small"):  # ...nothing linked in
            assert not re.search(rf"define[^\n]*{fn}", llvm), fn


def narrow_product(x):
    a, b = x.narrow(1, 0, 3), x.narrow(1, 3, 3)
    return (a * b.tanh()).sum()


def test_narrow_backward_copies_with_loops():
    """The VJP of narrow writes the grad into its slice with a loop nest: an array-to-
    array slice assignment would compile Numba's broadcasting setitem (~2 CPU-s a kernel)."""
    from jitorch.script.kernels import cache
    f = jitorch.jit.script(narrow_product)
    x = jitorch.randn(4, 6, requires_grad=True)
    xr = x.detach().clone().requires_grad_(True)
    f(x).backward()
    narrow_product(xr).backward()
    np.testing.assert_allclose(x.grad.numpy(), xr.grad.numpy(), rtol=1e-5, atol=1e-6)
    srcs = []
    for name in list(cache._loaded):
        path = getattr(cache.loaded(name), "__file__", None)
        if path and os.path.exists(path):  # (another test of this process may have removed its
            # cache directory since: only this test's modules matter)
            with open(path) as fh:
                src = fh.read()
            if "narrow backward" in src:
                srcs.append(src)
    assert srcs
    for src in srcs:
        assert not re.search(r"^\s*\w+\[.*:.*\] = \w+\s*$", src, re.M), src  # x[a:b] = y


_COUNT_CHILD = textwrap.dedent("""
    import collections, json
    from numba.core import event
    import jitorch
    import jitorch.nn.functional as F

    compiled = collections.Counter()  # Numba functions compiled (not loaded from disk)

    class Count(event.Listener):
        def on_start(self, ev):
            py = ev.data["dispatcher"].py_func
            compiled[f"{py.__module__}.{py.__qualname__}"] += 1

        def on_end(self, ev):
            pass

    def step(x, w1, b1, w2, y):
        h = (x @ w1.t() + b1).relu()
        return F.cross_entropy(h.narrow(1, 0, 8) @ w2, y)

    f = jitorch.jit.script(step)
    x, y = jitorch.randn(4, 6), jitorch.tensor([0, 1, 2, 1])
    ws = [jitorch.randn(*s, requires_grad=True) for s in ((12, 6), (12,), (8, 3))]
    event.register("numba:compile", Count())  # the step's compiles (not randn's)
    f(x, *ws, y).backward()
    s = jitorch.jit.stats()
    from jitorch.script.kernels import cache, kernel_call
    wrapped = []  # kernels compiled with a CPython wrapper (a Python entry point)
    for module, tys in list(kernel_call._bound):
        if str(module).startswith(cache.MODULE_PREFIX):
            cres = cache.load_named(module).kernel.overloads[tys]
            name = cres.fndesc.llvm_cpython_wrapper_name
            wrapped += [module] if cres.library.get_pointer_to_function(name) else []
    import sys
    entries, cfunc = 0, []  # programs' entries; functions compiled with a C callback wrapper
    for name, mod in list(sys.modules.items()):
        if name.startswith(cache.MODULE_PREFIX):
            entries += hasattr(mod, "entry")
            for fn in (getattr(mod, "entry", None), getattr(mod, "kernel", None)):
                for cres in getattr(fn, "overloads", {}).values():
                    w = cres.fndesc.llvm_cfunc_wrapper_name
                    cfunc += [name] if cres.library.get_pointer_to_function(w) else []
    print(json.dumps({"compiled": compiled, "interpreted": s["interpreted_reasons"],
                      "wrapped": wrapped, "kernels": s["kernels"], "entries": entries,
                      "cfunc": cfunc}))
""")


def test_numba_functions_a_train_step_compiles(tmp_path):
    """What a cold train step compiles, counted (fresh caches, a process of its own): the BLAS
    glue once per dtype whatever the layouts (it is called through symbols), no string
    formatting helpers (an array slice assignment in narrow's backward compiled Numba's
    unicode and repr code), kernels at most once per layout they are called with, and each
    without a CPython wrapper (kernel.kernel_decorator); neither kernels nor entries with a
    cfunc wrapper (program.DECORATOR: nothing calls them as C callbacks)."""
    env = dict(os.environ, JITORCH_CACHE_DIR=str(tmp_path / "j"),
               NUMBA_CACHE_DIR=str(tmp_path / "n"), JITORCH_COMPILE="sync")
    script = tmp_path / "child_count.py"
    script.write_text(_COUNT_CHILD)
    p = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True,
                       timeout=900)
    assert p.returncode == 0, p.stderr[-2000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["interpreted"] == {}
    got = out["compiled"]
    blas = "jitorch.script.targets.cpu.blas."
    # forward x @ w1.t(), h @ w2; backward products of transposed views: 4+ layouts, float32
    assert got.get(blas + "matmul2", 0) == 1 and got.get(blas + "_float_mm", 0) == 1, got
    assert got.get(blas + "mm_into", 0) <= 1, got  # matmul2 does not go through it
    assert not [k for k in got if k.startswith("numba.cpython.unicode")], got
    # every fastmath function it uses, compiled once (not typed again per call site)
    assert all(n == 1 for k, n in got.items() if ".fastmath." in k), got
    # no Numba function of its own per array type allocated (alloc._jt_empty, an intrinsic,
    # not Numba's np.empty overload, also in blas.py) or viewed flat (views._jt_flat), and
    # kernels without the wrappers Python needs
    per_type = [k for k in got if "._jt_flat" in k or k.startswith("numba.np.arrayobj.ol_np_empty")]
    assert not per_type, got
    assert out["kernels"]["compiled"] >= 5 and out["wrapped"] == [], out
    assert out["entries"] >= 2 and out["cfunc"] == [], out  # (the forward and the backward)


def test_cached_kernel_with_a_lost_library_cache_recompiles(tmp_path):
    """A cached kernel whose machine code calls blas.py through symbols is loaded only after
    those symbols are registered: with the library's disk cache gone it is compiled again
    (never a call to an address this process did not register)."""
    env = {"NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    first = _child(tmp_path, env)
    assert first["ok"] and first["kernels"]["compiled"] >= 1
    second = _child(tmp_path, env)
    assert second["ok"] and second["disk_hits"] == 1 and second["kernels"]["compiled"] == 0
    lib = [p for p in (tmp_path / "numba").rglob("*") if p.is_file() and "blas" in p.name]
    assert lib
    for p in lib:
        p.unlink()
    third = _child(tmp_path, env)
    assert third["ok"] and third["kernels"]["compiled"] >= 1


def reshapes(x, y):
    a = (x * 2.0).reshape(-1, 4)            # contiguous: a view
    b = y.t().flatten()                     # transposed: a copy
    return a.sum(0), b.reshape(x.shape[0], -1) + x[0].unsqueeze(0).expand(3, 8)


def test_reshapes_are_emitted_in_place_not_kernels():
    # issue 17: a reshape/flatten/expand was a kernel per (rank, sizes) pattern (30-85 ms CPU
    # each); it is now views.py's _jt_reshape / _jt_expand_checked intrinsic in the entry
    f = jitorch.jit.script(reshapes)
    x, y = jitorch.randn(3, 8), jitorch.randn(8, 3)
    p = _program(f, x, y)
    assert p.kernels and p.source.count("_jt_reshape(") == 3 and "_jt_expand_checked(" in p.source
    assert not any("ascontiguousarray" in k for k in p.kernels)
    for got, want in zip(f(x, y), reshapes(x, y)):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    try:  # a size that does not fit: the interpreter raises PyTorch's error
        f(jitorch.randn(3, 5), y)
    except RuntimeError as e:
        assert "invalid for input of size 15" in str(e)
    else:
        raise AssertionError("no error")



def _kernels_unrun(f, *args):
    """The kernel sources of scripted `f`'s program for `args`, generated without compiling
    or running it (the frontend's graph, specialised and optimised)."""
    from jitorch.script.codegen.target import get_target
    from jitorch.script.frontend.trace import value_type
    from jitorch.script.passes import pipeline
    from jitorch.script.passes.types import specialize
    sg = specialize(jitorch.jit.script(f).graph, [value_type(a) for a in args])
    sg.capabilities = get_target("cpu").capabilities
    return cpu.generate(pipeline.run(sg)).kernels


def _zeros(*shape):  # (no eager op: nothing to compile)
    return jitorch.from_numpy(np.zeros(shape, np.float32))


def row_blocks(w):  # an in-projection's row blocks: offsets and lengths a model's width
    return w.narrow(0, 0, 4).tanh() + w.narrow(0, 4, 4)


def row_blocks_wider(w):
    return w.narrow(0, 0, 64).tanh() + w.narrow(0, 64, 64)


def test_narrow_bounds_are_parameters_of_the_kernel():
    """A constant start and length are the kernel's parameters, not literals in its source:
    the kernels of a model of width 64 are those of width 4 (the warmed library's)."""
    ka = _kernels_unrun(row_blocks, _zeros(8, 3))
    assert any("narrow()" in k for k in ka)
    assert ka == _kernels_unrun(row_blocks_wider, _zeros(128, 3))


def attention_narrow(x, w, b, ow, ob):
    return F.multi_head_attention_forward(x, x, x, 8, 2, w, b, None, None, False, 0.0, ow, ob,
                                          need_weights=False)[0]


def attention_wide(x, w, b, ow, ob):
    return F.multi_head_attention_forward(x, x, x, 64, 4, w, b, None, None, False, 0.0, ow,
                                          ob, need_weights=False)[0]


def test_attention_kernels_do_not_depend_on_the_head_size():
    """Multi-head attention's kernels are the same for any width and head count: the query's
    scale comes from its run-time size, never a literal (0.5 for heads of 4, 0.25 for 16)."""
    def args(e):
        return _zeros(3, 2, e), _zeros(3 * e, e), _zeros(3 * e), _zeros(e, e), _zeros(e)
    ka = _kernels_unrun(attention_narrow, *args(8))
    assert ka and ka == _kernels_unrun(attention_wide, *args(64))
