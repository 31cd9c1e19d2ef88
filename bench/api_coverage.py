"""Coverage of torch 2.13's public names by jitorch, per namespace (issue 19).

    python bench/api_coverage.py --dump      # under a torch install: writes torch_2_13_names.json
    python bench/api_coverage.py             # under jitorch: the table, present / total
    python bench/api_coverage.py --missing nn.functional   # the missing names of one namespace

The dump lists, per namespace, the public names of torch's module (no leading underscore,
no submodules, no names re-exported from typing/builtins, callables and classes only); Tensor
methods are the public attributes of `torch.Tensor`. The count under jitorch is
`hasattr(jitorch.<ns>, name)`, less the names a namespace lists in `_MISSING` (stubs raising
NotImplementedError). Names that are out of scope (backends jitorch has no counterpart for)
are listed, with the reason, in the library's table (src/jitorch/_out_of_scope.py) and
counted apart.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import types

HERE = os.path.dirname(os.path.abspath(__file__))
NAMES_FILE = os.path.join(HERE, "torch_2_13_names.json")

# namespace (as `torch.<ns>`; "" is torch itself, "Tensor" the Tensor class)
NAMESPACES = ["", "Tensor", "nn", "nn.functional", "nn.init", "nn.utils", "nn.utils.rnn",
              "nn.utils.parametrize", "nn.utils.parametrizations", "nn.utils.prune", "linalg",
              "fft", "special", "distributions", "autograd", "autograd.functional", "optim",
              "optim.lr_scheduler", "utils.data", "utils.checkpoint", "random", "func",
              "testing", "jit", "cuda", "amp"]

_FOREIGN = {"typing", "builtins", "abc", "enum", "collections", "functools", "warnings",
            "dataclasses", "contextlib", "numbers", "math", "os", "sys", "types", "inspect"}


def _public(mod, top: bool) -> list:
    names = getattr(mod, "__all__", None)
    if names is None or top:
        names = dir(mod)
    out = []
    for n in names:
        if n.startswith("_"):
            continue
        try:
            v = getattr(mod, n)
        except Exception:
            continue
        if isinstance(v, types.ModuleType):
            continue
        if (getattr(v, "__module__", "") or "").split(".")[0] in _FOREIGN:
            continue
        if not callable(v):  # constants (TYPE_CHECKING, GRID_SAMPLE_*_MODES) are no API
            continue
        out.append(n)
    return sorted(set(out))


def dump():
    import torch
    res = {"torch_version": torch.__version__, "namespaces": {}}
    for ns in NAMESPACES:
        if ns == "Tensor":
            names = sorted(n for n in dir(torch.Tensor) if not n.startswith("_"))
        else:
            mod = importlib.import_module("torch" + ("." + ns if ns else ""))
            names = _public(mod, top=ns == "")
        res["namespaces"][ns or "torch"] = names
    with open(NAMES_FILE, "w") as f:
        json.dump(res, f, indent=0, sort_keys=True)
        f.write("\n")
    print(f"wrote {NAMES_FILE} (torch {torch.__version__})")


def _resolve(lib, ns):
    if ns == "torch":
        return lib
    if ns == "Tensor":
        return lib.Tensor
    try:
        return importlib.import_module(lib.__name__ + "." + ns)
    except Exception:
        obj = lib
        for part in ns.split("."):
            obj = getattr(obj, part, None)
            if obj is None:
                return None
        return obj


def _stub(obj, name) -> bool:
    """A name that exists only to raise NotImplementedError naming itself (a namespace's
    `_MISSING` set, e.g. jitorch.special's): counted as missing."""
    return name in getattr(obj, "_MISSING", ())


def coverage():
    """{ns: (present, in-scope total, out-of-scope count, [missing names])}."""
    import jitorch
    from jitorch._out_of_scope import out_of_scope  # the library's table of names left out
    data = json.load(open(NAMES_FILE))
    rows = {}
    for ns, names in data["namespaces"].items():
        obj = _resolve(jitorch, ns)
        scoped = [n for n in names if not out_of_scope(n)]
        missing = [n for n in scoped
                   if obj is None or not hasattr(obj, n) or _stub(obj, n)]
        rows[ns] = (len(scoped) - len(missing), len(scoped), len(names) - len(scoped), missing)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dump", action="store_true", help="write the names (needs torch)")
    ap.add_argument("--missing", metavar="NS", help="list the missing names of NS ('torch', "
                    "'Tensor', 'nn.functional', ...)")
    args = ap.parse_args(argv)
    if args.dump:
        return dump()
    rows = coverage()
    if args.missing:
        print("\n".join(rows[args.missing][3]))
        return
    print(f"{'namespace':28s} {'present':>8s} {'total':>6s} {'%':>5s} {'out of scope':>13s}")
    tp = tt = 0
    for ns in [n or "torch" for n in NAMESPACES]:
        p, t, o, _ = rows[ns]
        tp, tt = tp + p, tt + t
        print(f"{ns:28s} {p:8d} {t:6d} {100 * p / max(t, 1):5.0f} {o:13d}")
    print(f"{'all':28s} {tp:8d} {tt:6d} {100 * tp / max(tt, 1):5.0f}")


if __name__ == "__main__":
    sys.exit(main())
