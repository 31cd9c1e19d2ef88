"""A fuzzed program: arguments, straight-line statements, returned values; its source and module.

Owns the program's representation and how it becomes a Python function. A statement is one line
of source written as a format string over its operands (`"{t} = jitorch.add({r0}, {r1})"`), so
the minimiser can drop statements and rewire operands without parsing. The function is written to
a file in a temporary directory and imported from there, because the script frontend reads it
with `inspect.getsource` (and so that tracebacks show the generated line).
"""
from __future__ import annotations

import atexit
import hashlib
import importlib.util
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field, replace

HEADER = "import jitorch\nimport numpy as np\nfrom typing import List, Tuple\n\n\n"


@dataclass
class Arg:
    name: str
    kind: str  # "tensor" | "int" | "float" | "bool"
    dtype: object = None  # jitorch dtype of a tensor argument
    rank: int = 0
    dims: tuple = ()  # free tensors: symbol names or 1 (set 0 sizes come from the symbols)
    origin: tuple | None = None  # sample-bound tensors: (form index, "arg"/"kw", position/key)
    bound: object = None  # index tensors: the size (symbol or int) their values index into

    def annotation(self) -> str:
        return {"tensor": "", "int": ": int", "float": ": float", "bool": ": bool"}[self.kind]


@dataclass
class Stmt:
    fmt: str  # "{t} = ..." with {r0}.. for reads and {t}/{t1} for targets
    reads: tuple = ()
    targets: tuple = ()
    writes: tuple = ()  # indices into reads of tensors written in place
    tag: str = ""  # what the statement exercises: "form:add", "inplace:add_", "setitem", ...

    def line(self) -> str:
        names = {f"r{i}": r for i, r in enumerate(self.reads)}
        names.update({("t" if i == 0 else f"t{i}"): t for i, t in enumerate(self.targets)})
        return self.fmt.format(**names)


@dataclass
class Program:
    args: list
    body: list = field(default_factory=list)
    returns: tuple = ()
    name: str = "prog"

    def signature(self) -> str:
        return ", ".join(a.name + a.annotation() for a in self.args)

    def source(self) -> str:
        lines = [f"def {self.name}({self.signature()}):"]
        lines += ["    " + s.line() for s in self.body]
        if len(self.returns) == 1:
            lines.append(f"    return {self.returns[0]}")
        elif self.returns:
            lines.append(f"    return {', '.join(self.returns)},")
        else:
            lines.append("    return None")
        return "\n".join(lines) + "\n"

    def tensor_args(self):
        return [i for i, a in enumerate(self.args) if a.kind == "tensor"]

    def written_args(self) -> set:
        """Names of arguments some statement writes in place (directly)."""
        names = {a.name for a in self.args}
        out = set()
        for s in self.body:
            for w in s.writes:
                if s.reads[w] in names:
                    out.add(s.reads[w])
        return out

    def writes_anything(self) -> bool:
        return any(s.writes for s in self.body)

    def live_returns(self, kinds) -> tuple:
        """Every target nothing later reads, and every local written in place: returning them
        all leaves no dead statement (a compiler may drop dead code, even code that would
        raise). `kinds(name)` says whether a variable may be returned."""
        args = {a.name for a in self.args}
        out = []
        for i, s in enumerate(self.body):
            later = [(r, k in t.writes) for t in self.body[i + 1:] for k, r in enumerate(t.reads)]
            for t in s.targets:
                if kinds(t) and not any(r == t and not w for r, w in later):
                    out.append(t)
            for k in s.writes:
                r = s.reads[k]
                if r not in args and r not in out and kinds(r):
                    out.append(r)
        return tuple(reversed(out))

    def copy(self) -> "Program":
        return replace(self, args=list(self.args), body=list(self.body))


_DIR = None
_LOADED: dict = {}


def _dir() -> str:
    global _DIR
    if _DIR is None:
        _DIR = tempfile.mkdtemp(prefix="jitorch_fuzz_")
        atexit.register(shutil.rmtree, _DIR, True)
    return _DIR


def load(prog: Program):
    """Import the program's source as a module from a file; -> the function object. Each
    source gets its own module (named by its hash), so equal programs share one function."""
    src = HEADER + prog.source()
    key = hashlib.sha1(src.encode()).hexdigest()[:16]
    fn = _LOADED.get(key)
    if fn is not None:
        return fn
    name = f"_jitorch_fuzz_{key}"
    path = os.path.join(_dir(), name + ".py")
    with open(path, "w") as f:
        f.write(src)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    fn = getattr(mod, prog.name)
    _LOADED[key] = fn
    return fn
