"""The IR parser: reads back exactly what `ir/printer.py` writes (see the grammar there).

Owns `parse_graph(text, resolve=None, positions=None) -> ir.Graph`, `parse_type(text)`,
`parse_literal(text, resolve=None)`, `line_of`, `ParseError`, and the placeholders for literals
whose printed form does not carry the object: `TensorLiteral` (a tensor constant printed as
`Tensor(f32[2,3])`: dtype and shape survive, data does not) and `Ref` (`@name` with no `resolve`
callback, or one that returns None). Both print back as they were read, so
print -> parse -> print is the identity on text.

The parser is character-level recursive descent; whitespace and newlines are insignificant
except as separators. Value names are scoped: a block sees its own params and values defined
before the use in it or in enclosing blocks (an open block parses; `verify` decides whether
it is allowed). Parsed values keep printed identifiers as name hints (numbers are dropped, so
re-printing renumbers them identically).

Text from a file is untrusted (jit.load, docs/security.md): nesting of blocks and of literals is
bounded (MAX_BLOCK_DEPTH, MAX_LITERAL_DEPTH) so that no input exhausts the stack, and
`positions` (a dict) receives each node's offset in the text, for errors that name its line
(`line_of`). What the parsed graph may contain is decided afterwards by `load_schema`.
"""
from __future__ import annotations

import ast
import re
from typing import Callable

from ... import _dtype as dt
from .. import ir
from .printer import BLOCK_LABELS


class ParseError(ValueError):
    pass


class TensorLiteral:
    """A tensor constant whose data was not printed: keeps the type only."""

    def __init__(self, type: ir.TensorType):
        self.type = type

    def __repr__(self):
        return f"Tensor({self.type})"

    def __eq__(self, other):
        return isinstance(other, TensorLiteral) and other.type == self.type

    def __hash__(self):
        return hash(("TensorLiteral", str(self.type)))


class Ref:
    """An unresolved `@name` (a callee graph or a Python callable)."""

    def __init__(self, name: str):
        self.name = name

    def __repr__(self):
        return "@" + self.name

    def __eq__(self, other):
        return isinstance(other, Ref) and other.name == self.name

    def __hash__(self):
        return hash(("Ref", self.name))


class _BlockPlaceholder:
    """A block nested inside an attribute literal (printed as `{block}`, body not printed)."""

    def __repr__(self):
        return "{block}"


BLOCK_PLACEHOLDER = _BlockPlaceholder()

_SCALAR_TYPES = {"int": ir.INT, "float": ir.FLOAT, "bool": ir.BOOL, "str": ir.STR,
                 "None": ir.NONE, "Device": ir.DEVICE, "ScalarType": ir.DTYPE, "Any": ir.ANY}
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DEVICE = re.compile(r"([a-z]+)(?::\d+)?")
_OPNAME = re.compile(r"[A-Za-z_][A-Za-z0-9_:.]*")
_VALUE = re.compile(r"%([A-Za-z0-9_]+)")
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)j?")
_REFNAME = re.compile(r"[^\s,()\[\]{}]+")
_REAL = r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|inf|nan)"
_COMPLEX = re.compile(r"\((" + _REAL + r"[-+](?:\d+\.?\d*(?:[eE][-+]?\d+)?|inf|nan)j)\)")
MAX_BLOCK_DEPTH = 64     # nested if/loop blocks
MAX_LITERAL_DEPTH = 32   # nested tuple/list/dict literals
_WORDS = {"True": True, "False": False, "None": None, "inf": float("inf"),
          "nan": float("nan")}


