"""jitorch.nn Module, Parameter, containers, Linear/Bilinear/Identity/Flatten/Unflatten.

Every expected string below was produced by PyTorch 2.13 running the same code (with `torch`
spelled `jitorch` in type names)."""
import copy
import re
from collections import OrderedDict

import numpy as np
import pytest

import jitorch
import jitorch.nn as nn


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 2)
        self.register_buffer("running", jitorch.zeros(2))
        self.register_buffer("tmp", jitorch.ones(1), persistent=False)
        self.w = nn.Parameter(jitorch.ones(2, 2))
        self.seq = nn.Sequential(nn.Linear(2, 2), nn.Identity())

    def forward(self, x):
        return self.seq(self.fc(x))


def raises(exc, msg):
    return pytest.raises(exc, match="^" + re.escape(msg) + "$")


M_REPR = """M(
  (fc): Linear(in_features=3, out_features=2, bias=True)
  (seq): Sequential(
    (0): Linear(in_features=2, out_features=2, bias=True)
    (1): Identity()
  )
)"""


def test_registration_and_iteration():
    m = M()
    assert repr(m) == M_REPR
    assert [n for n, _ in m.named_parameters()] == ["w", "fc.weight", "fc.bias", "seq.0.weight",
                                                    "seq.0.bias"]
    assert [n for n, _ in m.named_buffers()] == ["running", "tmp"]
    assert [n for n, _ in m.named_children()] == ["fc", "seq"]
    assert [n for n, _ in m.named_modules()] == ["", "fc", "seq", "seq.0", "seq.1"]
    assert [n for n, _ in m.named_parameters(prefix="pre", recurse=False)] == ["pre.w"]
    assert len(list(m.parameters())) == 5 and len(list(m.buffers(recurse=False))) == 2
    assert len(list(m.modules())) == 5 and len(list(m.children())) == 2
    assert isinstance(m.w, nn.Parameter) and m.w.requires_grad and m.w.is_leaf
    assert m.get_submodule("seq.0") is m.seq[0]
    assert m.get_parameter("seq.0.weight") is m.seq[0].weight
    assert m.get_buffer("running") is m.running
    assert [k for k in dir(m) if k in ("fc", "w", "running", "seq", "tmp", "forward")] == [
        "fc", "forward", "running", "seq", "tmp", "w"]


def test_shared_modules_are_deduplicated():
    lin = nn.Linear(2, 2)
    s = nn.Sequential(lin, lin)
    assert len(list(s.parameters())) == 2
    assert len(list(s.named_parameters(remove_duplicate=False))) == 4
    assert [n for n, _ in s.named_modules()] == ["", "0"]
    assert [n for n, _ in s.named_modules(remove_duplicate=False)] == ["", "0", "1"]
    assert list(s.state_dict().keys()) == ["0.weight", "0.bias", "1.weight", "1.bias"]
    assert len(list(s.children())) == 1


def test_registration_errors():
    m = M()
    with raises(KeyError, "'buffer name can\\'t contain \".\"'"):
        m.register_buffer("a.b", jitorch.ones(1))
    with raises(KeyError, "'buffer name can\\'t be empty string \"\"'"):
        m.register_buffer("", jitorch.ones(1))
    with raises(KeyError, "\"attribute 'fc' already exists\""):
        m.register_buffer("fc", jitorch.ones(1))
    with raises(TypeError, "cannot assign 'list' object to buffer 'x' (torch Tensor or None "
                           "required)"):
        m.register_buffer("x", [1])
    with raises(TypeError, "buffer name should be a string. Got int"):
        m.register_buffer(3, jitorch.ones(1))
    with raises(TypeError, "cannot assign 'jitorch.FloatTensor' object to parameter 'q' "
                           "(torch.nn.Parameter or None required)"):
        m.register_parameter("q", jitorch.ones(1))
    with raises(KeyError, "\"attribute 'fc' already exists\""):
        m.register_parameter("fc", None)
    with raises(TypeError, "int is not a Module subclass"):
        m.add_module("z", 3)
    with raises(KeyError, "'module name can\\'t contain \".\", got: a.b'"):
        m.add_module("a.b", nn.Identity())
    with raises(KeyError, "\"attribute 'w' already exists\""):
        m.add_module("w", nn.Identity())
    with raises(KeyError, "'module name can\\'t be empty string \"\"'"):
        m.add_module("", nn.Identity())
    with raises(TypeError, "cannot assign 'jitorch.FloatTensor' as parameter 'w' "
                           "(torch.nn.Parameter or None expected)"):
        m.w = jitorch.ones(2)
    with raises(TypeError, "cannot assign 'int' as child module 'fc' (torch.nn.Module or None "
                           "expected)"):
        m.fc = 3
    with raises(TypeError, "cannot assign 'int' as buffer 'running' (torch.nn.Buffer, "
                           "torch.Tensor or None expected)"):
        m.running = 3
    with raises(AttributeError, "'M' object has no attribute 'nope'"):
        m.nope
    with raises(AttributeError, "Sequential has no attribute `5`"):
        m.get_submodule("seq.5")
    with raises(AttributeError, "`running` is not an nn.Module"):
        m.get_submodule("running")
    with raises(AttributeError, "`running` is not an nn.Parameter"):
        m.get_parameter("running")
    with raises(AttributeError, "Linear has no attribute `foo`"):
        m.get_parameter("seq.0.foo")
    with raises(AttributeError, "`w` is not a buffer"):
        m.get_buffer("w")
    nonleaf = nn.Parameter(jitorch.ones(1)) * 2
    with raises(TypeError, "cannot assign 'jitorch.FloatTensor' object to parameter 'q2' "
                           "(torch.nn.Parameter or None required)"):
        m.register_parameter("q2", nonleaf)


