"""A loaded archive is data (docs/security.md): jit.load checks it against a closed schema
before anything runs, and the code generator writes only literals it made itself.

Direct tests for the three paths that used to run code from an edited archive (a string in an
int tuple pasted into generated source, `prim::ScalarOp` resolving any builtin, `prim::PythonOp`
resolving any jitorch callable / `prim::GetAttr` reaching dunders), the literal emitter against
adversarial values, the code generator against adversarial constants in real graphs, and the
archive fuzzer (tests/fuzz_archive.py): random edits of valid archives must load and run or
raise a clean exception, and never create the sentinel file their payloads would create.
`JITORCH_FUZZ_ITERATIONS=N` runs N edits instead of the CI slice.
"""
import io
import math
import os
import random
import re
import tokenize

import numpy as np
import pytest

import jitorch
import jitorch.nn as nn
from jitorch import _dtype as dt
from jitorch.script.ir import interpreter
from jitorch.script.runtime import loadable, serialize
from jitorch.script.codegen import NotLowered, literal
from jitorch.script.targets.cpu import program as cpu

import fuzz_archive as fz


class Small(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.Linear(4, 4)
        self.act = nn.ReLU()

    def forward(self, x):
        if x.shape[1] != 4:
            raise ValueError(f"expected 4 features, got {x.shape[1]}")
        y = self.act(self.l(x))
        return y.expand(2, 3, 4) + 1.0, y.reshape(2, 6)[:, 1:3] * 2

    @jitorch.jit.export
    def rows(self, x):
        return jitorch.tanh(self.l(x)).sum(1)


class Window(nn.Module):
    def forward(self, x, start: int):
        return x[:, start:start + 2] * 2


def _save(m) -> bytes:
    buf = io.BytesIO()
    jitorch.jit.save(m, buf)
    return buf.getvalue()


@pytest.fixture(scope="module")
def archives():
    """name -> (archive bytes, {method: args}, {method: expected outputs})."""
    jitorch.manual_seed(0)
    x = jitorch.randn(3, 4)
    small = Small().eval()
    traced = nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 2)).eval()
    out = {}
    with jitorch.no_grad():
        out["scripted"] = (_save(jitorch.jit.script(small)), {"forward": (x,), "rows": (x,)},
                           {"forward": small(x), "rows": small.rows(x)})
        out["indexed"] = (_save(jitorch.jit.script(Window())), {"forward": (x, 1)},
                          {"forward": Window()(x, 1)})
        out["traced"] = (_save(jitorch.jit.trace(traced, (x,))), {"forward": (x,)},
                         {"forward": traced(x)})
    return out


def _flat(r):
    return list(r) if isinstance(r, (tuple, list)) else [r]


def _ir(data: bytes, member: str = "code/forward.ir") -> str:
    return fz.read_members(data)[member].decode()


def _with_ir(data: bytes, fn, member: str = "code/forward.ir") -> bytes:
    return fz.edit_member(data, member, lambda b: fn(b.decode()).encode())


def _load(data: bytes):
    return jitorch.jit.load(io.BytesIO(data))


def test_unedited_archives_load_and_run(archives):
    for name, (data, args, want) in archives.items():
        m = _load(data)
        for meth, a in args.items():
            with jitorch.no_grad():
                got = getattr(m, meth)(*a)
            for g, w in zip(_flat(got), _flat(want[meth])):
                np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-5, atol=1e-6,
                                           err_msg=f"{name}.{meth}")


# --- path 1: a string inside an int-tuple constant ---------------------------------------------
def _escape(sentinel) -> str:
    """The payload of the reported exploit: closes the broadcast_to call, runs at import."""
    return f"2))\nopen({str(sentinel)!r}, 'w').close()\ndef _g(out):\n    out = ((2"


def test_string_in_int_tuple_is_refused_with_member_and_line(archives, tmp_path):
    data = archives["scripted"][0]
    text = _ir(data)
    line = next(i for i, s in enumerate(text.splitlines(), 1) if "value=(2, 3, 4)" in s)
    bad = _with_ir(data, lambda t: t.replace("value=(2, 3, 4)",
                                             f"value=({_escape(tmp_path / 's')!r}, 3, 4)"))
    with pytest.raises(RuntimeError, match=rf"code/forward.ir:{line}: prim::Constant: the value "
                                           r"\(tuple\) is not of the declared type"):
        _load(bad)


