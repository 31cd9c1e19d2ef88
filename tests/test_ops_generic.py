"""Generic op tests driven by the OpInfo table: every entry is checked against its reference
(values, dtype, shape) per dtype and device, as a Tensor method, and its VJP/JVP against finite
differences (per device). The devices are those under test (tests/devices.py) that the entry
claims (`OpInfo.devices`); ids start with the device.
"""
from __future__ import annotations

import numpy as np
import pytest

import jitorch
from jitorch._ops.registry import OPS, PUBLIC
from devices import DEVICES
from opinfo import OPINFOS, Sample, to_tensor_args

_NP_TO_JT = {np.dtype(d.np): d for d in jitorch._dtype.ALL}


def _params(grad=False, attr=None):
    out = []
    for dev in DEVICES:
        for info in OPINFOS:
            if dev not in info.devices:
                continue
            if grad:
                if getattr(info, attr):
                    out.append(pytest.param(info, dev, id=f"{dev}-{info.name}"))
            else:
                for d in info.dtypes:
                    out.append(pytest.param(info, d, dev, id=f"{dev}-{info.name}-{d.name}"))
    return out


def _host(t):
    return t.detach().cpu().numpy()


def _flat(x):
    if isinstance(x, (tuple, list)):
        return [y for e in x for y in _flat(e)]
    return [x]


def _expected_dtype(info, in_dtype, ref_out):
    if info.out_dtype is not None:
        return info.out_dtype(in_dtype)
    d = _NP_TO_JT.get(np.asarray(ref_out).dtype)
    if d is jitorch.float64 and in_dtype is jitorch.float32:
        return jitorch.float32
    return d


@pytest.mark.parametrize("info,dtype,device", _params())
def test_op_matches_reference(info, dtype, device):
    rng = np.random.default_rng(1234)
    samples = info.samples(dtype.np, rng)
    assert samples, f"{info.name}: no samples"
    for s in samples:
        got = info.fn()(*to_tensor_args(s, device=device), **s.kwargs)
        want = info.ref(*s.args, **s.kwargs)
        for g, w in zip(_flat(got), _flat(want)):
            if not isinstance(g, jitorch.Tensor):
                assert g == w, f"{info.name} {s.name}: {g} != {w}"
                continue
            w = np.asarray(w)
            assert tuple(g.shape) == w.shape, f"{info.name} {s.name}: shape {g.shape} vs {w.shape}"
            assert g.dtype is _expected_dtype(info, dtype, w), \
                f"{info.name} {s.name}: dtype {g.dtype} for input {dtype}"
            assert g.device.type == device, f"{info.name} {s.name}: result on {g.device}"
            if info.compare is not None:
                info.compare(_host(g), w)
            else:
                np.testing.assert_allclose(_host(g).astype(w.dtype) if w.dtype != object
                                           else _host(g), w, atol=info.atol, rtol=info.rtol,
                                           equal_nan=True, err_msg=f"{info.name} {s.name}")


@pytest.mark.parametrize("info,dtype,device", [p for p in _params() if p.values[0].method])
def test_method_matches_function(info, dtype, device):
    rng = np.random.default_rng(7)
    for s in info.samples(dtype.np, rng)[:2]:
        args = to_tensor_args(s, device=device)
        if not isinstance(args[0], jitorch.Tensor):
            continue
        f = info.fn()(*args, **s.kwargs)
        m = getattr(args[0], info.name)(*args[1:], **s.kwargs)
        for a, b in zip(_flat(f), _flat(m)):
            if isinstance(a, jitorch.Tensor):
                np.testing.assert_array_equal(_host(a), _host(b))


def _grad_samples(info):
    rng = np.random.default_rng(99)
    gen = info.grad_samples or info.samples
    return gen(np.dtype(np.float64), rng)


def _make_fn(info, s, args):
    positions = [i for i, a in enumerate(args) if isinstance(a, jitorch.Tensor)
                 and a.requires_grad]
    list_positions = [i for i, a in enumerate(args) if isinstance(a, list)]

    def fn(*diff):
        full = list(args)
        k = 0
        for i in positions:
            full[i] = diff[k]
            k += 1
        for i in list_positions:
            n = len(args[i])
            full[i] = list(diff[k:k + n])
            k += n
        out = info.fn()(*full, **s.kwargs)
        return tuple(o for o in _flat(out) if isinstance(o, jitorch.Tensor)
                     and o.is_floating_point())
    inputs = [args[i] for i in positions] + [t for i in list_positions for t in args[i]]
    return fn, inputs


@pytest.mark.parametrize("info,device", _params(grad=True, attr="grad"))
def test_vjp_matches_finite_differences(info, device):
    for s in _grad_samples(info):
        args = to_tensor_args(s, requires_grad=True, skip=info.skip_grad_args, device=device)
        fn, inputs = _make_fn(info, s, args)
        assert jitorch.autograd.gradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3), s.name


@pytest.mark.parametrize("info,device", _params(grad=True, attr="jvp"))
def test_jvp_matches_finite_differences(info, device):
    for s in _grad_samples(info):
        args = to_tensor_args(s, requires_grad=True, skip=info.skip_grad_args, device=device)
        fn, inputs = _make_fn(info, s, args)
        assert jitorch.autograd.gradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3,
                                          check_forward_ad=True), s.name


def test_every_public_op_has_an_opinfo():
    covered = {i.name for i in OPINFOS}
    missing = sorted(n for n in PUBLIC if n not in covered)
    assert not missing, f"public ops without an OpInfo entry: {missing}"
