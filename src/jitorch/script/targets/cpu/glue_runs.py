"""Repeated glue, compiled once: a run of an entry's statements that recurs (layer 2 of a model
does what layer 1 does, with its own weights) becomes a function of its own, which the entry
calls at each place it recurs (issue 17: "2-layer encoder at most 1.15x the 1-layer one").

Owns `outline_repeats(em, params, body, tail, values)`: given a glue entry's parameters and
body lines (program.py, after alloc.rewrite) and the text that follows them (the return), the
body with each occurrence of the longest repeated run replaced by a call; the run's module is
added to the entry's kernels (kernel.kernel_alias), so it is loaded, compiled, cached and
called through a symbol exactly as a kernel is (kernels/kernel_call.py), with the glue
pipeline (llvm_pipelines.GLUE). The run is then searched the same way for a shorter run that
recurs inside it (four layers: two layers twice, each one layer twice).

Why: kernels are shared by content already, so a model's depth adds no kernel; but its glue
entries (calls, views, shape reads and checks) grew with every layer, and Numba's cost per line
of one function grows with the function's length (bench/RESULTS.md, "Repeated glue runs").

What is a run: consecutive top-level statements (assignments, calls, and `if`s of those and of
raises: argument checks; a loop ends a run) that are equal once their local names are numbered
by first appearance (`_Canon`): the same kernels, views and constants, wired the same way. The
run's free names become its parameters, and `u[c]` reads of the entry's unpacked int arguments
are parameters too (each layer reads its own sizes); the names it defines that anything after
it reads (in any occurrence) are returned. A run is only outlined where
- every name it defines is assigned once in the entry (the generated code is in SSA form; a
  rebound name would make "what it returns" ambiguous);
- every value crossing its boundary is a tensor or a number of the graph (`values`), an
  argument or a result of a kernel call, or an int read of `u[c]`: types that generated
  functions already pass each other, never a list;
- it has at least MIN_STATEMENTS statements: a call and a function of its own cost a compile
  of ~0.1-0.2 CPU-s, which a short run does not pay back.

The rewrite works on the generated text's syntax tree (`ast`) and writes names of its own
(`p0, p1, ...` for parameters, `q0, ...` for the run's locals), so the run's source, and so its
module's name, is the same wherever it recurs (another model with the same layers shares it on
disk); nothing read from the IR is written.
"""
from __future__ import annotations

import ast
import copy
import os
import re
import textwrap

MIN_STATEMENTS = 16
# the search compares pairs of equal statements: quadratic in the worst case (~0.06 s for the
# 216 statements of a 2-layer encoder's forward); an entry longer than this is left as it is
MAX_STATEMENTS = 5000
_KERNEL = re.compile(r"^_k[0-9a-f]{16}$")  # kernel.kernel_alias's names
_DEFINES = re.compile(r"^([A-Za-z_]\w*) = ")  # a module global's definition


def enabled() -> bool:
    """`JITORCH_GLUE_RUNS=0` leaves every entry as it is (for comparisons: bench/glue_runs.py)."""
    v = os.environ.get("JITORCH_GLUE_RUNS", "1").strip()
    if v not in ("0", "1"):
        raise ValueError(f"JITORCH_GLUE_RUNS must be 0 or 1, not {v!r}")
    return v == "1"


def outline_repeats(em, params: list, body: list, tail: str, values: set) -> list:
    """`body` (the indented lines of an entry of parameters `params`) with its longest
    repeated run of at least MIN_STATEMENTS statements, if any passes the module doc's
    conditions, called as a function at each occurrence; `tail`: the text after the body (its
    uses count as uses after a run); `values`: the entry's names known to hold a tensor or a
    number (program.py)."""
    tops = sum(1 for ln in body if ln.startswith("    ") and ln[4:5] != " ")
    if not enabled() or not 2 * MIN_STATEMENTS <= tops <= MAX_STATEMENTS:
        return body
    try:
        tree = ast.parse("def _f():\n" + "\n".join(body) + "\n" + tail)
    except SyntaxError:
        return body
    stmts = tree.body[0].body[:-1]  # (the last one is the return: read, never rewritten)
    found = _Entry(params, stmts, tree.body[0].body[-1], values).best_run()
    if found is None:
        return body
    return found.rewrite(em, body)


