"""Issue 21 item 4 / issue 17 item 6: a scripted call fails the same way in every tier.

The rule (docs/compilation.md, "Errors"): eager's exception class (PyTorch's), also a
`jitorch.jit.Error`, with the same message interpreted and compiled, and the user's file:line
(an error inside a library composite names the user's call). Each case runs eagerly, in the
interpreted tier (fuzz/tiers.py: the code generator off) and compiled (checked to be compiled),
on the same failing arguments. The fuzzer checks the same rule on its generated programs
(tests/fuzz/tiers.py).
"""
from __future__ import annotations

import inspect
import pickle
from typing import List

import pytest

import jitorch
import jitorch.nn.functional as F
from fuzz.tiers import interpreted


def e_index(x, i: int):
    return x[i] * 2


def e_embedding(w, idx):
    return F.embedding(idx, w) * 2


def e_cross_entropy(x, t):
    return F.cross_entropy(x, t)


def e_cat(x, y):
    return jitorch.cat([x, y], 1) * 2


def e_narrow(x, n: int):
    return x.narrow(0, 1, n) + 1


def e_broadcast(x, y):
    return x * 2 + y


def e_raise(x, n: int):
    if n > 3:
        raise ValueError(f"n is {n}")
    return x + 1


def e_floordiv(x, n: int, k: int):
    return x * (n // k)


def e_list_index(xs: List[jitorch.Tensor], i: int):
    return xs[i] + 1


def e_write_shape(x, v):
    y = x.clone()
    y[0] = v  # scripted code's functional write: eager's __setitem__ message
    return y


F32, F64 = jitorch.float32, jitorch.float64
CASES = [
    # (function, failing arguments, eager's class, a fragment of the message, the failing line)
    (e_index, (jitorch.ones(3, 2), 10), IndexError, "index 10", "x[i] * 2"),
    (e_embedding, (jitorch.ones(4, 2), jitorch.tensor([1, 7])), IndexError,
     "index out of range in self", "F.embedding(idx, w)"),
    (e_cross_entropy, (jitorch.ones(2, 3), jitorch.tensor([0, 5])), IndexError,
     "Target 5 is out of bounds", "F.cross_entropy(x, t)"),
    (e_cat, (jitorch.ones(2, 3), jitorch.ones(3, 3)), RuntimeError,
     "Sizes of tensors must match", "jitorch.cat([x, y], 1)"),
    (e_cat, (jitorch.ones(2, 3, dtype=F32), jitorch.ones(3, 3, dtype=F64)), RuntimeError,
     "Sizes of tensors must match", "jitorch.cat([x, y], 1)"),
    (e_narrow, (jitorch.ones(3, 2), 5), RuntimeError, "exceeds dimension size",
     "x.narrow(0, 1, n)"),
    (e_broadcast, (jitorch.ones(2, 3), jitorch.ones(3, 3)), RuntimeError,
     "must match the size of tensor b", "x * 2 + y"),
    (e_raise, (jitorch.ones(2), 5), ValueError, "n is 5", "raise ValueError"),
    (e_floordiv, (jitorch.ones(2), 5, 0), ZeroDivisionError, "division or modulo by zero",
     "n // k"),
    (e_list_index, ([jitorch.ones(2), jitorch.ones(2)], 2), IndexError, "out of range",
     "xs[i] + 1"),
    (e_write_shape, (jitorch.ones(2, 3), jitorch.ones(2)), RuntimeError,
     "must match the existing size (2) at non-singleton dimension 0", "y[0] = v"),
]
IDS = [f"{c[0].__name__}-{k}" for k, c in enumerate(CASES)]


def _raised(fn, args) -> BaseException:
    try:
        fn(*args)
    except Exception as e:  # noqa: BLE001 - the outcome under test
        return e
    raise AssertionError(f"{getattr(fn, '__name__', fn)} did not raise")


def _line_of(fn, snippet) -> int:
    lines, first = inspect.getsourcelines(fn)
    return first + next(k for k, ln in enumerate(lines) if snippet in ln)


def _compiled(fn, args):
    sf = jitorch.jit.script(fn)
    _raised(sf, args)  # the first call builds the specialisation
    kinds = [e.kind for e in sf._cache.values()]
    assert kinds == ["compiled"], f"the case must run compiled: {kinds}"
    return sf


@pytest.mark.parametrize("fn, args, cls, fragment, snippet", CASES, ids=IDS)
def test_every_tier_raises_eagers_class_message_and_the_users_line(fn, args, cls, fragment,
                                                                   snippet):
    eager = _raised(fn, args)
    assert type(eager) is cls and fragment in str(eager), repr(eager)
    interp = _raised(interpreted(fn), args)
    comp = _raised(_compiled(fn, args), args)
    where = f"in scripted code at {__file__}:{_line_of(fn, snippet)}:"
    for e in (interp, comp):
        assert isinstance(e, cls) and isinstance(e, jitorch.jit.Error), type(e).__mro__
        assert fragment in str(e) and where in str(e), str(e)
        # one class per builtin, shared by every program: importable, so it pickles
        assert type(e).__module__ == "jitorch.script.kernels.signals", type(e)
        again = pickle.loads(pickle.dumps(e))
        assert type(again) is type(e) and str(again) == str(e)
    assert type(comp) is type(interp) and str(comp) == str(interp)


def test_numpys_exceptions_never_leave_a_compiled_program():
    # np.concatenate's ValueError (mixed dtypes take NumPy's concatenate) used to escape
    sf = _compiled(e_cat, CASES[4][1])
    e = _raised(sf, CASES[4][1])
    assert not isinstance(e, ValueError) and "np.concatenate" not in str(e), repr(e)
    assert isinstance(e.__cause__, RuntimeError) and e.__context__ is e.__cause__


def test_a_compiled_program_that_fails_where_eager_does_not_gets_eagers_result(monkeypatch):
    """The boundary reruns a failed call in the interpreter; when the interpreter completes it
    the program's error was spurious (a compiler bug): the call returns eager's result and
    jitorch.jit.stats().spurious_errors counts it (the fuzzer fails on it)."""
    jitorch.jit.reset_stats()
    sf = jitorch.jit.script(e_broadcast)
    x, y = jitorch.ones(2, 3), jitorch.ones(2, 3)
    assert sf(x, y).tolist() == [[3.0] * 3] * 2
    ent = next(iter(sf._cache.values()))
    assert ent.kind == "compiled"

    def failing(*xs):
        raise ValueError("a planted failure")
    monkeypatch.setattr(ent, "eps", {k: failing for k in ent.eps})
    sf._fast.clear()
    assert sf(x, y).tolist() == [[3.0] * 3] * 2
    spurious = jitorch.jit.stats().spurious_errors
    assert list(spurious.values()) == [1] and "a planted failure" in next(iter(spurious))


class _Tagger(jitorch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = jitorch.nn.Embedding(4, 2)

    def forward(self, i):
        return self.emb(i) * 2


def test_an_error_in_a_library_modules_forward_names_the_users_call():
    m = jitorch.jit.script(_Tagger())
    bad = jitorch.tensor([1, 9])
    with pytest.raises(IndexError) as first:  # the first call (compiled, then rerun)
        m(bad)
    with pytest.raises(IndexError) as again:  # the compiled fast path
        m(bad)
    where = f"in scripted code at {__file__}:{_line_of(_Tagger.forward, 'self.emb(i)')}:"
    for e in (first.value, again.value):
        assert isinstance(e, jitorch.jit.Error) and where in str(e), str(e)
        assert "index out of range in self" in str(e)