def test_string_in_int_tuple_never_reaches_generated_source(archives, tmp_path):
    # the declared type changed to match: the schema passes it, the code generator refuses
    # to write the str into the program and the interpreter raises eager's error
    sentinel = tmp_path / "s"
    data = archives["scripted"][0]
    bad = _with_ir(data, lambda t: re.sub(
        r"Tuple\[int, int, int\] = prim::Constant\[value=\(2, 3, 4\)\]",
        lambda m: f"Tuple[str, int, int] = prim::Constant[value=({_escape(sentinel)!r}, 3, 4)]",
        t))
    assert bad != data
    m = _load(bad)
    with jitorch.no_grad(), pytest.raises(TypeError):
        m(jitorch.randn(3, 4))
    assert not sentinel.exists()


# --- path 2: prim::ScalarOp function names ------------------------------------------------------
@pytest.mark.parametrize("name", ["eval", "exec", "open", "__import__", "getattr", "compile",
                                  "math.__loader__", "math.__spec__", "breakpoint", "input",
                                  "setattr", "vars", "math.pi", "operator.attrgetter"])
def test_scalar_fn_resolves_from_a_closed_table_only(name):
    with pytest.raises(NotImplementedError, match="unknown scalar op"):
        interpreter.scalar_fn(name)


def test_scalar_fn_table_has_what_the_frontend_emits():
    assert interpreter.scalar_fn("add") is interpreter.SCALAR_OPS["add"]
    assert interpreter.scalar_fn("math.sqrt") is math.sqrt
    for name in interpreter.SCALAR_FNS:
        assert not name.split(".")[-1].startswith("_"), name

    @jitorch.jit.script
    def f(x: float, n: int):
        return math.floor(math.sqrt(x)) + abs(n) + min(n, 3) + len([1, 2]) + round(x)
    assert f(10.0, -2) == math.floor(math.sqrt(10.0)) + 2 + -2 + 2 + 10


def test_format_fields_cannot_walk_objects():
    assert interpreter.safe_format("{} and {a}", 1, a=2) == "1 and 2"
    assert interpreter.safe_format("{0}{0:>3}", 7) == "7  7"
    for fmt in ("{0.__class__}", "{0[0]}", "{a.b}", "{:{0.__class__}}"):
        with pytest.raises(ValueError, match="format field"):
            interpreter.scalar_fn("format")(fmt, [1])


def test_scalar_op_eval_in_an_archive_is_refused(archives, tmp_path):
    sentinel = tmp_path / "s"
    data = archives["scripted"][0]
    code = f"__import__('builtins').open({str(sentinel)!r}, 'w').close()"

    def edit(t):
        lines = t.split("\n")
        at = next(i for i, s in enumerate(lines) if "prim::Constant[value=1.0]" in s)
        lines[at + 1:at + 1] = [f"  %evs: str = prim::Constant[value={code!r}]()",
                                "  %ev: int = prim::ScalarOp[fn='eval'](%evs)"]
        return "\n".join(lines)
    bad = _with_ir(data, edit)
    line = _ir(bad).splitlines().index("  %ev: int = prim::ScalarOp[fn='eval'](%evs)") + 1
    with pytest.raises(RuntimeError, match=rf"code/forward.ir:{line}: prim::ScalarOp: fn='eval' "
                                           "is not a scalar function"):
        _load(bad)
    assert not sentinel.exists()


# --- path 3: prim::PythonOp callables and prim::GetAttr names -----------------------------------
@pytest.mark.parametrize("target", [["jitorch.script.kernels.cache", "load_module"], ["jitorch", "save"],
                                    ["jitorch.serialization", "_raw_bytes"], ["os", "system"],
                                    ["jitorch.nn.modules.sparse", "os.system"],
                                    ["jitorch.script.ir.interpreter", "scalar_fn"]])
def test_python_calls_resolve_only_from_the_allow_list(archives, target):
    data = archives["indexed"][0]

    def evil(man):
        man["module"]["methods"]["forward"]["python_ops"][0] = {
            "kind": "kw", "fn": target, "npos": 2, "kwnames": [], "method": None}
    with pytest.raises(RuntimeError, match=r"python_ops\[0\]: .* is not a function a loaded "
                                           "module may call"):
        _load(fz.edit_manifest(data, evil))
    with pytest.raises(ValueError, match="not a function a loaded module may call"):
        loadable.lookup(*target)


def test_registered_functions_resolve():
    from jitorch.nn.modules import conv, sparse
    assert loadable.lookup("jitorch.nn.modules.sparse", "_bags") is sparse._bags
    assert loadable.lookup("jitorch.nn.modules.conv", "_output_padding") is \
        conv._output_padding