def test_init_and_forward_errors():
    class NoInit(nn.Module):
        def __init__(self):
            self.p = nn.Parameter(jitorch.ones(1))

    class NoInit2(nn.Module):
        def __init__(self):
            self.p = nn.Linear(1, 1)

    with raises(AttributeError, "cannot assign parameters before Module.__init__() call"):
        NoInit()
    with raises(AttributeError, "cannot assign module before Module.__init__() call"):
        NoInit2()
    msg = 'Module [Module] is missing the required "forward" function'
    with raises(NotImplementedError, msg):
        nn.Module()(1)
    with raises(NotImplementedError, 'Module [ModuleList] is missing the required "forward" '
                                     'function'):
        nn.ModuleList()(1)
    with raises(TypeError, "Module.__init__() takes 1 positional argument but 2 were given"):
        nn.Module(1)
    with raises(TypeError, "Module.__init__() got an unexpected keyword argument 'a'"):
        nn.Module(a=1)


def test_setattr_delattr_rebinding():
    m = M()
    m.running = jitorch.ones(2)
    assert m.running.tolist() == [1.0, 1.0] and "running" in m._buffers
    del m.tmp
    assert [n for n, _ in m.named_buffers()] == ["running"]
    assert "tmp" not in m._non_persistent_buffers_set
    m.w = None
    assert m.w is None
    assert list(m.state_dict().keys()) == ["running", "fc.weight", "fc.bias", "seq.0.weight",
                                           "seq.0.bias"]
    m.fc = None
    assert [n for n, _ in m.named_children()] == ["seq"]
    m.fc = nn.Identity()  # a module may replace a None slot
    m.plain = 3
    assert m.plain == 3 and "plain" in m.__dict__
    m.plain = nn.Parameter(jitorch.ones(1))  # a Parameter replaces a plain attribute
    assert "plain" not in m.__dict__ and "plain" in m._parameters
    del m.plain
    assert not hasattr(m, "plain")


def test_buffer_and_parameter_types():
    class WithBuf(nn.Module):
        def __init__(self):
            super().__init__()
            self.b1 = nn.Buffer(jitorch.ones(1))
            self.b2 = nn.Buffer(jitorch.ones(1), persistent=False)

    wb = WithBuf()
    assert list(wb.state_dict().keys()) == ["b1"]
    assert [n for n, _ in wb.named_buffers()] == ["b1", "b2"]
    b = nn.Buffer(jitorch.ones(2))
    assert isinstance(b, nn.Buffer) and type(b) is jitorch.Tensor
    assert not isinstance(jitorch.ones(1), nn.Buffer)
    p = nn.Parameter(jitorch.ones(2))
    assert repr(p) == "Parameter containing:\ntensor([1., 1.], requires_grad=True)"
    assert repr(nn.Parameter(jitorch.ones(2), requires_grad=False)) == (
        "Parameter containing:\ntensor([1., 1.])")
    assert repr(nn.Parameter()) == "Parameter containing:\ntensor([], requires_grad=True)"
    assert type(p * 2) is jitorch.Tensor and type(p.detach()) is jitorch.Tensor
    assert type(p.data) is jitorch.Tensor
    with raises(RuntimeError, "Only Tensors of floating point and complex dtype can require "
                              "gradients"):
        nn.Parameter(jitorch.ones(2, dtype=jitorch.int64))
    # a Parameter shares its source's storage; .data assignment keeps the Parameter
    src = jitorch.zeros(2)
    p = nn.Parameter(src)
    src.add_(1)
    assert p.tolist() == [1.0, 1.0]
    p.data = jitorch.zeros(3)
    assert isinstance(p, nn.Parameter) and p.shape == (3,) and p.requires_grad
    (p * 3).sum().backward()
    assert p.grad.tolist() == [3.0, 3.0, 3.0]
    q = copy.deepcopy(p)
    assert type(q) is nn.Parameter and q is not p and q.requires_grad
    assert q.grad.tolist() == [3.0, 3.0, 3.0]


