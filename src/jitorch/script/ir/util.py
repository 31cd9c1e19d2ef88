"""IR utilities shared by the passes: copying, walking, use lists, rewiring, closing blocks, purity.

Owns:
- `clone_graph` / `clone_block` / `clone_node`: deep copies with fresh Values (a `vmap`
  old Value -> new Value is filled in, so callers can map values across the copy). Attribute
  values are shared except nested `ir.Block`s, which are cloned; callee Graphs in
  `attrs["fn"]` are shared (they are immutable inputs to the inliner).
- `walk_blocks`, `all_nodes`, `uses`: traversal and use lists (a use is `(user, index)` where
  user is a Node (input index) or a Block (return index)).
- `replace_all_uses(root, old, new)`: rewires inputs and block returns below `root`.
- `close_block(node, outer_values=None)`: turns the values that a node's blocks read from outside
  into explicit operands, per ir/__init__.py's conventions (captured values are appended to the
  node's inputs and, as new params, to every block of the node). Nested nodes are closed first.
- `ends_in_raise(block)`: the block is an error branch (its nodes only build the message).
- `is_pure(node)` / `IMPURE_*`: the single definition of which nodes have side effects or are
  nondeterministic; CSE and DCE both read it.
- `describe(node)`: how a reason for interpreting a graph names a node (the op; a Python
  call's function).
"""
from __future__ import annotations

from typing import Iterable, Iterator

from .. import ir

# --- purity ------------------------------------------------------------------------------------
# Structural ops with effects (I/O, exceptions, opaque Python, calls whose body we do not look at).
IMPURE_PRIMS = frozenset({"prim::PythonOp", "prim::Raise", "prim::Print", "prim::Assert",
                          "prim::CallFunction"})
# Ops producing fresh mutable objects: two of them must stay two objects (CSE only).
MUTABLE_RESULT_PRIMS = frozenset({"prim::ListConstruct", "prim::DictConstruct"})
# Substrings naming nondeterministic (random) ops; any op whose name contains one is impure.
RANDOM_MARKERS = ("rand", "dropout", "bernoulli", "multinomial", "normal", "poisson", "uniform",
                  "exponential", "cauchy", "geometric", "rrelu")


def is_random(op: str) -> bool:
    base = op.split("::")[-1]
    return any(m in base for m in RANDOM_MARKERS)


def is_inplace(op: str) -> bool:
    """In-place registry ops are spelled `name_` (PyTorch's convention); `*_setitem` mutate."""
    if op.startswith("prim::"):
        return False
    return (op.endswith("_") and not op.endswith("__")) or op.endswith("_setitem")


def node_is_pure(node: ir.Node) -> bool:
    """No side effect and deterministic, ignoring sub-blocks (see `is_pure`)."""
    op = node.op
    return not (op in IMPURE_PRIMS or is_inplace(op) or is_random(op))


def describe(node: ir.Node) -> str:
    """A node as the reasons for running a graph interpreted name it: its op, and for a Python
    call or a call of a graph the function it calls (a reason always names the op)."""
    if node.op == "prim::PythonOp":
        return f"'prim::PythonOp' calling {node.attrs.get('name')!r} (a Python call)"
    if node.op == "prim::CallFunction":
        name = getattr(node.attrs.get("fn"), "name", None)
        if name:
            return f"'prim::CallFunction' of {name!r}"
    return f"'{node.op}'"


def is_pure(node: ir.Node) -> bool:
    """True when the node (and everything in its blocks) may be removed or merged."""
    if not node_is_pure(node):
        return False
    return all(is_pure(n) for b in node.blocks for n in b.nodes)


# --- traversal ---------------------------------------------------------------------------------
def walk_blocks(block: ir.Block) -> Iterator[ir.Block]:
    """`block` and every block nested in it, outer first."""
    yield block
    for n in block.nodes:
        for b in n.blocks:
            yield from walk_blocks(b)


def all_nodes(block: ir.Block) -> Iterator[ir.Node]:
    for b in walk_blocks(block):
        yield from b.nodes