class _Canon(ast.NodeTransformer):
    """Numbers the local names (and `u[c]` int reads) of the statements it visits by first
    appearance (`order`: ("free" or "def", the original text) per number); with `rename`, a
    new name per number instead (`rename(number)`)."""

    def __init__(self, entry, rename=None):
        self.entry, self.rename = entry, rename
        self.ids: dict = {}
        self.order: list = []

    def _name(self, key: str, defined: bool) -> str:
        i = self.ids.get(key)
        if i is None:
            i = self.ids[key] = len(self.ids)
            self.order.append(("def" if defined else "free", key))
        return f"n{i}" if self.rename is None else self.rename(i)

    def visit_Name(self, node):
        if not self.entry.is_local(node.id):
            return node
        return ast.copy_location(
            ast.Name(id=self._name(node.id, isinstance(node.ctx, ast.Store)), ctx=node.ctx),
            node)

    def visit_Subscript(self, node):
        if isinstance(node.value, ast.Name) and node.value.id in self.entry.ints and \
                isinstance(node.slice, ast.Constant) and type(node.slice.value) is int:
            return ast.copy_location(
                ast.Name(id=self._name(ast.unparse(node), False), ctx=ast.Load()), node)
        return self.generic_visit(node)

    def texts(self, stmts) -> tuple:
        return tuple(ast.unparse(self.visit(_copy(s))) for s in stmts)


class _Blank(_Canon):
    """Every local name (and int read) as `_`: a statement's key, which equal statements of
    two occurrences of a run share."""

    def _name(self, key: str, defined: bool) -> str:
        return "_"


def _straight(s) -> bool:
    """A statement a run may hold: an assignment, a call, or an `if` of such statements and
    raises (an argument check); a loop ends a run."""
    if isinstance(s, (ast.Assign, ast.Expr, ast.Pass, ast.Raise)):
        return True
    return isinstance(s, ast.If) and all(_straight(b) for b in s.body + s.orelse)


def _copy(s):
    return copy.deepcopy(s)  # (the transformers rewrite nodes in place)


class _Entry:
    """The statements of one entry body, and what the conditions of the module doc read."""

    def __init__(self, params, stmts, ret, values):
        self.params, self.stmts, self.ret = set(params), stmts, ret
        self.count: dict = {}  # name -> how often it is assigned
        self.ints: set = set()  # names bound by `u = _jt_ints(...)`
        # names that may cross a run's boundary: tensors and numbers, and the arguments and
        # results of kernel calls
        self.crossing: set = set(values)
        for s in stmts:
            for n in ast.walk(s):
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                    self.count[n.id] = self.count.get(n.id, 0) + 1
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and \
                        _KERNEL.match(n.func.id):
                    self.crossing.update(a.id for a in n.args if isinstance(a, ast.Name))
            if isinstance(s, ast.Assign) and isinstance(s.value, ast.Call) and \
                    isinstance(s.value.func, ast.Name):
                if _KERNEL.match(s.value.func.id):
                    for t in s.targets:
                        self.crossing.update(x.id for x in ast.walk(t)
                                             if isinstance(x, ast.Name))
                elif s.value.func.id == "_jt_ints" and len(s.targets) == 1 and \
                        isinstance(s.targets[0], ast.Name):
                    self.ints.add(s.targets[0].id)

    def is_local(self, name: str) -> bool:
        return name in self.count or name in self.params  # (anything else: a global)

    def best_run(self):
        """The longest repeated run that passes the conditions (a `_Run`), or None."""
        stmts = self.stmts
        keys = [_Blank(self).texts([s])[0] if _straight(s) else None for s in stmts]
        by_key: dict = {}
        for i, k in enumerate(keys):
            if k is not None:
                by_key.setdefault(k, []).append(i)
        pairs = []
        for positions in by_key.values():
            for a, i in enumerate(positions):
                for j in positions[a + 1:]:
                    if i > 0 and keys[i - 1] is not None and keys[i - 1] == keys[j - 1]:
                        continue  # (inside the match that starts one statement earlier)
                    n = 0
                    while j + n < len(keys) and i + n < j and keys[i + n] is not None and \
                            keys[i + n] == keys[j + n]:
                        n += 1
                    if n >= MIN_STATEMENTS:
                        pairs.append((n, i, j))
        pairs.sort(key=lambda p: (-p[0], p[1]))
        tried = set()
        for n, i, j in pairs:
            length = self._agreeing(i, j, n)
            if length < MIN_STATEMENTS or (i, length) in tried:
                continue
            tried.add((i, length))
            shape = _Canon(self).texts(stmts[i:i + length])
            canons, p = {}, 0  # start of each occurrence -> its numbering
            while p + length <= len(stmts):
                c = _Canon(self)
                if keys[p] == keys[i] and c.texts(stmts[p:p + length]) == shape:
                    canons[p] = c
                    p += length
                else:
                    p += 1
            run = _Run(self, length, canons) if len(canons) >= 2 else None
            if run is not None and run.valid():
                return run
        return None

    def _agreeing(self, i: int, j: int, n: int) -> int:
        """How many of the first `n` statements at `i` and at `j` agree as a run (numbered
        alike, statement by statement)."""
        a, b = _Canon(self), _Canon(self)
        for k in range(n):
            if a.texts([self.stmts[i + k]]) != b.texts([self.stmts[j + k]]):
                return k
        return n