def test_state_dict_and_load():
    m = M()
    sd = m.state_dict()
    assert list(sd.keys()) == ["w", "running", "fc.weight", "fc.bias", "seq.0.weight",
                               "seq.0.bias"]
    assert list(sd._metadata.items()) == [("", {"version": 1}), ("fc", {"version": 1}),
                                          ("seq", {"version": 1}), ("seq.0", {"version": 1}),
                                          ("seq.1", {"version": 1})]
    assert not sd["fc.weight"].requires_grad
    assert m.state_dict(keep_vars=True)["fc.weight"] is m.fc.weight
    assert repr(m.load_state_dict(sd)) == "<All keys matched successfully>"
    with pytest.warns(FutureWarning, match="^Positional args are being deprecated"):
        sd_pos = m.state_dict(OrderedDict(), "pre.")
    assert list(sd_pos.keys())[:2] == ["pre.w", "pre.running"]

    m2 = M()
    with jitorch.no_grad():
        m2.fc.weight.fill_(7.0)
    w = m2.fc.weight
    m2.load_state_dict(m.state_dict())
    assert m2.fc.weight is w and np.array_equal(w.numpy(force=True),
                                                 m.fc.weight.numpy(force=True))

    sd2 = OrderedDict(sd)
    del sd2["w"]
    sd2["extra"] = jitorch.ones(1)
    sd2["fc.extra"] = jitorch.ones(1)
    with raises(RuntimeError, 'Error(s) in loading state_dict for M:\n\tMissing key(s) in '
                              'state_dict: "w". \n\tUnexpected key(s) in state_dict: "extra", '
                              '"fc.extra". '):
        m.load_state_dict(sd2)
    r = m.load_state_dict(sd2, strict=False)
    assert repr(r) == ("_IncompatibleKeys(missing_keys=['w'], unexpected_keys=['extra', "
                       "'fc.extra'])")
    sd3 = OrderedDict(sd)
    sd3["fc.weight"] = jitorch.ones(4, 3)
    with raises(RuntimeError, "Error(s) in loading state_dict for M:\n\tsize mismatch for "
                              "fc.weight: copying a param with shape jitorch.Size([4, 3]) from "
                              "checkpoint, the shape in current model is jitorch.Size([2, 3])."):
        m.load_state_dict(sd3)
    sd4 = OrderedDict(sd)
    sd4["w"] = 3
    with raises(RuntimeError, 'Error(s) in loading state_dict for M:\n\tWhile copying the '
                              'parameter named "w", expected torch.Tensor or Tensor-like object '
                              "from checkpoint but received <class 'int'>"):
        m.load_state_dict(sd4)
    with raises(TypeError, "Expected state_dict to be dict-like, got <class 'list'>."):
        m.load_state_dict([1])
    r = nn.Linear(1, 1).load_state_dict({"weight": jitorch.ones(1, 1)}, strict=False)
    assert repr(r) == "_IncompatibleKeys(missing_keys=['bias'], unexpected_keys=[])"
    assert r.missing_keys == ["bias"]
    # assign=True takes the checkpoint's tensors as the new parameters
    lin = nn.Linear(2, 1)
    new_w = jitorch.full((1, 2), 5.0)
    lin.load_state_dict({"weight": new_w, "bias": jitorch.zeros(1)}, assign=True)
    assert isinstance(lin.weight, nn.Parameter) and lin.weight.requires_grad
    assert lin.weight.tolist() == [[5.0, 5.0]]


def test_train_eval_zero_grad_requires_grad():
    m = M()
    assert m.training and not m.eval().training and not m.seq[0].training
    assert m.train().seq[0].training
    with raises(ValueError, "training mode is expected to be boolean"):
        m.train(1)
    m(jitorch.ones(4, 3)).sum().backward()
    assert m.fc.weight.grad is not None and m.w.grad is None
    m.zero_grad(set_to_none=False)
    assert m.fc.weight.grad.abs().sum().item() == 0.0
    m.zero_grad()
    assert m.fc.weight.grad is None
    m.requires_grad_(False)
    assert all(not p.requires_grad for p in m.parameters())


