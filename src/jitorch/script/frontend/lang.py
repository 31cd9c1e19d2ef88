"""The scripting language's helpers: `jitorch.jit.annotate/ignore/unused/is_scripting/Final/
export`, with PyTorch's names.

In eager Python they behave like their PyTorch counterparts (annotate returns its value,
is_scripting is False, ignore/unused/export only mark the function); the frontend reads the
marks: `@ignore` functions run in Python inside a scripted program (a `prim::PythonOp`, which
takes the GIL), `@unused` ones raise when called, `@export` methods of a scripted class or module
are compiled even when `forward` does not call them.
"""
from __future__ import annotations

from typing import Final  # noqa: F401  (re-exported: `jitorch.jit.Final`)

__all__ = ["annotate", "ignore", "unused", "is_scripting", "Final", "export"]


def annotate(the_type, the_value):
    """Give `the_value` the static type `the_type` inside script (e.g. an empty list's element
    type); returns the value unchanged in eager Python."""
    return the_value


def is_scripting() -> bool:
    """True inside a scripted program (the frontend folds it to a constant), False in eager."""
    return False


def ignore(drop=False, **kwargs):
    """Leave a function as Python: scripted code calls it through the interpreter (GIL held)."""
    if callable(drop):
        drop._jitorch_ignore = True
        return drop

    def deco(fn):
        fn._jitorch_ignore = True
        if drop:
            fn._jitorch_unused = True
        return fn
    return deco


def unused(fn):
    """Do not compile `fn`; calling it from scripted code raises at run time."""
    if isinstance(fn, property):
        return fn
    fn._jitorch_unused = True
    return fn


def export(fn):
    """Compile this method of a scripted class/module even if `forward` does not call it."""
    fn._jitorch_export = True
    return fn
