"""Global settings and compiled code (jitorch/_settings.py, issue 21 defect 6): a setting that
changes between two calls of one compiled function changes its result as it changes eager's,
whatever the compile timing.

The walk covers every registered setting (a setting registered without a case here fails) plus
the per-thread state that is handled otherwise (grad mode: in the key; autocast: interpreted);
every public `set_*`/`use_*` function is a registered setter or says here why it needs none.
"""
from __future__ import annotations

import numpy as np
import pytest

import jitorch as jt
import jitorch.autograd
from jitorch import _settings


@pytest.fixture(autouse=True)
def defaults():
    yield
    jt.set_default_dtype(jt.float32)
    jt.use_deterministic_algorithms(False)
    jt.utils.deterministic.fill_uninitialized_memory = True
    jt.set_float32_matmul_precision("highest")
    jt.set_default_device(None)
    jt.set_grad_enabled(True)
    jt.set_autocast_enabled("cpu", False)


# --- probes: compiled functions whose result depends on a setting -------------------------------
def by_default_dtype(x):
    return x * 2.5, x / 2, jt.zeros(3), jt.full([2], 1.5), jt.linspace(0.0, 1.0, 4)


def by_empty_fill(x):
    return jt.empty(3), jt.empty_like(x), x + 1


def by_matmul(x):
    return x @ x.t(), jt.zeros(2)


def by_grad_mode(w):
    return w * 2


def int_arg():
    return (jt.tensor([1, 2, 3]),)


def float_arg():
    return (jt.arange(6.0).reshape(2, 3),)


def leaf_arg():
    return (jt.ones(3, requires_grad=True),)


# name -> (probe, arguments, state before, the change); the `defaults` fixture restores
CASES = {
    "default_dtype": (by_default_dtype, int_arg, lambda: None,
                      lambda: jt.set_default_dtype(jt.float64)),
    "deterministic_algorithms": (by_empty_fill, float_arg, lambda: None,
                                 lambda: jt.use_deterministic_algorithms(True)),
    "empty_fill": (by_empty_fill, float_arg, lambda: jt.use_deterministic_algorithms(True),
                   lambda: setattr(jt.utils.deterministic, "fill_uninitialized_memory", False)),
    # every level computes exact float32 on this CPU build: the result stays eager's
    "float32_matmul_precision": (by_matmul, float_arg, lambda: None,
                                 lambda: jt.set_float32_matmul_precision("medium")),
    # only the CPU holds storage in this build: setting it again changes nothing
    "default_device": (by_matmul, float_arg, lambda: jt.set_default_device(None),
                       lambda: jt.set_default_device("cpu")),
    # per thread, not registered: grad mode is in the key, autocast calls run interpreted
    "grad mode": (by_grad_mode, leaf_arg, lambda: None, lambda: jt.set_grad_enabled(False)),
    "autocast": (by_matmul, float_arg, lambda: None,
                 lambda: jt.set_autocast_enabled("cpu", True)),
}

# public setters that need no registration, and why
NOT_REGISTERED = {
    "set_grad_enabled": "per thread; grad mode is part of the specialisation key",
    "enable_grad": "per thread; as set_grad_enabled",
    "set_autocast_enabled": "per thread; a scripted call inside autocast runs interpreted",
    "set_autocast_cpu_enabled": "per thread; as set_autocast_enabled",
    "set_autocast_dtype": "per thread; read only inside autocast, which runs interpreted",
    "set_autocast_cpu_dtype": "per thread; as set_autocast_dtype",
    "set_autocast_cache_enabled": "per thread; read only inside autocast",
    "set_num_threads": "changes how many threads run, not what a program computes",
    "set_printoptions": "printing only",
    "set_rng_state": "the generator is read by each call, never baked into a program",
    "cuda.set_device": "which device an index-less 'cuda' names: a call's tensors carry their "
                       "device, which is in the specialisation key",
    "cuda.set_stream": "which stream queues the work, not what it computes",
    "cuda.set_rng_state": "as set_rng_state",
    "cuda.set_rng_state_all": "as set_rng_state",
    "backends.cuda.enable_flash_sdp": "stored for PyTorch code; no op reads it on the CPU",
    "backends.cuda.enable_mem_efficient_sdp": "as enable_flash_sdp",
    "backends.cuda.enable_math_sdp": "as enable_flash_sdp",
    "set_default_tensor_type": "sets the default dtype (and device) through their registered "
                               "setters",
    "set_num_interop_threads": "stored for PyTorch code: jitorch runs one op at a time",
    "set_warn_always": "a flag for warnings user code gives; no program reads it",
}


