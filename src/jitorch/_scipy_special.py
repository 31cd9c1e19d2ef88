"""`scipy.special`, imported when a function of it is first called, not by `import jitorch`.

Owns `special` and `special_fn`. Importing scipy.special (and what it pulls in: numpy.testing,
numpy.f2py, SciPy's array-API layer) was ~0.35-0.45 of the ~1.3-1.7 CPU-s of `import jitorch`
(2-core machine, 2026-12-06), for a few eager ops (erf, digamma, Bessel functions, the gamma
distribution's sampling) that most programs never run.

- `special`: a stand-in for the module: reading an attribute imports scipy.special (once) and
  returns its attribute, kept on the stand-in so that the next read is a plain lookup;
- `special_fn(name)`: a function calling `scipy.special.<name>`, for declarations that take the
  function when their module is imported (the op registry's `defop(..., impl)`).
"""
from __future__ import annotations


class _Special:
    def __getattr__(self, name):
        import scipy.special
        value = getattr(scipy.special, name)
        setattr(self, name, value)
        return value


special = _Special()


def special_fn(name: str):
    """A function that calls `scipy.special.<name>` with its arguments."""
    def call(*args, **kwargs):
        return getattr(special, name)(*args, **kwargs)
    call.__name__ = call.__qualname__ = name
    return call