def test_forward_hooks():
    m = M()
    x = jitorch.ones(4, 3)
    calls = []
    h1 = m.register_forward_pre_hook(lambda mod, args: calls.append(("pre", len(args))))
    h2 = m.register_forward_hook(lambda mod, args, out: out * 0)
    assert m(x).sum().item() == 0.0 and calls == [("pre", 1)]
    h2.remove()
    h1.remove()
    assert not m._forward_hooks and not m._forward_pre_hooks
    h4 = m.register_forward_hook(lambda mod, args, kwargs, out: (len(kwargs), out.shape),
                                 with_kwargs=True)
    assert m(x=x) == (1, (4, 2))
    h4.remove()
    assert not m._forward_hooks_with_kwargs
    h5 = m.register_forward_pre_hook(lambda mod, args, kwargs: 5, with_kwargs=True)
    with raises(RuntimeError, "forward pre-hook must return None or a tuple of (new_args, "
                              "new_kwargs), but got 5."):
        m(x)
    h5.remove()
    seen = []
    with m.register_forward_pre_hook(lambda mod, args: args[0][:1]):
        with m.register_forward_hook(lambda mod, args, out: seen.append(args[0].shape)):
            assert m(x).shape == (1, 2)
    assert seen == [(1, 3)] and not m._forward_hooks and not m._forward_pre_hooks
    h6 = m.register_forward_pre_hook(lambda mod, args, kwargs: ((args[0] * 0,), kwargs),
                                     with_kwargs=True)
    out = m(x)
    h6.remove()
    assert np.allclose(out.numpy(force=True), m(jitorch.zeros(4, 3)).numpy(force=True))
    order = []
    m.register_forward_hook(lambda *a: order.append(1))
    m.register_forward_hook(lambda *a: order.append(2), prepend=True)
    m(x)
    assert order == [2, 1]

    class Bad(nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    b = Bad()
    always = []
    b.register_forward_hook(lambda mod, args, out: always.append(out), always_call=True)
    with raises(ValueError, "boom"):
        b(1)
    assert always == [None]


def test_dtype_conversion_and_apply():
    m = M().double()
    assert m.fc.weight.dtype is jitorch.float64 and m.running.dtype is jitorch.float64
    assert type(m.fc.weight) is nn.Parameter
    w = m.fc.weight
    m.to(jitorch.float32)
    assert m.fc.weight is w and w.dtype is jitorch.float32
    with raises(TypeError, "nn.Module.to only accepts floating point or complex dtypes, but got "
                           "desired dtype=jitorch.int64"):
        m.to(jitorch.int64)
    m.to(dtype=jitorch.float64)
    assert w.dtype is jitorch.float64
    m.float().to("cpu").cpu()
    assert w.dtype is jitorch.float32
    m.half()
    assert w.dtype is jitorch.float16 and w.requires_grad
    m.type(jitorch.float64)
    assert w.dtype is jitorch.float64
    m.to(jitorch.ones(1))  # like a tensor
    assert w.dtype is jitorch.float32
    b = M()
    b.register_buffer("ib", jitorch.ones(2, dtype=jitorch.int64))
    b.double()
    assert b.ib.dtype is jitorch.int64
    c = M()
    c.fc.weight.grad = jitorch.ones(2, 3)
    c.double()
    assert c.fc.weight.grad.dtype is jitorch.float64
    names = []
    M().apply(lambda mod: names.append(type(mod).__name__))
    assert names == ["Linear", "Linear", "Identity", "Sequential", "M"]
    mc = copy.deepcopy(m)
    assert type(mc.fc.weight) is nn.Parameter and mc.fc.weight is not m.fc.weight
    assert jitorch.equal(mc.fc.weight, m.fc.weight)


def test_printed_forms():
    class E(nn.Module):
        def __init__(self):
            super().__init__()
            self.l = nn.Linear(1, 1)

        def extra_repr(self):
            return "a=1\nb=2"

    class E1(nn.Module):
        def extra_repr(self):
            return "only"

    assert repr(E()) == ("E(\n  a=1\n  b=2\n  (l): Linear(in_features=1, out_features=1, "
                         "bias=True)\n)")
    assert repr(nn.Sequential(E1(), E())) == """Sequential(
  (0): E1(only)
  (1): E(
    a=1
    b=2
    (l): Linear(in_features=1, out_features=1, bias=True)
  )
)"""
    assert repr(nn.Sequential()) == "Sequential()"
    ml = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)]
                       + [nn.Identity(), nn.Identity(), nn.Linear(2, 3)])
    assert repr(ml) == """ModuleList(
  (0-2): 3 x Linear(in_features=2, out_features=2, bias=True)
  (3-4): 2 x Identity()
  (5): Linear(in_features=2, out_features=3, bias=True)
)"""
    assert repr(nn.ModuleList()) == "ModuleList()"
    assert repr(nn.Linear(3, 4, bias=False)) == "Linear(in_features=3, out_features=4, bias=False)"
    assert repr(nn.Bilinear(2, 3, 4)) == ("Bilinear(in1_features=2, in2_features=3, "
                                          "out_features=4, bias=True)")
    assert repr(nn.Flatten(0, 2)) == "Flatten(start_dim=0, end_dim=2)"
    assert repr(nn.Unflatten(1, (2, 5))) == "Unflatten(dim=1, unflattened_size=(2, 5))"