class _Run:
    """One run and its occurrences: its parameters (free values) and results (values defined
    in it that something after an occurrence reads)."""

    def __init__(self, entry: _Entry, length: int, canons: dict):
        self.entry, self.length = entry, length
        self.starts, self.canons = list(canons), list(canons.values())
        order = self.canons[0].order  # (the same kinds in every occurrence: equal texts)
        self.params = [i for i, (kind, _) in enumerate(order) if kind == "free"]
        returned = set()
        for p, c in canons.items():
            later = {n.id for s in [*entry.stmts[p + length:], entry.ret] for n in ast.walk(s)
                     if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
            returned.update(c.ids[key] for kind, key in c.order if kind == "def" and
                            key in later)
        self.rets = sorted(returned)

    def valid(self) -> bool:
        """The module doc's conditions on the names the run defines and on its boundary."""
        e = self.entry
        if not self.rets:
            return False
        for c in self.canons:
            for i, (kind, key) in enumerate(c.order):
                if kind == "def" and e.count.get(key, 0) != 1:
                    return False
                if kind == "free" and not (key in e.crossing or "[" in key):
                    return False
                if i in self.rets and key not in e.crossing:
                    return False
        return True

    def new_name(self, i: int) -> str:
        return f"p{self.params.index(i)}" if i in self.params else f"q{i}"

    def rewrite(self, em, body: list) -> list:
        """`body` with each occurrence replaced by a call of the run's kernel."""
        stmts = self.entry.stmts
        text = _Canon(self.entry, self.new_name).texts(stmts[self.starts[0]:
                                                             self.starts[0] + self.length])
        params = [self.new_name(i) for i in self.params]
        from .kernel import _returned, kernel_alias
        ret = f"    return {_returned([self.new_name(i) for i in self.rets])}\n"
        lines = textwrap.indent("\n".join(text), "    ").split("\n")
        # the run may hold a shorter run that recurs in it (4 layers: a run of two layers,
        # twice, each of them one layer twice): outlined the same way, so that a model's glue
        # is compiled about once per distinct layer, whatever its depth
        order = self.canons[0].order
        values = {self.new_name(i) for i, (_, key) in enumerate(order)
                  if key in self.entry.crossing or "[" in key}  # (an int read: an int)
        lines = outline_repeats(em, params, lines, ret, values)
        alias = kernel_alias(em, _block_source(em, params, lines, ret), len(params))
        # body line of each statement: its line numbers in the parsed text, less `def _f():`
        first = [s.lineno - 2 for s in stmts]
        out, k = list(body[:first[0]]), 0
        calls = dict(zip(self.starts, self.canons))
        while k < len(stmts):
            c = calls.get(k)
            if c is None:
                stop = first[k + 1] if k + 1 < len(stmts) else stmts[k].end_lineno - 1
                out.extend(body[first[k]:stop])
                k += 1
                continue
            keys = [key for _, key in c.order]
            out.append(f"    {', '.join(keys[i] for i in self.rets)} = "
                       f"{alias}({', '.join(keys[i] for i in self.params)})")
            k += self.length
        return out


def _block_source(em, params, lines, ret) -> str:
    """The run's module: the entry's imports and the globals the run uses, and the run
    (`lines`, then `ret`) as `kernel` (through the lean compiler when it is on), with the glue
    pipeline."""
    from ...kernels import llvm_pipelines
    from . import lean
    from .kernel import kernel_decorator
    from .module_text import module_head
    used = {n for ln in lines for n in re.findall(r"\b[A-Za-z_]\w*\b", ln)}
    head, _ = module_head(em, global_used=lambda g: (
        _DEFINES.match(g) is None or _DEFINES.match(g).group(1) in used))
    head += llvm_pipelines.mark_line(llvm_pipelines.GLUE) + "\n"
    return head + "\n\n" + lean.function_text(kernel_decorator(), "kernel", ", ".join(params),
                                              "".join(ln + "\n" for ln in lines) + ret)