class _Parser:
    def __init__(self, text: str, resolve: Callable | None = None, positions=None):
        self.s = text
        self.i = 0
        self.resolve = resolve
        self.scopes: list[dict] = []
        self.positions = positions
        self.depth = 0  # literal nesting

    # -- low level -----------------------------------------------------------------------------
    def error(self, msg: str):
        line = self.s.count("\n", 0, self.i) + 1
        col = self.i - (self.s.rfind("\n", 0, self.i) + 1) + 1
        src = self.s.splitlines()[line - 1] if self.s.splitlines() else ""
        raise ParseError(f"IR parse error at {line}:{col}: {msg}\n  {src}\n  {' ' * (col - 1)}^")

    def ws(self):
        s, i = self.s, self.i
        while i < len(s) and s[i] in " \t\r\n":
            i += 1
        self.i = i

    def peek(self, tok: str) -> bool:
        self.ws()
        return self.s.startswith(tok, self.i)

    def accept(self, tok: str) -> bool:
        if self.peek(tok):
            self.i += len(tok)
            return True
        return False

    def expect(self, tok: str):
        if not self.accept(tok):
            self.error(f"expected {tok!r}")

    def match(self, rx: re.Pattern, what: str) -> re.Match:
        self.ws()
        m = rx.match(self.s, self.i)
        if not m:
            self.error(f"expected {what}")
        self.i = m.end()
        return m

    # -- types ---------------------------------------------------------------------------------
    def type(self) -> ir.Type:
        self.ws()
        if self.s.startswith("__torch__.", self.i):
            self.i += len("__torch__.")
            return ir.ClassType(self.match(re.compile(r"[A-Za-z_][A-Za-z0-9_.]*"),
                                           "class name").group(0))
        name = self.match(_IDENT, "a type").group(0)
        if name in ("Tuple", "List", "Dict", "Optional"):
            self.expect("[")
            args = []
            while not self.accept("]"):
                args.append(self.type())
                if not self.accept(","):
                    self.expect("]")
                    break
            n_args = {"List": 1, "Dict": 2, "Optional": 1}.get(name)
            if n_args is not None and len(args) != n_args:
                self.error(f"{name} takes {n_args} type argument(s)")
            if name == "Tuple":
                return ir.TupleType(args)
            if name == "List":
                return ir.ListType(args[0])
            if name == "Dict":
                return ir.DictType(*args)
            return ir.OptionalType(args[0])
        if name in _SCALAR_TYPES:
            return _SCALAR_TYPES[name]
        if name == "Tensor":
            dtype = None
        elif name in ir.SHORT_DTYPE:
            dtype = ir.SHORT_DTYPE[name]
        else:
            self.error(f"unknown type {name!r}")
        shape = None
        # a '[' right after the dtype (no space) is the shape; Tuple[...] etc. were handled above
        if self.s.startswith("[", self.i):
            self.i += 1
            shape = []
            while not self.accept("]"):
                if self.accept("?"):
                    shape.append(None)
                else:
                    shape.append(int(self.match(re.compile(r"\d+"), "a size").group(0)))
                if not self.accept(","):
                    self.expect("]")
                    break
        device = "cpu"
        if self.s.startswith("@", self.i):  # `@cuda` right after the type: its device
            m = _DEVICE.match(self.s, self.i + 1)
            kind = m.group(1) if m else None
            if kind not in ir.DEVICE_TYPES or kind == "cpu":  # (a CPU type names no device)
                self.error("expected a device after '@' (cuda or cuda:<index>)")
            self.i = m.end()
            device = m.group(0)
        return ir.TensorType(dtype, shape, device)

    # -- literals ------------------------------------------------------------------------------
    def literal(self):
        self.depth += 1
        try:
            if self.depth > MAX_LITERAL_DEPTH:
                self.error(f"literal nested more than {MAX_LITERAL_DEPTH} levels deep")
            return self._literal()
        finally:
            self.depth -= 1

    def _literal(self):
        self.ws()
        s, i = self.s, self.i
        if i >= len(s):
            self.error("expected a literal")
        c = s[i]
        if c == "(":
            m = _COMPLEX.match(s, i)
            if m:  # repr of a complex with a real part: (1+2j), (-0-1.5j), (inf+nanj)
                self.i = m.end()
                return complex(m.group(1))
            self.i += 1
            items, trailing = self._items(")")
            if len(items) == 1 and not trailing:
                return items[0]  # a parenthesised value, e.g. a complex number (1+2j)
            return tuple(items)
        if c == "[":
            self.i += 1
            return self._items("]")[0]
        if c == "{":
            if s.startswith("{block}", i):
                self.i += len("{block}")
                return BLOCK_PLACEHOLDER
            self.i += 1
            out = {}
            while not self.accept("}"):
                k = self.literal()
                self.expect(":")
                out[k] = self.literal()
                if not self.accept(","):
                    self.expect("}")
                    break
            return out
        if c in "'\"" or (c in "bBrRuU" and i + 1 < len(s) and s[i + 1] in "'\""):
            return self._string()
        if c == "@":
            self.i += 1
            name = self.match(_REFNAME, "a name").group(0)
            obj = self.resolve(name) if self.resolve is not None else None
            return Ref(name) if obj is None else obj
        if c == "-" and s.startswith("-inf", i):
            self.i += 4
            return float("-inf")
        m = _NUMBER.match(s, i)
        if m:
            self.i = m.end()
            txt = m.group(0)
            neg = txt.startswith("-")
            val = ast.literal_eval(txt.lstrip("+-"))
            return -val if neg else val
        m = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*").match(s, i)
        if m:
            word = m.group(0)
            self.i = m.end()
            if word in _WORDS:
                return _WORDS[word]
            if word.startswith("jitorch."):
                d = getattr(dt, word.split(".", 1)[1], None)
                if isinstance(d, dt.dtype):
                    return d
                self.error(f"unknown dtype {word!r}")
            if word == "Tensor" and self.accept("("):
                ty = self.type()
                self.expect(")")
                if not isinstance(ty, ir.TensorType):
                    self.error("expected a tensor type")
                return TensorLiteral(ty)
            if word == "device" and self.accept("("):
                start = self.i
                depth = 1
                while depth:
                    if self.i >= len(s):
                        self.error("unterminated device(...)")
                    depth += {"(": 1, ")": -1}.get(s[self.i], 0)
                    self.i += 1
                kw = ast.parse(f"f({s[start:self.i - 1]})", mode="eval").body
                from ... import _device
                args = [ast.literal_eval(a) for a in kw.args]
                kwargs = {k.arg: ast.literal_eval(k.value) for k in kw.keywords}
                return _device.device(*args, **kwargs)
            self.error(f"unknown literal {word!r}")
        self.error("expected a literal")

    def _items(self, close: str):
        items, trailing = [], False
        while not self.accept(close):
            items.append(self.literal())
            trailing = False
            if not self.accept(","):
                self.expect(close)
                break
            trailing = True
        return items, trailing

    def _string(self):
        s = self.s
        j = self.i
        while s[j] in "bBrRuU":
            j += 1
        q = s[j]
        triple = s.startswith(q * 3, j)
        end_tok = q * 3 if triple else q
        k = j + len(end_tok)
        while True:
            if k >= len(s):
                self.error("unterminated string")
            if s[k] == "\\":
                k += 2
                continue
            if s.startswith(end_tok, k):
                k += len(end_tok)
                break
            k += 1
        text = s[self.i:k]
        self.i = k
        return ast.literal_eval(text)

    # -- values --------------------------------------------------------------------------------
    def define(self, name: str, v: ir.Value):
        scope = self.scopes[-1]
        if name in scope:
            self.error(f"%{name} defined twice")
        scope[name] = v
        v.name = None if name.isdigit() else name

    def lookup(self, name: str) -> ir.Value:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        self.error(f"%{name} is not defined")

    def value_ref(self) -> ir.Value:
        return self.lookup(self.match(_VALUE, "a value (%name)").group(1))

    def values(self) -> list:
        self.expect("(")
        out = []
        while not self.accept(")"):
            out.append(self.value_ref())
            if not self.accept(","):
                self.expect(")")
                break
        return out

    def params(self) -> list:
        """`(%a: T, %b: U)` defining each in the current scope."""
        self.expect("(")
        out = []
        while not self.accept(")"):
            name = self.match(_VALUE, "a value (%name)").group(1)
            self.expect(":")
            v = ir.Value(self.type())
            self.define(name, v)
            out.append(v)
            if not self.accept(","):
                self.expect(")")
                break
        return out

    # -- structure -----------------------------------------------------------------------------
    def graph(self) -> ir.Graph:
        self.expect("graph")
        self.expect("@")
        self.ws()
        j = self.s.find("(", self.i)
        if j < 0:
            self.error("expected '(' after the graph name")
        name = self.s[self.i:j].strip()
        self.i = j
        self.scopes.append({})
        block = ir.Block(self.params())
        self.expect("{")
        block.nodes = self.nodes(end="return")
        self.expect("return")
        block.returns = self.values()
        self.expect("}")
        self.scopes.pop()
        self.ws()
        if self.i != len(self.s):
            self.error("unexpected text after the graph")
        return ir.Graph(name, block)

    def nodes(self, end: str) -> list:
        out = []
        while not self.peek(end):
            if self.i >= len(self.s):
                self.error(f"expected {end!r}")
            out.append(self.node())
        return out

    def node(self) -> ir.Node:
        outs = []
        self.ws()
        start = self.i
        if self.s.startswith("%", self.i):
            while True:
                name = self.match(_VALUE, "a value (%name)").group(1)
                self.expect(":")
                outs.append((name, self.type()))
                if not self.accept(","):
                    break
            self.expect("=")
        op = self.match(_OPNAME, "an op name").group(0)
        attrs = {}
        self.ws()
        if self.s.startswith("[", self.i):
            self.i += 1
            while not self.accept("]"):
                key = self.match(_IDENT, "an attribute name").group(0)
                self.expect("=")
                attrs[key] = self.literal()
                if not self.accept(","):
                    self.expect("]")
                    break
        inputs = self.values()
        blocks = []
        if self.accept("{"):
            if len(self.scopes) > MAX_BLOCK_DEPTH:
                self.error(f"blocks nested more than {MAX_BLOCK_DEPTH} levels deep")
            labels = BLOCK_LABELS.get(op)
            while not self.accept("}"):
                label = self.match(_IDENT, "a block label").group(0)
                want = labels[len(blocks)] if labels and len(blocks) < len(labels) \
                    else f"block{len(blocks)}"
                if label != want:
                    self.error(f"expected block label {want!r}, got {label!r}")
                self.scopes.append({})
                b = ir.Block(self.params())
                self.expect(":")
                b.nodes = self.nodes(end="->")
                self.expect("->")
                b.returns = self.values()
                self.scopes.pop()
                blocks.append(b)
        node = ir.Node(op, inputs, [t for _, t in outs], attrs=attrs, blocks=blocks)
        for (name, _), v in zip(outs, node.outputs):
            self.define(name, v)
        if self.positions is not None:
            self.positions[node] = start
        return node


def parse_graph(text: str, resolve: Callable | None = None, positions: dict | None = None
                ) -> ir.Graph:
    """Parse a printed graph. `resolve(name)` maps `@name` literals to objects (a callee Graph,
    a Python callable); when it is absent or returns None the literal stays a `Ref`.
    `positions`, when given, receives {node: offset of the node's text}."""
    return _Parser(text, resolve, positions).graph()


def line_of(text: str, offset: int) -> int:
    """The 1-based line of `offset` in `text`."""
    return text.count("\n", 0, offset) + 1


def parse_type(text: str) -> ir.Type:
    p = _Parser(text)
    t = p.type()
    p.ws()
    if p.i != len(text):
        p.error("unexpected text after the type")
    return t


def parse_literal(text: str, resolve: Callable | None = None):
    p = _Parser(text, resolve)
    v = p.literal()
    p.ws()
    if p.i != len(text):
        p.error("unexpected text after the literal")
    return v
