"""Errors in every tier: the sets on which a program raises run interpreted and compiled.

Owns the fuzzer's check of the error rule (docs/compilation.md, "Errors"; kernels/signals.py):
a scripted call that fails raises eager's exception class, also a `jitorch.jit.Error`, with the
same class and message whether the call ran interpreted or compiled, and the message names the
user's file (here the program's). For a script-mode run (runner._run_script):
- `interpreted(fn)`: the function scripted once more with every specialisation left to the
  interpreter after the pass pipeline (`programs._lower` answers "no program", as it does for a
  graph the code generator cannot lower): the interpreted tier. Made only for programs with a
  set that raises, and called only on those sets, so the slice's cost grows by interpreted
  calls, never by compiles;
- `check_error(...)`: on a set where eager and the compiled call raised (compare.compare
  agreed), the interpreted outcome against eager's and the two scripted errors against each
  other: same class, same message, located in the program's file, a jit.Error;
- `spurious(before)`: a compiled program that raised where the interpreter, rerunning the
  call, did not (`jitorch.jit.stats().spurious_errors`; the call got eager's result).
"""
from __future__ import annotations

import contextlib
import warnings

import jitorch
from jitorch.script.runtime import programs

from . import compare as cmp


@contextlib.contextmanager
def _interpreter_only():
    real = programs._lower

    def interpreted(graph, arg_types, static=None):
        g, _, _ = real(graph, arg_types, static)
        return g, None, "the interpreted tier (fuzz/tiers.py)"
    programs._lower = interpreted
    try:
        yield
    finally:
        programs._lower = real


def interpreted(fn):
    """`fn` scripted with the code generator off (see module doc); None where script fails."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return _Interpreted(jitorch.jit.script(fn))
        except Exception:  # noqa: BLE001 - the compiled run reports frontend failures
            return None


class _Interpreted:
    def __init__(self, sf):
        self.sf = sf

    def __call__(self, *args):
        with _interpreter_only():
            return self.sf(*args)


def check_error(fn, want, got, interp) -> tuple | None:
    """(kind, detail) of a disagreement among eager's outcome `want`, the compiled one `got`
    and the interpreted one `interp` on a set where eager raised."""
    res = cmp.compare(want, interp)
    if res:
        return "interpreted-" + res[0], res[1]
    if got.exc is None or interp.exc is None:
        return None  # the compiled disagreement itself is reported by the caller
    a, b = got.exc, interp.exc
    if type(a) is not type(b):
        return ("tier-error-type", f"compiled {type(a).__module__}.{type(a).__qualname__}, "
                f"interpreted {type(b).__module__}.{type(b).__qualname__}")
    if str(a) != str(b):
        return "tier-message", f"compiled {str(a)!r}; interpreted {str(b)!r}"
    if not isinstance(a, jitorch.jit.Error):
        return "error-not-located", f"not a jitorch.jit.Error: {cmp._first_line(a)}"
    if f"in scripted code at {fn.__code__.co_filename}:" not in str(a):
        return "error-not-located", f"no line of the program's file: {str(a)!r}"
    return None


def spurious_count() -> int:
    return sum(jitorch.jit.stats().get("spurious_errors", {}).values())


def spurious(before: int) -> tuple | None:
    """(kind, detail) when a compiled program failed where the interpreter did not since
    `spurious_count()` was `before`."""
    after = jitorch.jit.stats().get("spurious_errors", {})
    if sum(after.values()) > before:
        return "spurious-error", "a compiled program raised where eager does not: " + \
            "; ".join(after)
    return None
