"""Shrinking a disagreement to a small reproducer, printed as a runnable Python script.

Owns minimisation. A candidate is kept when it still shows a disagreement of the same mode and
kind (`value`, `compiled-succeeded`, ...). In order: keep only the failing input set; drop
statements (rewiring their readers to one of the dropped statement's operands), returned
values and unused arguments; then simplify the input set: plain layouts instead of strided ones,
no aliasing, smaller sizes, simpler values. Every candidate is a new program, so a new compile
(~0.5 s): the number of tries is bounded.
"""
from __future__ import annotations

import re

import numpy as np

from . import runner, values
from .program import HEADER, Program, Stmt

MAX_TRIES = 80


class _Budget:
    def __init__(self, n):
        self.left = n


def _fails_like(prog, sets, finding, budget) -> bool:
    if budget.left <= 0:
        return False
    budget.left -= 1
    try:
        rep = runner.run(prog, sets, modes=(finding.mode,))
    except Exception:  # noqa: BLE001 - a broken candidate is simply not kept
        return False
    return any(f.signature() == finding.signature() for f in rep.findings)


def minimize(finding, max_tries: int = MAX_TRIES):
    """-> (Program, [InputSet]) of a smaller case showing the same disagreement: for a trace
    finding two sets (traced on the first, called on the second) unless they are the same."""
    budget = _Budget(max_tries)
    prog, sets = finding.program.copy(), [s.clone() for s in finding.sets]
    keep = [finding.set_index]
    if finding.mode == "trace" and finding.example not in (None, finding.set_index):
        keep = [finding.example, finding.set_index]
    few = [sets[k].clone() for k in keep]
    if _fails_like(prog, few, finding, budget):
        sets, keep = few, list(range(len(few)))
    changed = True
    while changed and budget.left > 0:
        changed = False
        for i in reversed(range(len(prog.body))):
            if i >= len(prog.body):
                continue
            cand = _drop_stmt(prog, i)
            if cand is not None and _fails_like(cand, sets, finding, budget):
                prog, changed = cand, True
    prog, sets = _drop_unused_args(prog, sets)
    for k in keep:
        sets[k] = _simplify_set(prog, sets[k], sets, k, finding, budget)
    return prog, [sets[k] for k in keep]


def _drop_stmt(prog: Program, i: int):
    s = prog.body[i]
    subst = {}
    if s.targets:
        tensor_reads = [r for r in s.reads]
        if not tensor_reads:
            later = " ".join(" ".join(t.reads) for t in prog.body[i + 1:])
            if any(t in later.split() for t in s.targets):
                return None
        else:
            subst = {t: tensor_reads[0] for t in s.targets}
    body = []
    for t in prog.body[i + 1:]:
        body.append(Stmt(t.fmt, tuple(subst.get(r, r) for r in t.reads),
                         t.targets, t.writes, t.tag))
    cand = prog.copy()
    cand.body = prog.body[:i] + body
    # what nothing reads any more is returned, so no statement turns into dead code
    old = {subst.get(r, r) for r in prog.returns}
    made = {t for st in cand.body for t in st.targets} | {a.name for a in cand.args}
    cand.returns = tuple(r for r in cand.live_returns(lambda v: v in made)
                         if r in old or r not in {a.name for a in cand.args}) or \
        tuple(r for r in old if r in made)[:1]
    return cand


def _drop_unused_args(prog, sets):
    text = "\n".join(s.line() for s in prog.body) + " " + " ".join(prog.returns)
    used = set(re.findall(r"\ba\d+\b", text))
    keep = [i for i, a in enumerate(prog.args) if a.name in used]
    if not keep or len(keep) == len(prog.args):
        return prog, sets
    # an argument that aliases a dropped one takes its partner's values
    new_sets = []
    for s in sets:
        vals, lays = [], []
        for i in keep:
            lay = s.layouts[i]
            if lay is not None and lay[0] in values.ALIASES and lay[1] not in keep:
                vals.append(np.ascontiguousarray(values.logical_values(s, i)).copy())
                lays.append(("contig",))
            else:
                vals.append(s.values[i])
                lays.append((lay[0], keep.index(lay[1])) if lay is not None and
                            lay[0] in values.ALIASES else lay)
        new_sets.append(values.InputSet(vals, lays, dict(s.sizes), s.note))
    cand = prog.copy()
    cand.args = [prog.args[i] for i in keep]
    return cand, new_sets


