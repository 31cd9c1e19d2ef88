"""The text of a generated module around its one function (an entry, program.py, or a kernel,
kernel.py): the imports it needs (allocation helpers, fast math functions, with the hash of the
helper file so a changed helper gives a new module name), the exception classes it raises
(kernels/signals.py's, shared by every program and tier), its globals.
"""
from __future__ import annotations

from ...codegen.emitter import exception_classes


def module_head(em, global_used=None):
    """(the module text before the function: imports, exception classes, globals; the
    function's body lines) of an entry or a kernel (kernel.py); `global_used(line)`, where
    given, says which of `em.globals` to keep (a repeated run's module, glue_runs.py)."""
    from . import alloc
    from . import lower_elementwise
    helpers = sorted(em.helpers)
    head = ["import math", "import numba", "import numpy as np"]
    # large arrays allocated by the program ask for huge pages, as NumPy's do (alloc.py)
    body, alloc_names = alloc.rewrite(em.lines)
    if alloc_names:
        head.append(alloc.import_line(alloc_names))
    if helpers:
        # the hash makes the module's content (and so its cache key) follow fastmath.py:
        # Numba's own cache does not notice changes in other files
        names = ", ".join(lower_elementwise.fastmath_import(h) for h in helpers)
        head.append(f"from {lower_elementwise.FASTMATH_MODULE} import {names}  "
                    f"# fastmath {lower_elementwise.fastmath_hash()}")
    head += exception_classes(em)
    kept = em.globals if global_used is None else [g for g in em.globals if global_used(g)]
    return "\n".join(head) + "\n\n" + "".join(g + "\n" for g in kept), body