def _same(got, want):
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.requires_grad == w.requires_grad, (g, w)
        np.testing.assert_array_equal(g.detach().numpy(), w.detach().numpy())


def test_the_walk_covers_every_registered_setting():
    missing = set(_settings.names()) - set(CASES)
    assert not missing, f"registered settings without a case in CASES: {sorted(missing)}"


@pytest.mark.parametrize("name", list(CASES))
def test_changing_a_setting_between_calls_of_one_compiled_function_follows_eager(name):
    probe, make_args, before, change = CASES[name]
    before()
    f = jt.jit.script(probe)
    _same(f(*make_args()), probe(*make_args()))
    before_change = _settings.snapshot()
    change()
    if name in _settings.names():  # a registered setting: its change forgot the program
        assert (f.stats["specialisations"] == 0) == (_settings.snapshot() != before_change)
    _same(f(*make_args()), probe(*make_args()))  # the program built before the change: eager's
    _same(f(*make_args()), probe(*make_args()))  # and again (the fast path)


def test_int_times_float_follows_the_default_dtype_both_ways():
    """The issue's reproducer: `int_tensor * 2.5` and friends keep float32 after
    set_default_dtype(float64) in a function compiled earlier."""
    f = jt.jit.script(by_default_dtype)
    x = jt.tensor([1, 2, 3])
    assert {o.dtype for o in f(x)} == {jt.float32}
    jt.set_default_dtype(jt.float64)
    assert {o.dtype for o in f(x)} == {jt.float64}
    jt.set_default_dtype(jt.float32)
    assert {o.dtype for o in f(x)} == {jt.float32}


def test_every_public_setter_is_registered_or_needs_none():
    found = {}
    for prefix, mod in (("", jt), ("", jitorch.autograd), ("cuda.", jt.cuda),
                        ("backends.cuda.", jt.backends.cuda)):
        for n in dir(mod):
            if n.startswith(("set_", "use_", "enable_")) and callable(getattr(mod, n)):
                found[prefix + n] = getattr(mod, n)
    assert "set_default_dtype" in found and "use_deterministic_algorithms" in found
    unexplained = sorted(n for n, fn in found.items()
                         if not _settings.is_setter(fn) and n not in NOT_REGISTERED)
    assert not unexplained, (f"public setters that neither go through _settings.setter nor "
                             f"say why they need not: {unexplained}")


def test_a_change_forgets_only_when_the_value_changes():
    f = jt.jit.script(by_default_dtype)
    f(jt.tensor([1, 2]))
    assert f.stats["specialisations"] == 1
    jt.set_default_dtype(jt.float32)  # the same value: programs stay
    assert f.stats["specialisations"] == 1
    jt.set_default_dtype(jt.float64)
    assert f.stats["specialisations"] == 0


def test_a_change_drops_the_eager_softmax_programs():
    """Eager softmax's table of programs (_ops/_row_programs.py) is built under the settings:
    a change drops it through the callback it registered (_settings.on_change), whether or not
    one of its ScriptFunctions exists yet."""
    from jitorch._ops import _row_programs
    key = ("softmax", -1, np.dtype(np.float32), 9, True)  # (a key no test builds)
    _row_programs.EPS[key] = None
    try:
        jt.set_default_dtype(jt.float64)
        assert key not in _row_programs.EPS
    finally:
        _row_programs.EPS.pop(key, None)
        jt.set_default_dtype(jt.float32)


def test_the_interpreted_tier_and_the_compiled_tier_agree(monkeypatch, tmp_path):
    """With the compile worker on, a call served by the interpreter while its program compiles
    and a call of the compiled program give the same dtypes, before and after a change."""
    monkeypatch.setenv("JITORCH_COMPILE", "background")
    monkeypatch.setenv("JITORCH_CACHE_DIR", str(tmp_path / "cache"))
    f = jt.jit.script(by_default_dtype)
    x = jt.tensor([4, 5])
    first = f(x)  # interpreted while compiling
    assert f.wait_compiled(timeout=300)
    _same(f(x), first)
    jt.set_default_dtype(jt.float64)
    during = f(x)
    assert f.wait_compiled(timeout=300)
    after = f(x)
    assert f.stats["tier"] == "compiled", f.stats
    _same(during, by_default_dtype(x))
    _same(after, during)