def test_sequential():
    s = nn.Sequential(nn.Linear(1, 2), nn.Identity(), nn.Flatten())
    assert isinstance(s[0], nn.Linear) and isinstance(s[-1], nn.Flatten) and len(s) == 3
    assert repr(s[1:]) == "Sequential(\n  (1): Identity()\n  (2): Flatten(start_dim=1, " \
                          "end_dim=-1)\n)"
    with raises(IndexError, "index 5 is out of range"):
        s[5]
    s.append(nn.Identity())
    s.insert(0, nn.Flatten(0))
    assert [type(x).__name__ for x in s] == ["Flatten", "Linear", "Identity", "Flatten",
                                             "Identity"]
    s.extend([nn.Identity()])
    assert len(s) == 6
    del s[1]
    assert list(s._modules) == ["0", "1", "2", "3", "4"]
    del s[0:2]
    assert [type(x).__name__ for x in s] == ["Flatten", "Identity", "Identity"]
    s[0] = nn.Linear(3, 3)
    assert isinstance(s[0], nn.Linear)
    assert len(s + nn.Sequential(nn.Identity())) == 4 and len(s * 2) == 6
    assert (s * 2)[3] is s[0]
    with raises(AssertionError, "module should be of type: <class "
                                "'jitorch.nn.modules.module.Module'>"):
        s.insert(0, 3)
    with raises(IndexError, "Index out of range: 10"):
        s.insert(10, nn.Identity())
    assert isinstance(s.pop(0), nn.Linear) and len(s) == 2
    od = nn.Sequential(OrderedDict([("a", nn.Identity()), ("b", nn.Flatten())]))
    assert repr(od) == ("Sequential(\n  (a): Identity()\n  (b): Flatten(start_dim=1, "
                        "end_dim=-1)\n)")
    assert isinstance(od.a, nn.Identity)
    net = nn.Sequential(nn.Flatten(), nn.Linear(6, 4), nn.Linear(4, 2))
    assert net(jitorch.ones(5, 2, 3)).shape == (5, 2)


def test_module_list_and_dict():
    ml = nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 2), nn.Identity()])
    assert len(ml[1:3]) == 2 and isinstance(ml[-1], nn.Identity)
    with raises(IndexError, "index 10 is out of range"):
        ml[10]
    ml.append(nn.Identity())
    ml.insert(1, nn.Flatten())
    ml.extend([nn.Identity()])
    assert len(ml) == 6
    del ml[0]
    assert list(ml._modules) == ["0", "1", "2", "3", "4"]
    with raises(TypeError, "ModuleList.extend should be called with an iterable, but got int"):
        ml.extend(5)
    assert isinstance(ml.pop(0), nn.Flatten) and len(ml) == 4
    assert len(ml + nn.ModuleList([nn.Identity()])) == 5
    assert len(list(ml.parameters())) == 2  # the remaining Linear's weight and bias
    ml[0] = nn.Identity()
    assert isinstance(ml[0], nn.Identity) and len(list(ml.parameters())) == 0

    md = nn.ModuleDict({"b": nn.Identity(), "a": nn.Linear(1, 1)})
    assert repr(md) == ("ModuleDict(\n  (b): Identity()\n  (a): Linear(in_features=1, "
                        "out_features=1, bias=True)\n)")
    assert list(md.keys()) == ["b", "a"] and "a" in md and len(md) == 2
    md.update([("c", nn.Flatten())])
    assert list(md) == ["b", "a", "c"]
    with raises(TypeError, "ModuleDict.update should be called with an iterable of key/value "
                           "pairs, but got int"):
        md.update(5)
    with raises(TypeError, "ModuleDict update sequence element #0 should be Iterable; isint"):
        md.update([1])
    with raises(ValueError, "ModuleDict update sequence element #0 has length 3; 2 is required"):
        md.update([(1, 2, 3)])
    assert isinstance(md.pop("a"), nn.Linear) and list(md.keys()) == ["b", "c"]
    assert [type(v).__name__ for v in md.values()] == ["Identity", "Flatten"]
    md.clear()
    assert len(md) == 0


def test_parameter_list_and_dict():
    pl = nn.ParameterList([nn.Parameter(jitorch.ones(2, 3)), jitorch.zeros(4)])
    assert repr(pl) == """ParameterList(
    (0): Parameter containing: [jitorch.float32 of size 2x3]
    (1): Parameter containing: [jitorch.float32 of size 4]
)"""
    assert type(pl[1]) is nn.Parameter and len(pl) == 2
    assert [n for n, _ in pl.named_parameters()] == ["0", "1"]
    pl.append(jitorch.ones(1, dtype=jitorch.float64))
    assert repr(pl[1:]) == """ParameterList(
    (0): Parameter containing: [jitorch.float32 of size 4]
    (1): Parameter containing: [jitorch.float64 of size 1]
)"""
    with raises(RuntimeError, "ParameterList should not be called."):
        pl(1)
    with raises(TypeError, "ParameterList.extend should be called with an iterable, but got "
                           "Tensor"):
        pl.extend(jitorch.ones(2))
    pd = nn.ParameterDict({"b": jitorch.ones(2), "a": nn.Parameter(jitorch.zeros(3, 1))})
    assert repr(pd) == """ParameterDict(
    (a): Parameter containing: [jitorch.FloatTensor of size 3x1]
    (b): Parameter containing: [jitorch.FloatTensor of size 2]
)"""
    assert list(pd.keys()) == ["a", "b"] and type(pd["b"]) is nn.Parameter
    assert "a" in pd and len(pd) == 2
    with raises(TypeError, "Index given to ParameterDict cannot be used as a key as it is not a "
                           "string (type is 'int'). Open an issue on github if you need "
                           "non-string keys."):
        pd[1]
    assert pd.pop("a").shape == (3, 1) and list(pd.keys()) == ["b"]
    pd2 = nn.ParameterDict(OrderedDict([("z", jitorch.ones(1)), ("y", jitorch.ones(1))]))
    assert list(pd2.keys()) == ["z", "y"]
    assert list((pd | pd2).keys()) == ["b", "z", "y"]
    assert pd.get("nope", 3) == 3 and list(pd.state_dict().keys()) == ["b"]
    with raises(RuntimeError, "ParameterDict should not be called."):
        pd(1)


