"""Composites written once: the body that runs eagerly is the body `@script` inlines.

A library composite (softmax, the norms, the losses, attention, ...) is not a registry op: it is
a few registry ops in a row, and the compiler must see those ops (the row fusion of
`script/passes/fuse_rows.py` recognises softmax / layer-norm rows from them). Each is declared
as a `Composite`, the way `optim/functional.py` declares its step forms:

- `factory(*statics)` takes the composite's *static* arguments (dims, eps, reduction, flags: the
  values that select code), checks them with PyTorch's errors, and returns the *body*: a plain
  function in the script subset over the runtime arguments (tensors, optional tensors, runtime
  flags), a closure over the statics. Bodies are built once per distinct statics tuple
  (`Composite.body`), so a scripted `if eps > 0:` folds and a program holds only its branch.
- The public function (`F.softmax`, `Tensor.softmax`, `F.layer_norm`, ...) makes the checks
  that need the tensors (shapes, dtypes; PyTorch's messages), then runs
  `COMPOSITE.body(statics)(tensors)` eagerly: the same ops, so eager values and gradients are
  the body's.
- `body_helper` marks a script-subset function several bodies call (a shared check): scripted
  code inlines it like a user's function.
- `expose(composite, public_fn)` tells the script frontend that a call of `public_fn` is that
  composite: it binds the call to the public signature, reads the statics by name (they must be
  constants at the call site), calls the same factory and inlines the body's graph
  (`script/frontend/composite.py`). A static named `"weight?"` is whether the argument `weight` is
  given (not None): bodies whose code depends on it without a tensor test use it.

When the call cannot be compiled (a static that is not a constant, a factory that raises for it,
a public parameter outside the statics and the body's parameters given a non-default value, or
`script_unsupported(*statics)` naming a reason: running statistics updated in
place), the frontend keeps the call as a Python op, which is exactly eager, errors included.
"""
from __future__ import annotations

from typing import Callable, Optional

from ... import _fork

__all__ = ["Composite", "Unsupported", "composite", "expose", "composite_of", "body_helper"]


class Unsupported(Exception):
    """Raised by a factory for statics its body does not cover inside `@script`."""


# static types whose values _freeze would only tag with their type (no sequence to walk)
_FLAT = {int, float, bool, str, type(None)}


def _freeze(v):
    """A hashable key for a static value that keeps 1, 1.0 and True apart."""
    if isinstance(v, (list, tuple)):
        return ("seq", tuple([_freeze(x) for x in v]))
    return (type(v).__name__, v)


class Composite:
    """One composite: `body(*statics)` is `factory(*statics)`, built once per statics."""

    def __init__(self, name: str, factory: Callable, static: tuple,
                 script_unsupported: Optional[Callable] = None,
                 static_fallback: Optional[dict] = None):
        self.name, self.factory, self.static = name, factory, tuple(static)
        self.script_unsupported = script_unsupported
        self.static_fallback = dict(static_fallback or {})
        self._bodies: dict = {}
        self._flat: dict = {}  # body() of flat statics, by (type, value) pairs: no _freeze
        self._lock = _fork.lock()

    def body(self, *statics) -> Callable:
        for s in statics:  # the common call: flat statics (dims, flags, eps, a dtype)
            if type(s) not in _FLAT:
                break
        else:
            # (type, value) pairs keep 1, 1.0 and True apart, as _freeze's keys do
            key = tuple([(type(s), s) for s in statics])
            fn = self._flat.get(key)
            if fn is None:
                fn = self._flat[key] = self._body(statics)
            return fn
        return self._body(statics)

    def _body(self, statics: tuple) -> Callable:
        key = _freeze(statics)
        fn = self._bodies.get(key)
        if fn is None:
            fn = self.factory(*statics)  # outside the lock: a factory may raise PyTorch's error
            fn.__name__ = fn.__qualname__ = self.name
            with self._lock:
                fn = self._bodies.setdefault(key, fn)
        return fn

    def __repr__(self) -> str:
        return f"<Composite {self.name}{self.static}>"


def composite(static: tuple = (), name: Optional[str] = None,
              script_unsupported: Optional[Callable] = None,
              static_fallback: Optional[dict] = None):
    """Decorator: the factory of a `Composite` (named after the factory, less a leading `_`).
    `static_fallback`: statics that only name things in messages (a layer's name), with the
    value a scripted call uses when its argument is not a constant."""
    def deco(factory):
        return Composite(name or factory.__name__.lstrip("_"), factory, static,
                         script_unsupported, static_fallback)
    return deco


_EXPOSED: dict = {}  # public callable -> (Composite, parameter names the frontend ignores)


def expose(comp: Composite, *fns, ignore: tuple = ()) -> None:
    """Calls of each of `fns` (public functions or Tensor methods; a method's `self` is the
    body's `input`) compile to `comp` inside `@script`. `ignore`: public parameters that change
    nothing the body computes (`_stacklevel`)."""
    for fn in fns:
        _EXPOSED[fn] = (comp, tuple(ignore))


def body_helper(fn):
    """Decorator: a function in the script subset that composite bodies share (a check written
    once for several bodies). The script frontend compiles a call of it into the calling body,
    as it does a user's function (jitorch's other functions are Python calls to it)."""
    fn._jitorch_body_helper = True
    return fn


def composite_of(fn):
    """(Composite, ignored parameter names) for a public callable, or None."""
    try:
        return _EXPOSED.get(fn)
    except TypeError:  # an unhashable callable
        return None