@pytest.mark.parametrize("method", ["numpy", "tofile", "__class__", "register_hook",
                                    "backward", "data_ptr", "__reduce__"])
def test_method_calls_resolve_only_from_the_allow_list(archives, method):
    data = archives["indexed"][0]

    def evil(man):
        man["module"]["methods"]["forward"]["python_ops"][0] = {
            "kind": "kw", "fn": None, "npos": 1, "kwnames": [], "method": method}
    with pytest.raises(RuntimeError, match="is not one a loaded module may call"):
        _load(fz.edit_manifest(data, evil))


def test_loaded_method_call_checks_the_receiver_at_run_time():
    call = serialize.MethodCall(0, [], "tolist")
    assert call(jitorch.ones(2)) == [1.0, 1.0]
    with pytest.raises(TypeError, match="cannot call ndarray.tolist"):
        call(np.ones(2))  # a graph that lies about its types does not reach NumPy
    fmt = serialize.MethodCall(1, [], "format")
    assert fmt("<{}>", 3) == "<3>"
    with pytest.raises(ValueError, match="format field"):
        fmt("{0.__class__.__init__.__globals__}", jitorch.ones(1))


@pytest.mark.parametrize("name", ["__class__", "__dict__", "_data", "numpy", "_base"])
def test_getattr_of_dunders_and_private_names_is_refused(archives, name):
    data = archives["scripted"][0]
    bad = _with_ir(data, lambda t: t.replace("prim::GetAttr[name='shape']",
                                             f"prim::GetAttr[name={name!r}]", 1))
    assert bad != data
    with pytest.raises(RuntimeError, match="prim::GetAttr: attribute .* is not a tensor "
                                           "attribute"):
        _load(bad)


def test_save_refuses_a_call_load_would_refuse(tmp_path):
    class UsesNumpy(nn.Module):
        def forward(self, x):
            return x.numpy()
    with pytest.raises(RuntimeError, match=r"\.numpy\(\) through Python"):
        jitorch.jit.save(jitorch.jit.script(UsesNumpy()), str(tmp_path / "m.pt"))


# --- the schema's other checks ------------------------------------------------------------------
@pytest.mark.parametrize("op", ["prim::CallFunction", "prim::Fused", "prim::Evil", "eval"])
def test_ops_outside_the_schema_are_refused(archives, op):
    data = archives["scripted"][0]
    bad = _with_ir(data, lambda t: t.replace("= relu(", f"= {op}(", 1))
    with pytest.raises(RuntimeError, match=r"code/forward.ir:\d+: .*not an op a loaded module"):
        _load(bad)


@pytest.mark.parametrize("edit, what", [
    (lambda mod: mod["methods"].__setitem__("__init__", mod["methods"].pop("rows")),
     "not a public method name"),
    (lambda mod: mod["methods"].__setitem__("train", mod["methods"].pop("rows")),
     "not a public method name"),
    (lambda mod: mod["methods"]["forward"].__setitem__("code", "manifest.json"), "code must"),
    (lambda mod: mod["methods"]["forward"].__setitem__("args", ["x y"]), "args"),
    (lambda mod: mod["methods"]["forward"].__setitem__("mutated_inputs", [9]), "mutated"),
    (lambda mod: mod["tree"].__setitem__("class", "a\nb"), "class name"),
    (lambda mod: mod.__setitem__("kind", "exec"), "kind"),
    (lambda mod: mod["methods"]["forward"].__setitem__("defaults", {"x": {"evil": 1}}),
     "defaults"),
])
def test_manifest_fields_are_type_checked(archives, edit, what):
    data = archives["scripted"][0]
    with pytest.raises(RuntimeError, match=f"manifest.json.*{what}"):
        _load(fz.edit_manifest(data, lambda man: edit(man["module"])))


def test_deep_nesting_is_a_clean_error(archives):
    data = archives["scripted"][0]
    deep = "(" * 5000 + "1" + ")" * 5000
    bad = _with_ir(data, lambda t: t.replace("value=(2, 3, 4)", f"value={deep}", 1))
    with pytest.raises(RuntimeError, match="nested more than"):
        _load(bad)


# --- the literal emitter ------------------------------------------------------------------------
def _nested(depth):
    v = 1
    for _ in range(depth):
        v = (v,)
    return v


class _EvilInt(int):
    def __repr__(self):
        return "__import__('os')"
    __str__ = __repr__

    def __format__(self, spec):
        return repr(self)


