"""Random edits of valid `jit.save` archives, for the archive fuzzer (tests/test_load_safety.py).

`Mutator(rng, sentinel).mutate(data)` returns (edited archive bytes, what was edited). The
edits are the ones an attacker would try (docs/security.md): constants (strings carrying code,
strings inside int tuples with their declared type changed to match, nested tuples, huge
numbers, placeholders), op names, attributes (`prim::ScalarOp` functions, `prim::GetAttr`
names, exception names), inserted nodes, raw IR tokens, and manifest fields (Python calls,
method names, argument lists, the module tree). Every code payload, if it ever ran as Python
(pasted into generated source, `eval`ed, imported, or called), creates the file `sentinel`.
"""
from __future__ import annotations

import io
import json
import re
import zipfile


def read_members(data: bytes) -> dict:
    z = zipfile.ZipFile(io.BytesIO(data))
    return {i.filename: z.read(i.filename) for i in z.infolist()}


def write_members(members: dict) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
        for name, body in members.items():
            z.writestr(name, body)
    return out.getvalue()


def edit_member(data: bytes, name: str, fn) -> bytes:
    """The archive with member `name` replaced by fn(its bytes) (CRCs recomputed)."""
    m = read_members(data)
    m[name] = fn(m[name])
    return write_members(m)


def edit_manifest(data: bytes, fn) -> bytes:
    def f(body):
        man = json.loads(body)
        fn(man)
        return json.dumps(man).encode()
    return edit_member(data, "manifest.json", f)


def expressions(sentinel: str) -> list:
    """Python expressions that create `sentinel` (for eval, or pasted as an operand)."""
    expr = f"__import__('builtins').open({sentinel!r}, 'w').close()"
    return [expr, f"{expr} or 1", f"1 if {expr} else 1"]


def statement(sentinel: str) -> str:
    """A module / statement that creates `sentinel` (for exec, load_module)."""
    return f"open({sentinel!r}, 'w').close()\n"


def escapes(sentinel: str) -> list:
    """Strings that create `sentinel` once pasted into a line of generated source: close the
    brackets open at the paste, run at module level after a newline, then reopen as many
    brackets inside a new function so that the rest of the program still parses."""
    stmt = statement(sentinel).strip()
    out = []
    for close, reopen in (("", ""), (")", "("), ("))", "(("), (")))", "((("), ("]", "["),
                          (")]", "[("), ("])", "(["), (")))]", "[((("), ("]))", "((["),
                          ("}", "{")):
        out.append(f"1{close}\n{stmt}\ndef _jitorch_f(x):\n    {reopen}x")
        out.append(f"1{close}\n{stmt}\n#")
    return out


def payloads(sentinel: str) -> list:
    """Strings that create `sentinel` when they run as Python in some context: as an
    expression (eval, a pasted operand), as a module (load_module, exec) or once a newline
    lets them escape the line they were pasted into."""
    return expressions(sentinel) + [statement(sentinel)] + escapes(sentinel)


# op names an edit may put in place of a node's op
_EVIL_OPS = ["prim::CallFunction", "prim::Fused", "prim::Evil", "eval", "os.system",
             "__import__", "prim::PythonOp", "prim::GetAttr", "prim::ScalarOp", "exec",
             "builtins.open", "prim::Print"]
_SCALAR_FNS = ["eval", "exec", "open", "__import__", "getattr", "setattr", "compile",
               "globals", "system", "math.__loader__", "math.__spec__", "math.sqrt",
               "operator.attrgetter", "add", "format", "getitem", "builtins.eval", "input"]
_ATTR_NAMES = ["__class__", "__dict__", "__globals__", "_data", "_base", "numpy",
               "__class__.__init__.__globals__", "shape", "ndim", "dtype", "grad", "T"]
_CALL_TARGETS = [["jitorch.script.kernels.cache", "load_module"], ["jitorch", "save"],
                 ["jitorch.serialization", "_raw_bytes"], ["os", "system"],
                 ["builtins", "eval"], ["jitorch.nn.modules.sparse", "_bags"],
                 ["jitorch.script.runtime.serialize", "_build"], ["jitorch", "load"],
                 ["jitorch.jit", "load"], ["jitorch.nn.modules.sparse", "os.system"],
                 ["jitorch._ops.registry", "OPS"], ["jitorch.script.ir.interpreter", "scalar_fn"]]
_METHODS = ["numpy", "tofile", "__class__", "__reduce__", "register_hook", "backward",
            "format", "tolist", "data_ptr", "__setattr__", "max", "storage", "apply_"]