def test_linear_bilinear_flatten():
    lin = nn.Linear(3, 4)
    assert lin.weight.shape == (4, 3) and lin.bias.shape == (4,)
    assert nn.Linear(3, 4, dtype=jitorch.float64).weight.dtype is jitorch.float64
    x = jitorch.randn(5, 3)
    ref = x.numpy() @ lin.weight.numpy(force=True).T + lin.bias.numpy(force=True)
    assert np.allclose(lin(x).numpy(force=True), ref, atol=1e-6)
    assert lin(jitorch.randn(2, 5, 3)).shape == (2, 5, 4)
    lin(x).sum().backward()
    assert np.allclose(lin.weight.grad.numpy(), np.broadcast_to(x.numpy().sum(0), (4, 3)),
                       atol=1e-5)
    assert np.allclose(lin.bias.grad.numpy(), 5.0)
    assert nn.Linear(3, 4, bias=False).bias is None

    bil = nn.Bilinear(2, 3, 4)
    x1, x2 = jitorch.randn(5, 2), jitorch.randn(5, 3)
    ref = np.einsum("bi,oij,bj->bo", x1.numpy(), bil.weight.numpy(force=True), x2.numpy())
    ref = ref + bil.bias.numpy(force=True)
    assert np.allclose(bil(x1, x2).numpy(force=True), ref, atol=1e-5)
    assert bil.weight.abs().max().item() <= 1 / np.sqrt(2)
    bil(x1, x2).sum().backward()
    assert bil.weight.grad.shape == (4, 2, 3)

    assert nn.Unflatten(1, (2, 5))(jitorch.ones(3, 10)).shape == (3, 2, 5)
    assert nn.Flatten()(jitorch.ones(2, 3, 4)).shape == (2, 12)
    assert nn.Flatten(0, 1)(jitorch.ones(2, 3, 4)).shape == (6, 4)
    with raises(TypeError, "unflattened_size must be a tuple of ints, but found type int"):
        nn.Unflatten(1, 5)
    with raises(TypeError, "unflattened_size must be tuple of ints, but found element of type "
                           "float at pos 1"):
        nn.Unflatten(1, (2, 2.0))
    x = jitorch.ones(1)
    assert nn.Identity(3, a=4)(x) is x


def test_linear_default_init_bounds():
    # PyTorch: kaiming_uniform_(a=sqrt(5)) -> U(-1/sqrt(fan_in), 1/sqrt(fan_in)); same for bias
    jitorch.manual_seed(0)
    lin = nn.Linear(100, 400)
    w = lin.weight.numpy(force=True)
    b = lin.bias.numpy(force=True)
    assert np.abs(w).max() <= 0.1 and np.abs(w).max() > 0.099
    assert np.abs(b).max() <= 0.1 and np.abs(b).max() > 0.09
    assert abs(w.std() - 0.1 / np.sqrt(3)) < 0.002  # uniform's std
    assert abs(w.mean()) < 0.002


def test_buffer_assignment_rules():
    m = nn.Module()
    m.x = 3
    with raises(KeyError, "\"attribute 'x' already exists\""):
        m.x = nn.Buffer(jitorch.ones(1))
    m.p = nn.Parameter(jitorch.ones(1))
    with raises(TypeError, "cannot assign 'jitorch.FloatTensor' as parameter 'p' "
                           "(torch.nn.Parameter or None expected)"):
        m.p = nn.Buffer(jitorch.ones(1))
    m.b = nn.Buffer(jitorch.ones(1), persistent=False)
    m.b = jitorch.zeros(1)  # a plain tensor keeps the slot's persistence
    assert m._non_persistent_buffers_set == {"b"}
    m.b = nn.Buffer(jitorch.ones(1))
    assert m._non_persistent_buffers_set == set()
    m.b = None
    assert m._buffers == {"b": None} and list(m.state_dict()) == ["p"]


