"""The scripting frontend's builders share one explicit state (script/frontend/state.py).

Every `st.<name>` the frontend reads or writes must be a declared `FrontendState` field or
primitive, every `st.<builder>.<method>` a method of that builder, and every `st.hooks.<hook>`
a `FrontendHooks` method: a static check, so a misspelt name on a rarely taken path (an error
message's branch) fails here rather than in a user's program. The state and the builders are
closed (slots): a builder cannot grow hidden shared state at run time either.
"""
from __future__ import annotations

import ast
import dataclasses
import pathlib

import pytest

from jitorch.script.frontend import alias, call, expr, index, loops, methods, stmt
from jitorch.script.frontend.state import FrontendHooks, FrontendState

FRONTEND = pathlib.Path(__file__).resolve().parents[1] / "src" / "jitorch" / "script" / \
    "frontend"
BUILDERS = {"exprs": expr.ExprBuilder, "calls": call.CallBuilder,
            "methods": methods.MethodBuilder, "index": index.IndexBuilder,
            "stmts": stmt.StmtBuilder, "loops": loops.LoopBuilder,
            "writes": alias.WriteBuilder}
FIELDS = {f.name for f in dataclasses.fields(FrontendState)}


def _state_refs():
    """(file:line, chain) for each `st.a[.b]` and `self.st.a[.b]` in the frontend."""
    for path in sorted(FRONTEND.glob("*.py")):
        tree = ast.parse(path.read_text())
        seen = set()
        for node in ast.walk(tree):
            if not isinstance(node, ast.Attribute) or id(node) in seen:
                continue
            chain, cur = [], node
            while isinstance(cur, ast.Attribute):
                chain.append(cur.attr)
                seen.add(id(cur))
                cur = cur.value
            chain.reverse()
            if isinstance(cur, ast.Name) and cur.id == "st":
                yield f"{path.name}:{node.lineno}", chain
            elif isinstance(cur, ast.Name) and cur.id == "self" and chain[:1] == ["st"] and \
                    len(chain) > 1:
                yield f"{path.name}:{node.lineno}", chain[1:]


def test_the_builders_name_only_declared_state():
    bad = []
    n = 0
    for where, chain in _state_refs():
        n += 1
        head = chain[0]
        if head not in FIELDS and not callable(getattr(FrontendState, head, None)):
            bad.append(f"{where}: st.{head} is not a FrontendState field")
        elif head in BUILDERS and len(chain) > 1 and not hasattr(BUILDERS[head], chain[1]):
            bad.append(f"{where}: st.{head}.{chain[1]} is not a method of "
                       f"{BUILDERS[head].__name__}")
        elif head == "hooks" and len(chain) > 1 and not hasattr(FrontendHooks, chain[1]):
            bad.append(f"{where}: st.hooks.{chain[1]} is not a FrontendHooks method")
    assert n > 500  # the check saw the builders' code
    assert not bad, "\n".join(bad)


def test_every_builder_is_a_field_of_the_state():
    assert set(BUILDERS) <= FIELDS


@pytest.mark.parametrize("cls", [FrontendState] + list(BUILDERS.values()),
                         ids=lambda c: c.__name__)
def test_state_and_builders_are_closed(cls):
    assert "__slots__" in cls.__dict__ and "__dict__" not in dir(cls)