def _simplify_set(prog, s, sets, k, finding, budget):
    def works(ns):
        trial = list(sets)
        trial[k] = ns
        return _fails_like(prog, trial, finding, budget)

    for i, lay in enumerate(s.layouts):
        if lay is None or lay == ("contig",):
            continue
        ns = s.clone()
        ns.values[i] = np.ascontiguousarray(values.logical_values(s, i)).copy()
        ns.layouts[i] = ("contig",)
        # arguments aliasing this one keep their partner's (now plain) values
        if works(ns):
            s = ns
    for i, v in enumerate(s.values):
        if not isinstance(v, np.ndarray) or s.layouts[i][0] in values.ALIASES:
            continue
        for shrink in _smaller(v):
            ns = s.clone()
            ns.values[i] = shrink
            if works(ns):
                s = ns
                break
    return s


def _smaller(v: np.ndarray):
    """Candidate simpler arrays for v: fewer elements along the first dim, then zeros."""
    out = []
    if v.ndim and v.shape[0] > 1:
        out.append(v[:1].copy())
    if v.size and v.dtype.kind in "fiu" and v.any():
        out.append(np.zeros_like(v))
    return out


# --- the reproducer --------------------------------------------------------------------------
def reproducer(prog: Program, sets, finding) -> str:
    """A standalone script: the program, its arguments, and the two calls that disagree (a
    trace is made on the first set and called on the last)."""
    s, example = sets[-1], sets[0]
    names = [a.name for a in prog.args]
    build = values.source(s, names).replace("\n", "\n    ")
    build_ex = values.source(example, names).replace("\n", "\n    ")
    tensor_names = [a.name for a in prog.args if a.kind == "tensor"]
    if finding.mode == "trace":
        scalars = {a.name: v for a, v in zip(prog.args, s.values) if a.kind != "tensor"}
        call_args = ", ".join(a.name if a.kind == "tensor" else repr(scalars[a.name])
                              for a in prog.args)
        compiled = (f"def make_example():\n    {build_ex}\n    return [{', '.join(names)}]\n\n\n"
                    f"def traced({', '.join(tensor_names)}):\n"
                    f"    return {prog.name}({call_args})\n\n\n"
                    f"compiled = jitorch.jit.trace(traced, tuple(make_example()[i] for i in "
                    f"{[names.index(n) for n in tensor_names]}), check_trace=False)\n"
                    f"compiled_args = lambda a: [a[i] for i in "
                    f"{[names.index(n) for n in tensor_names]}]\n")
    else:
        compiled = (f"compiled = jitorch.jit.script({prog.name})\n"
                    "compiled_args = lambda a: a\n")
    return (f"# jitorch fuzz reproducer [{finding.pid}]: {finding.mode} {finding.kind}\n"
            f"# {finding.detail}\n"
            + HEADER + prog.source() + "\n\n"
            f"def make():\n    {build}\n    return [{', '.join(names)}]\n\n\n"
            + compiled + "\n\n"
            "def show(fn, args):\n"
            "    try:\n"
            "        print('  result:', fn(*args))\n"
            "    except Exception as e:\n"
            "        print('  raised:', type(e).__name__, e)\n"
            "    print('  args after:', args)\n\n\n"
            "print('eager:')\n"
            f"show({prog.name}, make())\n"
            "print('compiled:')\n"
            "a = make()\n"
            "show(compiled, compiled_args(a))\n")