def test_extra_state_and_state_dict_hooks():
    class X(nn.Module):
        def __init__(self):
            super().__init__()
            self.l = nn.Linear(1, 1)
            self.state = 5

        def get_extra_state(self):
            return {"s": self.state}

        def set_extra_state(self, st):
            self.state = st["s"]

    class P(nn.Module):
        def __init__(self):
            super().__init__()
            self.x = X()

    p = P()
    sd = p.state_dict()
    assert list(sd.keys()) == ["x._extra_state", "x.l.weight", "x.l.bias"]
    assert sd["x._extra_state"] == {"s": 5}
    sd["x._extra_state"] = {"s": 9}
    p.load_state_dict(sd)
    assert p.x.state == 9
    del sd["x._extra_state"]
    with raises(RuntimeError, 'Error(s) in loading state_dict for P:\n\tMissing key(s) in '
                              'state_dict: "x._extra_state". '):
        p.load_state_dict(sd)
    lin = nn.Linear(1, 1)
    sd = lin.state_dict()
    sd["_extra_state"] = 1
    with raises(RuntimeError, 'Error(s) in loading state_dict for Linear:\n\tUnexpected key(s) '
                              'in state_dict: "_extra_state". '):
        lin.load_state_dict(sd)

    log = []
    lin.register_state_dict_pre_hook(lambda m, prefix, keep_vars: log.append((prefix, keep_vars)))
    lin.register_state_dict_post_hook(
        lambda m, sd, prefix, meta: sd.__setitem__(prefix + "added", jitorch.ones(1)))
    assert list(lin.state_dict(prefix="a.").keys()) == ["a.weight", "a.bias", "a.added"]
    assert log == [("a.", False)]
    l2 = nn.Linear(1, 1)
    l2.register_state_dict_post_hook(lambda m, sd, prefix, meta: 1)
    with raises(RuntimeError, "state_dict post-hook must return None"):
        l2.state_dict()
    l3 = nn.Linear(1, 1)
    l3._register_state_dict_hook(lambda m, sd, prefix, meta: {"only": 1})
    assert l3.state_dict() == {"only": 1}

    l4 = nn.Linear(1, 1)

    def pre(module, sd, prefix, meta, strict, missing, unexpected, errors):
        log.append(("loadpre", type(module).__name__, prefix, sorted(sd)))
        sd[prefix + "bias"] = jitorch.zeros(1)

    l4.register_load_state_dict_pre_hook(pre)
    l4.register_load_state_dict_post_hook(lambda module, keys: log.append(keys.missing_keys))
    assert repr(l4.load_state_dict({"weight": jitorch.ones(1, 1)})) == (
        "<All keys matched successfully>")
    assert l4.bias.tolist() == [0.0]
    assert log[-2:] == [("loadpre", "Linear", "", ["weight"]), []]
    l5 = nn.Linear(1, 1)
    l5.register_load_state_dict_post_hook(lambda m, k: 1)
    with raises(AssertionError, "Hooks registered with ``register_load_state_dict_post_hook`` "
                                "are not expected to return new values, if incompatible_keys "
                                "need to be modified, it should be done inplace."):
        l5.load_state_dict(l5.state_dict())


def test_pickle_round_trip():
    import pickle
    lin = nn.Sequential(nn.Linear(2, 2), nn.Flatten())
    back = pickle.loads(pickle.dumps(lin))
    assert type(back[0].weight) is nn.Parameter and back[0].weight.requires_grad
    assert jitorch.equal(back[0].weight, lin[0].weight)
    assert repr(back) == repr(lin)


def test_set_submodule_and_to_empty():
    s = nn.Sequential(nn.Linear(1, 1), nn.Sequential(nn.Identity()))
    s.set_submodule("1.0", nn.Flatten())
    assert isinstance(s[1][0], nn.Flatten)
    with raises(ValueError, "Cannot set the submodule without a target name!"):
        s.set_submodule("", nn.Identity())
    with raises(ValueError, "`module` is not an nn.Module, found <class 'int'>"):
        s.set_submodule("0", 3)
    with raises(AttributeError, "Sequential has no attribute `x`"):
        s.set_submodule("1.x", nn.Identity(), True)
    with raises(AttributeError, "`weight` is not an nn.Module"):
        s.set_submodule("0.weight", nn.Identity())
    w = s[0].weight
    assert s.to_empty(device="cpu") is s and s[0].weight is w and w.shape == (1, 1)