def _root(g) -> ir.Block:
    return g.block if isinstance(g, ir.Graph) else g


def uses(g) -> dict:
    """Value -> list of (user, index); user is a Node (inputs[index]) or a Block (returns)."""
    out: dict = {}
    for b in walk_blocks(_root(g)):
        for n in b.nodes:
            for i, v in enumerate(n.inputs):
                out.setdefault(v, []).append((n, i))
        for i, v in enumerate(b.returns):
            out.setdefault(v, []).append((b, i))
    return out


def use_counts(g) -> dict:
    """Value -> number of uses (only values with at least one use appear)."""
    out: dict = {}
    for b in walk_blocks(_root(g)):
        for n in b.nodes:
            for v in n.inputs:
                out[v] = out.get(v, 0) + 1
        for v in b.returns:
            out[v] = out.get(v, 0) + 1
    return out


def replace_all_uses(g, old: ir.Value, new: ir.Value) -> int:
    """Make every use of `old` below `g` (a Graph or Block) read `new`; returns how many."""
    return replace_many(g, {old: new})


def replace_many(g, mapping: dict) -> int:
    """Rewire several values at once (`mapping` old -> new, followed transitively)."""
    if not mapping:
        return 0

    def look(v):
        seen = 0
        while v in mapping and seen < 1000:
            v = mapping[v]
            seen += 1
        return v

    count = 0
    for b in walk_blocks(_root(g)):
        for n in b.nodes:
            for i, v in enumerate(n.inputs):
                if v in mapping:
                    n.inputs[i] = look(v)
                    count += 1
        for i, v in enumerate(b.returns):
            if v in mapping:
                b.returns[i] = look(v)
                count += 1
    return count


# --- copying -----------------------------------------------------------------------------------
def _copy_value(v: ir.Value, node=None) -> ir.Value:
    return ir.Value(v.type, v.name, node)


def clone_node(node: ir.Node, vmap: dict) -> ir.Node:
    """Copy `node` (and its blocks); inputs are looked up in `vmap` (unmapped ones are kept,
    which lets a caller copy a node into a scope where some values are shared)."""
    new = ir.Node.__new__(ir.Node)
    new.op = node.op
    new.inputs = [vmap.get(v, v) for v in node.inputs]
    new.outputs = []
    for o in node.outputs:
        c = _copy_value(o, new)
        vmap[o] = c
        new.outputs.append(c)
    new.blocks = [clone_block(b, vmap) for b in node.blocks]
    new.attrs = {k: (clone_block(v, vmap) if isinstance(v, ir.Block) else v)
                 for k, v in node.attrs.items()}
    new.loc = node.loc
    return new


def clone_block(block: ir.Block, vmap: dict | None = None) -> ir.Block:
    vmap = {} if vmap is None else vmap
    params = []
    for p in block.params:
        c = _copy_value(p)
        vmap[p] = c
        params.append(c)
    nodes = [clone_node(n, vmap) for n in block.nodes]
    returns = [vmap.get(v, v) for v in block.returns]
    return ir.Block(params, nodes, returns)


def clone_graph(g: ir.Graph, vmap: dict | None = None) -> ir.Graph:
    """A deep copy of `g` with fresh Values (types are shared: Type objects are immutable)."""
    out = ir.Graph(g.name, clone_block(g.block, {} if vmap is None else vmap))
    out.capabilities = g.capabilities
    return out


def inline_block(block: ir.Block, args: list, vmap: dict | None = None):
    """Copy `block`'s nodes with its params bound to `args`; returns (nodes, returns)."""
    vmap = {} if vmap is None else vmap
    for p, a in zip(block.params, args):
        vmap[p] = a
    nodes = [clone_node(n, vmap) for n in block.nodes]
    return nodes, [vmap.get(v, v) for v in block.returns]


# --- closing blocks ----------------------------------------------------------------------------
def defined_in(block: ir.Block) -> set:
    """Values defined by `block` itself (params and node outputs, not nested blocks)."""
    out = set(block.params)
    for n in block.nodes:
        out.update(n.outputs)
    return out