class _EvilFloat(float):
    def __repr__(self):
        return "__import__('os')"
    __str__ = __repr__


class _EvilStr(str):
    def __repr__(self):
        return "__import__('os')"


class _EvilObject:
    def __repr__(self):
        return "__import__('os')"


@pytest.mark.parametrize("v", [
    "3", "1)\nimport os\n#", (1, "2)\nimport os\n#"), ((1, (2, "x")),), [1, "x"],
    _EvilInt(3), _EvilFloat(1.0), _EvilStr("x"), _EvilObject(), 2 ** 64, -2 ** 63 - 1,
    10 ** 5000, b"1", 1j, {1: 2}, {1}, "__import__", np.array([1]), _nested(12),
    dt.dtype("float32\nimport os", np.float32, dt.FLOAT, True)], ids=lambda v: type(v).__name__)
def test_literal_emitter_refuses_adversarial_values(v):
    with pytest.raises(literal.LiteralError) as e:
        literal.value(v)
    assert isinstance(e.value, NotLowered) and isinstance(e.value, TypeError)
    assert "import" not in str(e.value)  # the message names the type, never the value


def test_literal_emitter_typed_entry_points():
    assert literal.integer(3) == "3" and literal.integer(np.int32(-4)) == "-4"
    assert literal.integer(2 ** 64 - 1) == str(2 ** 64 - 1)
    for bad in (True, 3.0, "3", _EvilInt(3)):
        with pytest.raises(literal.LiteralError):
            literal.integer(bad)
    ns = {"np": np}
    for f in (0.1, -0.0, 1e300, float("inf"), -float("inf")):
        assert eval(literal.floating(f), ns) == f
    assert math.isnan(eval(literal.floating(float("nan")), ns))
    assert literal.boolean(np.bool_(True)) == "True"
    assert literal.value((1, (2.5, None), [True])) == "(1, (2.5, None, ), [True], )"
    assert literal.value(literal.Ident("v1")) == "v1"
    assert literal.dtype(dt.float32) == "np.float32" and literal.dtype(np.int8) == "np.int8"
    assert literal.text("a\n'b\"") == repr("a\n'b\"")
    for bad in (_EvilStr("x"), 1, None):
        with pytest.raises(literal.LiteralError):
            literal.text(bad)
    assert literal.exception("ValueError") == "ValueError"
    for bad in ("__import__", "ValueError\nimport os", "os", "print"):
        with pytest.raises(literal.LiteralError):
            literal.exception(bad)
    arr = np.array([[1.0, float("nan")], [float("inf"), -2.0]], dtype=np.float32)
    back = eval(literal.array(arr), ns)
    np.testing.assert_array_equal(back, arr)
    assert back.dtype == np.float32


# --- the code generator against adversarial constants -------------------------------------------
def _programs():
    @jitorch.jit.script
    def shapes(x):
        y = x.reshape(3, 4).expand(2, 3, 4)
        z = y[:, 1:3, 0] * 2.0 + 1
        w = z.reshape(-1).narrow(0, 1, 2)
        return w.unsqueeze(0).transpose(0, 1), y.permute(2, 0, 1).sum(1), jitorch.full(
            (2, 2), 3.0) + jitorch.arange(2.0), jitorch.cat([x, x], 0).select(0, 1)

    @jitorch.jit.script
    def writes(x, n: int):
        y = x.clone()
        y[0, 1:3] = 2.0
        if n > 100:
            raise ValueError(f"n is too large: {n}")
        a, b = y.chunk(2, 1)
        return a * x.shape[0] + b, jitorch.clamp(y, -1.0, 1.0), \
            jitorch.nn.functional.gelu(y, approximate="tanh"), y.sum(0, keepdim=True)

    @jitorch.jit.script
    def images(x):
        w = jitorch.ones(2, 1, 3, 3)
        c = jitorch.nn.functional.conv2d(x, w, None, 1, 1)
        return jitorch.nn.functional.max_pool2d(c, 2), jitorch.nn.functional.avg_pool2d(c, 2), \
            jitorch.nn.functional.adaptive_avg_pool2d(c, (2, 2)) + jitorch.tensor([1.0, 2.0])

    x = jitorch.randn(3, 4)
    return [(shapes, (x,)), (writes, (x, 3)), (images, (jitorch.randn(1, 1, 6, 6),))]


def _only_in_string_literals(source: str, mark: str, where) -> None:
    """`mark` occurs in `source` only inside string literals (an exception message may carry a
    str constant, as data); anywhere else it was pasted as code."""
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if mark in tok.string:
            assert tok.type == tokenize.STRING, (where, tok)