def test_layer_shape_errors():
    # PyTorch's messages; Linear's is prefixed with the layer (issue 4: errors name the layer)
    lin = nn.Linear(3, 2)
    for x, rows in ((jitorch.randn(4), 1), (jitorch.randn(5, 2, 4), 10), (jitorch.randn(0, 4), 0)):
        with raises(RuntimeError, f"Linear(in_features=3, out_features=2, bias=True): mat1 and "
                                  f"mat2 shapes cannot be multiplied ({rows}x4 and 3x2)"):
            lin(x)
    assert lin(jitorch.randn(3)).shape == (2,)
    bil = nn.Bilinear(2, 3, 4)
    assert bil(jitorch.randn(2), jitorch.randn(3)).shape == (4,)
    with raises(RuntimeError, "bilinear(): input1 size does not match weight size: got 3 but "
                              "expected 2"):
        bil(jitorch.randn(5, 3), jitorch.randn(5, 3))
    with raises(RuntimeError, "bilinear(): input2 size does not match weight size: got 2 but "
                              "expected 3"):
        bil(jitorch.randn(5, 2), jitorch.randn(5, 2))
    with raises(RuntimeError, "bilinear(): input batch dimensions do not match at dim 0: got 4 "
                              "and 5"):
        bil(jitorch.randn(4, 2), jitorch.randn(5, 3))
    with raises(RuntimeError, "bilinear(): input dimensions do not match: got 2 and 1"):
        bil(jitorch.randn(4, 2), jitorch.randn(3))


def test_full_backward_hooks():
    lin = nn.Linear(3, 2)
    with jitorch.no_grad():
        lin.weight.copy_(jitorch.arange(6.0).reshape(2, 3))
        lin.bias.fill_(0.5)
    log = []

    def hook(m, gi, go):
        log.append(("hook", type(m).__name__, [None if g is None else g.tolist() for g in gi],
                    [g.tolist() for g in go]))

    def pre(m, go):
        log.append(("pre", [g.tolist() for g in go]))
        return (go[0] * 2,)

    hh = lin.register_full_backward_hook(hook)
    hp = lin.register_full_backward_pre_hook(pre)
    x = jitorch.tensor([[1.0, 2.0, 3.0]], requires_grad=True)
    lin(x).sum().backward()
    assert log == [("pre", [[[1.0, 1.0]]]),
                   ("hook", "Linear", [[[6.0, 10.0, 14.0]]], [[[2.0, 2.0]]])]
    assert x.grad.tolist() == [[6.0, 10.0, 14.0]]
    assert lin.weight.grad.tolist() == [[2.0, 4.0, 6.0], [2.0, 4.0, 6.0]]
    log.clear()
    lin.zero_grad()
    with pytest.warns(UserWarning, match="^Full backward hook is firing when gradients are "
                                         "computed with respect to module outputs since no "
                                         "inputs require gradients"):
        lin(jitorch.ones(1, 3)).sum().backward()
    assert log == [("pre", [[[1.0, 1.0]]]), ("hook", "Linear", [None], [[[2.0, 2.0]]])]
    hh.remove()
    hp.remove()
    lin.register_full_backward_hook(lambda m, gi, go: (gi[0] * 0,))
    x.grad = None
    lin(x).sum().backward()
    assert x.grad.tolist() == [[0.0, 0.0, 0.0]]

    class Two(nn.Module):
        def forward(self, a, b, k):
            return a * b, a + k

    seen = []
    t = Two()
    t.register_full_backward_hook(lambda m, gi, go: seen.append((gi, go)))
    a = jitorch.ones(2, requires_grad=True)
    b = jitorch.full((2,), 3.0)
    o1, o2 = t(a, b, 5)
    o1.sum().backward()
    (gi, go), = seen
    assert gi[0].tolist() == [3.0, 3.0] and gi[1].tolist() == [0.0, 0.0] and gi[2] is None
    assert go[0].tolist() == [1.0, 1.0] and go[1] is None
    t2 = Two()
    t2.register_full_backward_hook(lambda m, gi, go: (1, 2))
    with raises(RuntimeError, "Backward hook returned an invalid number of grad_input, got 2, "
                              "but expected 3"):
        t2(a, b, 5)[0].sum().backward()
    t3 = Two()
    t3.register_full_backward_pre_hook(lambda m, go: (1,))
    with raises(RuntimeError, "Backward pre hook returned an invalid number of grad_output, got "
                              "1, but expected 2"):
        t3(a, b, 5)[0].sum().backward()
    lin2 = nn.Linear(3, 2)
    lin2.register_full_backward_hook(lambda m, gi, go: (jitorch.ones(1, 3),))
    with pytest.warns(UserWarning):
        with raises(RuntimeError, "Backward hook for Modules where no input requires gradient "
                                  "should always return None or None for all gradients."):
            lin2(jitorch.ones(1, 3)).sum().backward()
    s = nn.Sequential(nn.Linear(3, 3), nn.Linear(3, 1))
    order = []
    for i, m in enumerate(s):
        m.register_full_backward_hook(lambda m, gi, go, i=i: order.append(i))
    s.register_full_backward_hook(lambda m, gi, go: order.append("seq"))
    s(x).sum().backward()
    assert order == [1, 0, "seq"]
    with jitorch.no_grad():
        assert not lin(x).requires_grad
