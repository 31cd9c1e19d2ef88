"""TorchScript as people write it (issue 11): list and dict methods, mutation through subscripts,
slice assignment, and a variable that is None before a loop and a Tensor after it (Optional with
refinement). Each scripted function is checked against the same function run eagerly."""
# (no `from __future__ import annotations`: the scripted functions' annotations are objects)
from typing import Dict, List, Optional

import numpy as np
import pytest

import jitorch
from jitorch import Tensor


def _list_ints(x):
    l = [1, 5, 3]
    l.insert(1, 7)
    p = l.pop()
    l.remove(7)
    l.extend([9, 4])
    l.sort()
    l.reverse()
    i = l.index(9)
    c = l.count(4)
    q = l.pop(0)
    l.insert(-1, 2)
    l.insert(100, 6)
    l.sort(reverse=True)
    return x * (p + i + c + l[0] + len(l) + q + l[-1] * 10 + l[1] * 100)


def _list_clear(x):
    l = [1, 2]
    l.clear()
    l.append(3)
    return x * (l[0] + len(l))


def _list_tensors(x):
    ls = [x, x * 2]
    ls.insert(0, x * 5)
    y = ls.pop(1)
    ls.reverse()
    ls.extend([x * 7])
    return ls[0] + y * 10 + ls[-1] * 100 + len(ls)


def _list_in_loops(x):
    l: List[int] = []
    for i in range(5):
        l.insert(0, i)
    l.sort()
    s = 0
    while len(l) > 0:
        s = s * 10 + l.pop()
    return x * s


def _slice_assign(x):
    l = [1, 2, 3, 4, 5]
    l[1:3] = [9, 9, 9]
    l[:1] = []
    l[4:] = [7]
    l[-2:] = [8]
    return x * (l[0] + 10 * l[-1] + 100 * len(l))


def _through_subscripts(x):
    d: Dict[str, List[Tensor]] = {"k": []}
    d["k"].append(x)
    d["k"].append(x * 2)
    d["k"].insert(0, x * 3)
    ll: List[List[int]] = [[1], [2]]
    ll[0].append(5)
    ll[1].insert(0, 4)
    n = 0
    for v in d["k"]:
        n += 1
    return d["k"][0] + d["k"][2] * 10 + n + ll[0][1] + ll[1][0] * 10


def _dict_tensors(x):
    d = {"a": x, "b": x * 2}
    s = x * 0
    for k, v in d.items():
        s = s + v
    for v in d.values():
        s = s + v
    for k in d.keys():
        s = s + d[k]
    g = d.get("c", x)
    d.setdefault("c", x * 3)
    d.setdefault("c", x * 100)  # present: unchanged
    q = d.pop("a")
    d.update({"e": x})
    k0 = list(d.keys())[0]
    return s + g + q + d[k0] + d["c"] * len(d)


def _dict_ints(x):
    d = {"a": 1, "b": 2}
    n = 0
    for k, v in d.items():
        n = n + v * len(k)
    z = d.pop("zz", 7)
    d["q"] = 5
    m = d.get("q", 0) + d.get("nope", 3)
    nested: Dict[str, Dict[str, int]] = {"o": {"i": 1}}
    nested["o"].update({"j": 2})
    d.clear()
    return x * (n + z + len(d) + m + len(nested["o"]))


def _optional_refined(x):
    h: Optional[Tensor] = None
    for i in range(3):
        if h is None:
            h = x
        else:
            h = h + x * i
    assert h is not None
    return h


def _none_before_loop(x, n: int):
    best = None
    i = 0
    while i < n:
        y = x * i
        if best is None or bool((y > best).all()):
            best = y
        i += 1
    if best is None:
        return x * 0
    return best


CASES = [(_list_ints, ()), (_list_clear, ()), (_list_tensors, ()), (_list_in_loops, ()),
         (_slice_assign, ()), (_through_subscripts, ()), (_dict_tensors, ()), (_dict_ints, ()),
         (_optional_refined, ()), (_none_before_loop, (4,)), (_none_before_loop, (0,))]


@pytest.mark.parametrize("fn,extra", CASES, ids=lambda c: getattr(c, "__name__", str(c)))
def test_matches_eager(fn, extra):
    x = jitorch.tensor([1.0, -2.0, 0.5])
    want = fn(x, *extra).numpy()
    got = jitorch.jit.script(fn)(x, *extra).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-6)


def _empty_pop(x):
    l: List[int] = []
    return x * l.pop()


def _missing_index(x):
    l = [1, 2]
    return x * l.index(3)


def _missing_remove(x):
    l = [1, 2]
    l.remove(3)
    return x


@pytest.mark.parametrize("fn,exc,msg", [
    (_empty_pop, IndexError, "pop from empty list"),
    (_missing_index, ValueError, "3 is not in list"),
    (_missing_remove, ValueError, "list.remove\\(x\\): x not in list")])
def test_python_errors(fn, exc, msg):
    with pytest.raises(exc, match=msg):
        fn(jitorch.ones(1))
    with pytest.raises(jitorch.jit.Error, match=msg):
        jitorch.jit.script(fn)(jitorch.ones(1))


def test_unsupported_forms_are_named():
    def sort_key(x):
        l = [3, 1]
        l.sort(key=lambda v: -v)
        return x

    def tensor_index(x):
        l = [x]
        return x * l.index(x)

    def step_slice(x):
        l = [1, 2, 3]
        l[::2] = [0, 0]
        return x
    for fn, msg in [(sort_key, "takes only reverse="), (tensor_index, "list of tensors"),
                    (step_slice, "slice assignment with a step")]:
        with pytest.raises(jitorch.jit.ScriptError, match=msg) as e:
            jitorch.jit.script(fn)
        assert "test_jit_compat_containers.py" in str(e.value)