def test_code_generator_never_writes_adversarial_constants(tmp_path):
    sentinel = str(tmp_path / "s")
    mark = "JITORCH_SENTINEL_MARK"
    pay = f"1)\nopen({sentinel!r}, 'w').close()\n#{mark}"

    class Int(int):
        def __repr__(self):
            return pay
        __str__ = __repr__

        def __format__(self, spec):
            return pay

    class Float(float):
        def __repr__(self):
            return pay
        __str__ = __repr__

        def __format__(self, spec):
            return pay

    class Str(str):
        def __repr__(self):
            return pay
        __str__ = __repr__

        def __format__(self, spec):
            return pay

    evil = [pay, (1, pay), (pay, 2, 3), ((None, pay, None),), [pay], Int(1), Int(2), Float(2.0),
            Str("tanh"), (Int(2), Int(3)), [Int(0)], ((Int(1), None, None),)]
    generated = refused = 0
    with jitorch.no_grad():
        for fn, args in _programs():
            g = fn.graph_for(*args)
            cpu.generate(g)  # the unedited graph is lowered at all
            consts = [n for n in g.nodes() if n.op == "prim::Constant"]
            assert consts
            for n in consts:
                orig = n.attrs["value"]
                for v in evil:
                    n.attrs["value"] = v
                    try:
                        prog = cpu.generate(g)
                    except Exception:  # NotLowered / LiteralError / a check that fails
                        refused += 1
                        continue
                    finally:
                        n.attrs["value"] = orig
                    generated += 1
                    for src in [*prog.kernels, prog.source]:  # kernels: targets/cpu/kernel.py
                        _only_in_string_literals(src, mark, (fn.__name__, v))
                    for src in prog.kernels:  # (the entry's import of its kernels needs them)
                        exec(compile(src, "<generated>", "exec"), {"__name__": "probe"})
                    assert not os.path.exists(sentinel)
    assert refused and generated  # both outcomes happen: the test reaches the emitter


# --- the archive fuzzer -------------------------------------------------------------------------
def _iterations() -> int:
    return int(os.environ.get("JITORCH_FUZZ_ITERATIONS", "300"))


def test_archive_fuzz(archives, tmp_path, monkeypatch):
    """Random edits of the valid archives: each loads and runs, or raises a clean exception
    (load: RuntimeError), never runs a payload (the sentinel file), writes nothing, and no
    payload reaches a generated program other than inside a string literal (every payload
    names the sentinel: this sees a paste even where it would not parse)."""
    from jitorch._ops.registry import OPS
    from jitorch.script.kernels import cache
    sentinel = str(tmp_path / "sentinel")
    real_load = cache.load_module

    pasted = []  # the runtime treats a failing load as "interpret instead": record, then raise

    def checked_load(source, *a, **k):
        try:
            _only_in_string_literals(source, sentinel, "a generated program")
        except (AssertionError, tokenize.TokenError, SyntaxError) as e:
            pasted.append(e)
            raise
        return real_load(source, *a, **k)
    monkeypatch.setattr(cache, "load_module", checked_load)
    rng = random.Random(20260913)
    mut = fz.Mutator(rng, sentinel, sorted(OPS)[::7])
    names = sorted(archives)
    outcomes = {"refused": 0, "ran": 0, "raised": 0}
    for it in range(_iterations()):
        name = names[it % len(names)]
        data, args, _ = archives[name]
        edited, what = mut.mutate(data)
        try:
            m = _load(edited)
        except RuntimeError as e:
            assert "jitorch.jit.load" in str(e), (what, e)
            outcomes["refused"] += 1
        except Exception as e:  # anything else escaping load is a bug
            raise AssertionError(f"{name}: {what}: jit.load raised {type(e).__name__}: {e}")
        else:
            for meth in m._methods:
                try:
                    with jitorch.no_grad():
                        getattr(m, meth)(*args.get(meth, args["forward"]))
                    outcomes["ran"] += 1
                except Exception:  # a clean Python exception: eager's, or the program's
                    outcomes["raised"] += 1
        assert not pasted, f"{name}: {what}: a payload reached generated source: {pasted}"
        assert not os.path.exists(sentinel), f"{name}: {what}: a payload ran"
        assert os.listdir(tmp_path) == [], f"{name}: {what}: a file was written"
    assert outcomes["refused"] and outcomes["ran"], outcomes