def free_values(block: ir.Block) -> list:
    """Values read below `block` but defined outside it, in first-use order."""
    seen: dict = {}
    defined: set = set()

    def visit(b: ir.Block):
        defined.update(b.params)
        for n in b.nodes:
            for v in n.inputs:
                if v not in defined:
                    seen.setdefault(v, None)
            for sub in n.blocks:
                visit(sub)
            defined.update(n.outputs)
        for v in b.returns:
            if v not in defined:
                seen.setdefault(v, None)

    visit(block)
    return list(seen)


def close_block(node: ir.Node, outer_values: Iterable[ir.Value] | None = None) -> list:
    """Make `node`'s blocks closed: each value they read from outside becomes a captured operand
    (appended to `node.inputs`, and as a fresh param appended to every block of the node, then
    substituted for the outer value inside that block). Works for prim::If (inputs
    `(cond, *captured)`), prim::Loop (`(trip, cond, *carried, *captured)`; body params
    `(i, *carried, *captured)`) and prim::Fused (inputs == block params), since all three keep
    captures last. Nested nodes are closed first. If `outer_values` is given, every captured
    value must be one of them (ValueError otherwise: the frontend referenced something out of
    scope). Returns the newly captured outer values."""
    for b in node.blocks:
        for n in b.nodes:
            if n.blocks:
                close_block(n)
    free: dict = {}
    for b in node.blocks:
        for v in free_values(b):
            free.setdefault(v, None)
    # a value already passed in as a captured operand is re-used, not captured twice
    n_fixed = _n_fixed_inputs(node)
    already = {v: i for i, v in enumerate(node.inputs) if i >= n_fixed}
    captured = []
    allowed = None if outer_values is None else set(outer_values)
    for v in free:
        if allowed is not None and v not in allowed:
            raise ValueError(f"close_block: {node.op} reads {v!r}, which is not in scope")
        captured.append(v)
    for b in node.blocks:
        mapping = {}
        for v in captured:
            if v in already:
                mapping[v] = b.params[already[v] - _param_offset(node)]
                continue
            p = ir.Value(v.type, v.name)
            b.params.append(p)
            mapping[v] = p
        _substitute(b, mapping)
    for v in captured:
        if v not in already:
            node.inputs.append(v)
    return captured


def _n_fixed_inputs(node: ir.Node) -> int:
    if node.op == "prim::If":
        return 1
    if node.op == "prim::Loop":
        return 2 + len(node.outputs)
    return 0


def _param_offset(node: ir.Node) -> int:
    """inputs[k] corresponds to block param k - offset (If: cond has no param; Loop: trip and
    cond are replaced by the iteration counter param)."""
    return {"prim::If": 1, "prim::Loop": 1}.get(node.op, 0)


def _substitute(block: ir.Block, mapping: dict) -> None:
    """Replace outer values inside `block` (the block itself and open nested blocks)."""
    for b in walk_blocks(block):
        for n in b.nodes:
            n.inputs = [mapping.get(v, v) for v in n.inputs]
        b.returns = [mapping.get(v, v) for v in b.returns]


def close_graph(g: ir.Graph) -> ir.Graph:
    """Close every block-owning node of `g` (in place); returns `g`."""
    for n in g.block.nodes:
        if n.blocks:
            close_block(n)
    return g


def used_inputs(graph) -> frozenset:
    """Indices of the graph's inputs that some node (in any block) or a return reads."""
    ids = {id(p): i for i, p in enumerate(graph.inputs)}
    used = set()

    def walk(block):
        for v in block.returns:
            if id(v) in ids:
                used.add(ids[id(v)])
        for n in block.nodes:
            for v in n.inputs:
                if id(v) in ids:
                    used.add(ids[id(v)])
            for b in n.blocks:
                walk(b)
    walk(graph.block)
    return frozenset(used)


def ends_in_raise(b: ir.Block) -> bool:
    """The block ends in a `raise` (its nodes only build the message or check more): an error
    branch, which a code generator may hand to the interpreter when it cannot build the
    message itself."""
    return bool(b.nodes) and b.nodes[-1].op == "prim::Raise" and not b.returns