_TYPES = ["str", "int", "float", "Any", "Tensor", "f32[2,3]", "Tuple[int, int, str]",
          "List[str]", "__torch__.Evil", "Optional[str]", "Dict[str, int]", "None", "bool"]
_TOKEN_LINE = re.compile(r"^\s*(%[\w]+(?:: [^=]+)?(?:, %[\w]+: [^=]+)*) = ([\w:.]+)(.*)$")


class EditMutator:
    """What every archive mutator shares: `self.edits` (its edit methods, the last of which is
    `two_edits`), a seeded `self.rng`, and the way an edit is picked and applied."""

    def pick(self, xs):
        return xs[self.rng.randrange(len(xs))]

    def two_edits(self, data):
        data, wa = self._apply(self.pick(self.edits[:-1]), data)
        data, wb = self._apply(self.pick(self.edits[:-1]), data)
        return data, f"{wa}; {wb}"

    @staticmethod
    def _apply(edit, data):
        try:
            return edit(data)
        except (KeyError, IndexError, TypeError, ValueError, AttributeError):
            return data, f"{edit.__name__}: not applicable here"  # an earlier edit's structure

    def mutate(self, data: bytes):
        return self._apply(self.pick(self.edits), data)


class Mutator(EditMutator):
    """Edits of one archive; deterministic for a seeded `rng` (random.Random)."""

    def __init__(self, rng, sentinel: str, op_names: list):
        self.rng = rng
        self.sentinel = sentinel
        self.payloads = payloads(sentinel)
        self.op_names = op_names
        self.exprs = expressions(sentinel)
        self.escapes = escapes(sentinel)
        self.edits = [self.constant, self.constant_retyped, self.element_retyped,
                      self.op_name, self.attribute, self.insert_node, self.insert_call,
                      self.ir_token, self.ir_line, self.python_ops, self.manifest_field,
                      self.two_edits]

    # -- helpers -----------------------------------------------------------------------------
    def payload(self) -> str:
        return self.pick(self.payloads)

    def evil_literal(self) -> str:
        """A literal an attacker would put where a constant is."""
        p = repr(self.payload())
        return self.pick([
            p, f"(2, {p}, 4)", f"({p},)", f"((1, {p}), 2)", f"[{p}]", f"{{{p}: 1}}",
            f"(1, (2, ({p},)))", "10" * 40, "-" + "9" * 30, "1e400", "nan", "-inf",
            "True", "None", "()", "jitorch.float32", "device(type='cpu')", "Tensor(f32[2])",
            "@eval", "{block}", "b'\\x00'", "(1+2j)", str(2 ** 64), str(-2 ** 63 - 1), "0",
            "-1", "3.5", f"({p}, {p})", repr("x" * 5000), "(" * 40 + "1" + ")" * 40])

    def ir(self, members):
        names = [k for k in members if k.startswith("code/")]
        name = self.pick(names)
        return name, members[name].decode("utf-8").split("\n")

    def node_lines(self, lines) -> list:
        return [i for i, s in enumerate(lines) if _TOKEN_LINE.match(s)]

    def with_ir(self, data, fn):
        members = read_members(data)
        name, lines = self.ir(members)
        what = fn(lines)
        members[name] = "\n".join(lines).encode("utf-8")
        return write_members(members), f"{name}: {what}"

    # -- IR edits ----------------------------------------------------------------------------
    def constant(self, data):
        def fn(lines):
            idx = [i for i, s in enumerate(lines) if "prim::Constant[value=" in s]
            if not idx:
                return "no constant"
            i = self.pick(idx)
            lit = self.evil_literal()
            lines[i] = re.sub(r"\[value=.*\]\(\)", lambda m: f"[value={lit}]()", lines[i])
            return f"line {i + 1}: constant -> {lit[:60]!r}"
        return self.with_ir(data, fn)

    def constant_retyped(self, data):
        """A constant and its declared type changed together (the type check passes: what
        reaches the code generator is a str where an op expects an int)."""
        def fn(lines):
            idx = [i for i, s in enumerate(lines) if "prim::Constant[value=" in s]
            if not idx:
                return "no constant"
            i = self.pick(idx)
            p = repr(self.payload())
            lit, ty = self.pick([(p, "str"), (f"(2, {p}, 4)", "Tuple[int, str, int]"),
                                 (f"({p}, 3, 4)", "Tuple[str, int, int]"),
                                 (f"[{p}]", "List[str]"), (f"(({p}, None, None),)",
                                                           "Tuple[Tuple[str, None, None]]"),
                                 (f"({p},)", "Tuple[str]"), (p, "Any"),
                                 (f"(1, {p})", "Any")])
            lines[i] = re.sub(r"^(\s*%\w+): [^=]+ = prim::Constant\[value=.*\]\(\)",
                              lambda m: f"{m.group(1)}: {ty} = prim::Constant[value={lit}]()",
                              lines[i])
            return f"line {i + 1}: constant -> {ty} {lit[:50]!r}"
        return self.with_ir(data, fn)

    def element_retyped(self, data):
        """One int of an int tuple constant (sizes, dims) replaced by an escape payload, the
        declared element type changed to str to match: the reported exploit, generalised."""
        def fn(lines):
            rx = re.compile(r"^(\s*%\w+): Tuple\[([^\]]*)\] = prim::Constant\[value=\((.*)\)\]")
            idx = [i for i, s in enumerate(lines) if rx.match(s) and
                   all(e.strip() == "int" for e in rx.match(s).group(2).split(","))]
            if not idx:
                return "no int tuple"
            i = self.pick(idx)
            m = rx.match(lines[i])
            elems = [e.strip() for e in m.group(3).split(",") if e.strip()]
            k = self.rng.randrange(len(elems))
            elems[k] = repr(self.pick(self.escapes))
            types = ["str" if j == k else "int" for j in range(len(elems))]
            lines[i] = (f"{m.group(1)}: Tuple[{', '.join(types)}] = prim::Constant[value=("
                        f"{', '.join(elems)}{',' if len(elems) == 1 else ''})]()")
            return f"line {i + 1}: element {k} of an int tuple -> {elems[k][:40]}"
        return self.with_ir(data, fn)

    def op_name(self, data):
        def fn(lines):
            idx = self.node_lines(lines)
            if not idx:
                return "no node"
            i = self.pick(idx)
            new = self.pick(_EVIL_OPS + self.op_names)
            m = _TOKEN_LINE.match(lines[i])
            lines[i] = lines[i].replace(f" = {m.group(2)}", f" = {new}", 1)
            return f"line {i + 1}: op {m.group(2)} -> {new}"
        return self.with_ir(data, fn)

    def attribute(self, data):
        def fn(lines):
            kind = self.rng.randrange(5)
            if kind == 0:
                pat, vals = r"fn='[^']*'", [f"fn={v!r}" for v in _SCALAR_FNS]
            elif kind == 1:
                pat, vals = r"name='[^']*'", [f"name={v!r}" for v in _ATTR_NAMES]
            elif kind == 2:
                pat, vals = r"exc='[^']*'", [f"exc={self.payload()!r}", "exc='SystemExit'",
                                              "exc='__import__'", "exc=1"]
            elif kind == 3:
                pat, vals = r"fn=@\w+", ["fn=@eval", "fn=@load_module", "fn='eval'", "fn=1"]
            else:  # an attribute on a node that takes none
                idx = self.node_lines(lines)
                if not idx:
                    return "no node"
                i = self.pick(idx)
                attr = self.pick(["[lower=@eval]", f"[fn={self.payload()!r}]", "[value=1]",
                                  "[name='__class__']", "[inplace=True]", "[ops={block}]"])
                lines[i] = re.sub(r"= ([\w:.]+)(\[[^\]]*\])?\(", lambda m: f"= {m.group(1)}"
                                  f"{attr}(", lines[i], count=1)
                return f"line {i + 1}: attrs {attr[:40]}"
            idx = [i for i, s in enumerate(lines) if re.search(pat, s)]
            if not idx:
                return f"no {pat}"
            i = self.pick(idx)
            v = self.pick(vals)
            lines[i] = re.sub(pat, lambda m: v, lines[i], count=1)
            return f"line {i + 1}: {v[:60]}"
        return self.with_ir(data, fn)

    def _returning(self, lines, i, new):
        """Insert `new` after line i and return %zz from the graph (so nothing removes it)."""
        lines.insert(i + 1, new)
        r = max(k for k, s in enumerate(lines) if s.startswith("  return ("))
        lines[r] = lines[r][:-1] + ", %zz)" if lines[r] != "  return ()" else "  return (%zz)"

    def insert_node(self, data):
        """A new node using an existing value: the dangerous prims wired in."""
        def fn(lines):
            idx = [k for k in self.node_lines(lines) if lines[k].startswith("  %")]
            if not idx:
                return "no node"
            i = self.pick(idx)
            src = re.findall(r"%(\w+)", lines[i])[0]
            p = repr(self.payload())
            scalar = self.pick(
                [("eval", repr(self.pick(self.exprs))), ("exec", repr(statement(self.sentinel))),
                 ("compile", p)] + [(f, p) for f in _SCALAR_FNS])
            new = self.pick([
                f"  %zs: str = prim::Constant[value={scalar[1]}]()\n"
                f"  %zz: Any = prim::ScalarOp[fn={scalar[0]!r}](%zs)",
                f"  %zs: str = prim::Constant[value={self.sentinel!r}]()\n"
                f"  %zm: str = prim::Constant[value='w']()\n"
                f"  %zz: Any = prim::ScalarOp[fn='open'](%zs, %zm)",
                f"  %zz: Any = prim::GetAttr[name={self.pick(_ATTR_NAMES)!r}](%{src})",
                f"  %zz: Any = prim::PythonOp[fn=@fn, name='x', gil=True](%{src})",
                f"  %zs: str = prim::Constant[value={p}]()\n"
                f"  %zz: Any = prim::PythonOp[fn=@fn, name='x', gil=True](%zs)",
                f"  prim::Raise[exc={p}](%{src})",
                f"  %zz: Any = prim::CallFunction[fn=@eval](%{src})",
                f"  %zs: str = prim::Constant[value={p}]()\n  prim::Print(%zs)\n"
                f"  %zz: int = prim::Constant[value=0]()"])
            self._returning(lines, i, new)
            return f"after line {i + 1}: {new.strip()[:80]!r}"
        return self.with_ir(data, fn)

    def insert_call(self, data):
        """A `prim::PythonOp` and its python_ops entry, calling what an attacker would call:
        `load_module` on code, `jitorch.save` to a path, `eval`, a method that escapes."""
        members = read_members(data)
        name, lines = self.ir(members)
        idx = [k for k in self.node_lines(lines) if lines[k].startswith("  %")]
        if not idx:
            return data, "no node"
        i = self.pick(idx)
        src = re.findall(r"%(\w+)", lines[i])[0]
        target, args = self.pick([
            (["jitorch.script.kernels.cache", "load_module"], [repr(statement(self.sentinel))]),
            (["jitorch", "save"], [f"%{src}", repr(self.sentinel)]),
            (["builtins", "eval"], [repr(self.pick(self.exprs))]),
            (["builtins", "exec"], [repr(statement(self.sentinel))]),
            (["jitorch.serialization", "_raw_bytes"], [f"%{src}"]),
            (None, [f"%{src}"])])
        consts, ins = [], []
        for k, a in enumerate(args):
            if a.startswith("%"):
                ins.append(a)
            else:
                consts.append(f"  %zc{k}: str = prim::Constant[value={a}]()")
                ins.append(f"%zc{k}")
        new = "\n".join(consts + [f"  %zz: Any = prim::PythonOp[fn=@fn, name='x', gil=True]"
                                  f"({', '.join(ins)})"])
        before = sum(s.count("prim::PythonOp") for s in lines[:i + 1])
        self._returning(lines, i, new)
        members[name] = "\n".join(lines).encode("utf-8")
        man = json.loads(members["manifest.json"])
        meth = man["module"]["methods"][name[len("code/"):-len(".ir")]]
        entry = {"kind": "kw", "fn": target, "npos": len(ins), "kwnames": [], "method": None}
        if target is None:
            entry.update(npos=0, method=self.pick(_METHODS))
        meth.setdefault("python_ops", []).insert(before, entry)
        members["manifest.json"] = json.dumps(man).encode()
        return write_members(members), f"{name}: call {target or entry['method']}"

    def ir_token(self, data):
        def fn(lines):
            text = "\n".join(lines)
            toks = list(re.finditer(r"[A-Za-z_][\w.:]*|-?\d+(?:\.\d+)?|\S", text))
            t = self.pick(toks)
            new = self.pick([self.evil_literal(), self.pick(_TYPES), self.pick(_EVIL_OPS),
                             "", "(", ")", "{", "}", "[", "]", ",", "%0", "%x", "->",
                             "return", repr(self.payload()), "9" * 20, "\n"])
            text = text[:t.start()] + new + text[t.end():]
            lines[:] = text.split("\n")
            return f"token {t.group(0)[:20]!r} at {t.start()} -> {new[:40]!r}"
        return self.with_ir(data, fn)

    def ir_line(self, data):
        def fn(lines):
            i = self.rng.randrange(len(lines))
            kind = self.pick(["delete", "duplicate", "swap", "truncate"])
            if kind == "delete":
                del lines[i]
            elif kind == "duplicate":
                lines.insert(i, lines[i])
            elif kind == "swap" and i + 1 < len(lines):
                lines[i], lines[i + 1] = lines[i + 1], lines[i]
            else:
                lines[i] = lines[i][:self.rng.randrange(len(lines[i]) + 1)]
            return f"line {i + 1}: {kind}"
        return self.with_ir(data, fn)

    # -- manifest edits ----------------------------------------------------------------------
    def _methods(self, man):
        return man["module"]["methods"]

    def python_ops(self, data):
        what = []

        def fn(man):
            meth = self.pick(list(self._methods(man).values()))
            ops = meth.setdefault("python_ops", [])
            target = self.pick(_CALL_TARGETS)
            entry = self.pick([
                {"kind": "kw", "fn": target, "npos": 1, "kwnames": [], "method": None},
                {"kind": "fn", "fn": target},
                {"kind": "kw", "fn": None, "npos": 0, "kwnames": [],
                 "method": self.pick(_METHODS)},
                {"kind": "kw", "fn": target, "npos": "1", "kwnames": [self.payload()],
                 "method": None},
                {"kind": "index", "op": "getitem", "spec": {"tuple": [
                    {"tuple": ["c", self.payload()]}]}, "single": True},
                {"kind": "index", "op": "getitem", "spec": {"tuple": [
                    {"tuple": ["d", 99]}]}, "single": True},
                {"kind": "index", "op": "getitem", "spec": {"tuple": [
                    {"tuple": ["s", {"tuple": [{"tuple": ["c", 1]}, {"tuple": ["c", "x"]},
                                               {"tuple": ["c", None]}]}]}]}, "single": True},
                {"kind": "index", "op": "__setitem__", "spec": {"tuple": []}, "single": 1},
                {"kind": self.payload()}, [], "eval"])
            if ops and self.rng.random() < 0.6:
                k = self.rng.randrange(len(ops))
                if isinstance(entry, dict) and isinstance(ops[k], dict) and \
                        self.rng.random() < 0.5:
                    ops[k] = {**ops[k], **{key: val for key, val in entry.items()
                                           if key != "kind"}}
                else:
                    ops[k] = entry
            else:
                ops.insert(0, entry)
            what.append(json.dumps(entry)[:100])
        out = edit_manifest(data, fn)
        return out, f"python_ops: {what[0]}"

    def manifest_field(self, data):
        what = []

        def fn(man):
            mod = man["module"]
            meth = self.pick(list(self._methods(man).values()))
            p = self.payload()
            kind = self.rng.randrange(12)
            if kind == 0:
                key = self.pick(["args", "params", "static_args", "mutated_inputs"])
                meth[key] = self.pick([[p], [1.5], ["__class__"], [99], [-1], "x", None,
                                       [[1]], {"a": 1}, list(meth.get(key, [])) * 2])
                what.append(f"{key} -> {str(meth[key])[:60]}")
            elif kind == 1:
                deep = 1
                for _ in range(40):
                    deep = [deep]
                meth["defaults"] = self.pick([{"x": {"evil": p}}, {"x": {"tuple": p}},
                                              {p: 1}, [1], {"x": deep}])
                what.append("defaults")
            elif kind == 2:
                meth["return_aliases"] = self.pick([{"0": 99}, {"x": 0}, {"0": "0"}, [0]])
                what.append("return_aliases")
            elif kind == 3:
                meth["code"] = self.pick(["manifest.json", "data/0.npy", "../x", p, 7])
                what.append(f"code -> {str(meth['code'])[:40]}")
            elif kind == 4:
                name = self.pick(["__init__", "__class__", "train", "_x", p, "state_dict",
                                  "__call__", "forward2", "", "eval"])
                methods = self._methods(man)
                methods[name] = methods.pop(self.pick(list(methods)))
                what.append(f"method renamed -> {name[:40]!r}")
            elif kind == 5:
                mod["tree"]["class"] = self.pick([p, 1, "__class__", None])
                what.append("tree class")
            elif kind == 6:
                mod["tree"]["children"] = self.pick([{p: {}}, {"x": p}, [1], {"a": {"b": 1}},
                                                     {"": {}}, {"a.b": {}}])
                what.append("tree children")
            elif kind == 7:
                mod[self.pick(["kind", "training", "class"])] = self.pick([p, 1, None, [],
                                                                           "trace"])
                what.append("module field")
            elif kind == 8:
                meth[self.pick(["returns_tuple", "python_ops"])] = self.pick([p, 1, {}, None])
                what.append("method field type")
            elif kind == 9:
                meth[p[:20]] = 1
                what.append("unknown method field")
            elif kind == 10:
                man["object"] = self.pick([{"$": "dict", "items": []}, None, p])
                what.append("object")
            else:
                mod[p[:30]] = {"code": p}
                what.append("unknown module field")
        out = edit_manifest(data, fn)
        return out, f"manifest: {what[0] if what else '?'}"

