"""Devices and storage (issue 16, step 2): factories' `device=`, `.to/.cuda/.cpu`, the device
predicates, autograd across devices, save/load with `map_location`, and `jitorch.cuda`.

Device-generic tests take the `device` fixture (cpu, and cuda where this process has it: see
tests/devices.py); tests of what only exists with CUDA take `cuda` (parametrised over the cuda
devices under test: with none they are reported as not run, and the session header says why).
Run the cuda tier with `JITORCH_CUDA_SIM=1` (docs/cuda.md)."""
import copy
import io
import json
import zipfile
from typing import List

import numpy as np
import pytest

import jitorch
import jitorch.nn as nn
from jitorch import Tensor
from devices import CUDA, DEVICES


@pytest.fixture(params=[d for d in DEVICES if d != "cpu"])
def cuda(request):
    return request.param


# --- device-generic ------------------------------------------------------------------------------
def _factories(dev):
    x = jitorch.ones(2, 3)
    return {
        "zeros": jitorch.zeros(2, 3, device=dev), "ones": jitorch.ones(2, device=dev),
        "full": jitorch.full((2,), 1.5, device=dev), "empty": jitorch.empty(2, device=dev),
        "tensor": jitorch.tensor([1, 2], device=dev),
        "as_tensor": jitorch.as_tensor(np.ones(2), device=dev),
        "asarray": jitorch.asarray([1.0], device=dev),
        "scalar_tensor": jitorch.scalar_tensor(2.0, device=dev),
        "arange": jitorch.arange(4, device=dev), "linspace": jitorch.linspace(0, 1, 3, device=dev),
        "logspace": jitorch.logspace(0, 1, 3, device=dev), "eye": jitorch.eye(2, device=dev),
        "tril_indices": jitorch.tril_indices(3, 3, device=dev),
        "empty_strided": jitorch.empty_strided((2, 2), (1, 2), device=dev),
        "rand": jitorch.rand(2, device=dev), "randn": jitorch.randn(2, device=dev),
        "randint": jitorch.randint(0, 5, (3,), device=dev),
        "randperm": jitorch.randperm(4, device=dev),
        "normal": jitorch.normal(0.0, 1.0, (2,), device=dev),
        "zeros_like": jitorch.zeros_like(x, device=dev),
        "rand_like": jitorch.rand_like(x, device=dev),
        "full_like": jitorch.full_like(x, 3, device=dev),
        "Tensor": jitorch.Tensor(2, 2, device=dev),
        "make_tensor": jitorch.testing.make_tensor(2, dtype=jitorch.float32, device=dev),
    }


def test_every_factory_makes_its_result_on_the_device(device):
    for name, t in _factories(device).items():
        assert t.device.type == device, name
        assert t.is_cuda is (device == "cuda") and t.is_cpu is (device == "cpu"), name
        assert t.get_device() == (0 if device == "cuda" else -1), name
    assert jitorch.zeros(2, device=device, requires_grad=True).is_leaf


def test_like_new_and_conversions_keep_the_device(device):
    x = jitorch.arange(6.0).reshape(2, 3).to(device)
    made = {"zeros_like": jitorch.zeros_like(x), "ones_like": jitorch.ones_like(x),
            "randn_like": jitorch.randn_like(x), "randint_like": jitorch.randint_like(x, 3),
            "new_zeros": x.new_zeros(2), "new_ones": x.new_ones(2), "new_full": x.new_full((2,), 1),
            "new_empty": x.new_empty(1), "new_tensor": x.new_tensor([1.0]),
            "clone": x.clone(), "detach": x.detach(), "data": x.data, "view": x[0],
            "double": x.double(), "to_dtype": x.to(jitorch.int32), "t": x.t(),
            "deepcopy": __import__("copy").deepcopy(x), "sum": x.sum(), "max": x.max(0)[1]}
    for name, t in made.items():
        assert t.device == x.device, name
    assert x.new_zeros(2, device="cpu").device.type == "cpu"


def test_to_moves_and_returns_self_when_already_there(device):
    x = jitorch.tensor([1.0, 2.0])
    y = x.to(device)
    assert (y is x) is (device == "cpu")
    assert y.to(device) is y and y.to(device, copy=True) is not y
    assert y.to(jitorch.zeros(1, dtype=jitorch.float64, device=device)).dtype is jitorch.float64
    back = y.cpu()
    assert back.device.type == "cpu" and back.tolist() == [1.0, 2.0]
    assert y.to(device, jitorch.int64).dtype is jitorch.int64
    assert y.sum().item() == 3.0 and y.tolist() == [1.0, 2.0] and bool(y[0])


def test_autograd_leaves_get_gradients_on_their_device(device):
    w = jitorch.randn(3, 2, device=device, requires_grad=True)
    x = jitorch.randn(4, 3, device=device)
    loss = (x @ w).tanh().pow(2).mean()
    loss.backward()
    assert w.grad.device.type == device
    w2 = w.detach().cpu().requires_grad_()
    (x.cpu() @ w2).tanh().pow(2).mean().backward()
    np.testing.assert_allclose(w.grad.cpu().numpy(), w2.grad.numpy(), rtol=1e-5)


def test_module_to_device_trains_there(device):
    jitorch.manual_seed(0)
    m = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
    params = list(m.parameters())
    assert m.to(device) is m
    assert [p for p in m.parameters()] == params  # parameters keep their identity
    assert all(p.device.type == device for p in m.parameters())
    opt = jitorch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    x = jitorch.randn(5, 3, device=device)
    y = jitorch.randn(5, 1, device=device)
    for _ in range(2):
        opt.zero_grad()
        loss = nn.functional.mse_loss(m(x), y)
        loss.backward()
        opt.step()
    assert all(p.device.type == device and p.grad.device.type == device
               for p in m.parameters())
    assert m.cpu() is m and all(p.device.type == "cpu" for p in m.parameters())


def test_parameters_made_or_copied_on_a_device_stay_there(device):
    # nn.Parameter(t) and the modules' `device=` argument (FSDP's flat parameters are made so)
    t = jitorch.ones(3, device=device)
    assert nn.Parameter(t).device == t.device
    m = nn.Linear(2, 3, device=device)
    assert m.weight.device == t.device and m.bias.device == t.device
    assert m(jitorch.ones(1, 2, device=device)).device == t.device
    m.weight.grad = jitorch.ones(3, 2, device=device)
    c = copy.deepcopy(m)  # a copied module stays on the device, its grads too
    assert c.weight.device == t.device and c.weight.grad.device == t.device
    assert c(jitorch.ones(1, 2, device=device)).device == t.device


def test_save_and_load_keep_the_device(device, tmp_path):
    t = jitorch.arange(4.0, device=device)
    m = nn.Linear(2, 2).to(device)
    jitorch.save({"t": t, "m": m.state_dict()}, tmp_path / "x.pt")
    got = jitorch.load(tmp_path / "x.pt")
    assert got["t"].device == t.device and got["t"].tolist() == [0.0, 1.0, 2.0, 3.0]
    assert got["m"]["weight"].device == t.device
    cpu = jitorch.load(tmp_path / "x.pt", map_location="cpu")
    assert cpu["t"].device.type == "cpu" and cpu["m"]["bias"].device.type == "cpu"
    seen = []
    jitorch.load(tmp_path / "x.pt", map_location=lambda s, loc: seen.append(loc))
    assert set(seen) == {str(t.device)}


def test_scripted_function_runs_on_the_device(device):
    @jitorch.jit.script
    def f(x, y):
        z = x * 2 + y.sum()
        if z.sum() > 0:
            z = z.relu() + 1.0
        return z
    a, b = jitorch.randn(5), jitorch.randn(5)
    want = f(a, b)
    before = jitorch.jit.stats()
    got = f(a.to(device), b.to(device))
    assert got.device.type == device
    np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), rtol=1e-6)
    after = jitorch.jit.stats()
    # compiled by the CUDA target, in the caller whatever JITORCH_COMPILE says: never
    # interpreted
    if device == "cuda":
        assert after.interpreted_runs == before.interpreted_runs, after.interpreted_reasons
        assert after.host_copies == before.host_copies + 1  # `if z.sum() > 0` reads the device


# --- CUDA only -----------------------------------------------------------------------------------
def test_programs_for_cuda_tensors_never_go_to_the_cpu_target(cuda, monkeypatch):
    """Every program built for a call on CUDA tensors asks for the CUDA target: the autodiff
    forward and backward graphs (whose value types come from type inference, not from the
    arguments), a step over lists of tensors (typed from the values) and the optimizers'
    compiled step included. A CPU program
    handed device arrays would fail on a GPU."""
    from jitorch.script.runtime import programs
    asked = []
    real = programs.get_target
    monkeypatch.setattr(programs, "get_target", lambda d: asked.append(d) or real(d))

    @jitorch.jit.script
    def loss(x, w):
        return (x @ w).tanh().sum()

    @jitorch.jit.script
    def step(ps: List[Tensor], gs: List[Tensor], lr: float):
        with jitorch.no_grad():
            for i in range(len(ps)):
                ps[i].sub_(gs[i] * lr)

    x = jitorch.randn(4, 3, device=cuda)
    w = jitorch.randn(3, 2, device=cuda, requires_grad=True)
    loss(x, w).backward()
    assert w.grad is not None and w.grad.device == w.device
    p0 = w.detach().clone()
    step([w], [w.grad], 0.5)
    np.testing.assert_allclose(w.detach().cpu().numpy(), (p0 - w.grad * 0.5).cpu().numpy())
    before = w.detach().clone()
    opt = jitorch.optim.Adam([w], lr=0.1)  # the compiled optimizer step (its flat fast path
    opt.step()                             # is a CPU-program path: never for device tensors)
    assert w.device == before.device and not np.allclose(w.detach().cpu().numpy(),
                                                         before.cpu().numpy())
    assert asked and all(d.startswith("cuda") for d in asked), asked


def test_mixing_devices_raises_pytorchs_error(cuda):
    a, b = jitorch.ones(3, device=cuda), jitorch.ones(3)
    msg = ("Expected all tensors to be on the same device, but found at least two devices, "
           "cuda:0 and cpu!")
    for f in (lambda: a + b, lambda: b + a, lambda: jitorch.cat([a, b]), lambda: b.add_(a),
              lambda: jitorch.matmul(a, b), lambda: jitorch.add(a, a, out=b)):
        with pytest.raises(RuntimeError) as e:
            f()
        assert str(e.value) == msg


def test_zero_dim_cpu_tensors_mix_and_get_their_gradient(cuda):
    s = jitorch.tensor(2.0, requires_grad=True)
    x = jitorch.ones(3, device=cuda, requires_grad=True)
    y = x * s
    assert y.device.type == "cuda"
    y.sum().backward()
    assert s.grad.device.type == "cpu" and s.grad.item() == 3.0
    assert x.grad.device.type == "cuda" and x.grad.tolist() == [2.0, 2.0, 2.0]


def test_backward_across_to_moves_gradients_back(cuda):
    a = jitorch.tensor([1.0, 2.0], requires_grad=True)
    (a.to(cuda) ** 2).sum().backward()
    assert a.grad.device.type == "cpu" and a.grad.tolist() == [2.0, 4.0]
    b = jitorch.tensor([1.0, 2.0], device=cuda, requires_grad=True)
    (b.cpu() * 3).sum().backward()
    assert b.grad.device.type == "cuda" and b.grad.tolist() == [3.0, 3.0]
    c = jitorch.tensor([1.0, 2.0], requires_grad=True)
    g, = jitorch.autograd.grad((c.cuda() * c.cuda()).sum(), [c], create_graph=True)
    g.sum().backward()  # double backward through two moves
    assert c.grad.tolist() == [2.0, 2.0]


def test_copy_crosses_devices(cuda):
    dst = jitorch.zeros(2, device=cuda)
    dst.copy_(jitorch.tensor([1.0, 2.0]))
    host = jitorch.zeros(2)
    host.copy_(dst)
    assert dst.device.type == "cuda" and host.tolist() == [1.0, 2.0]


def test_host_conversions(cuda):
    x = jitorch.ones(2, device=cuda)
    msg = ("can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the "
           "tensor to host memory first.")
    with pytest.raises(TypeError) as e:
        x.numpy()
    assert str(e.value) == msg
    with pytest.raises(TypeError, match="can't convert cuda:0"):
        np.asarray(x)
    assert repr(x) == "tensor([1., 1.], device='cuda:0')"
    assert x.type() == "jitorch.cuda.FloatTensor" and x.cpu().type() == "jitorch.FloatTensor"
    assert x[0].item() == 1.0 and x.tolist() == [1.0, 1.0] and float(x.sum()) == 2.0


def test_op_without_a_device_path_names_op_and_device(cuda, monkeypatch):
    from jitorch._ops.registry import OPS
    monkeypatch.setitem(OPS["exp"].extra, "no_device", "no kernel")
    with pytest.raises(NotImplementedError, match=r"exp: not implemented on device 'cuda:0'"):
        jitorch.ones(2, device=cuda).exp()
    assert jitorch.ones(2).exp().device.type == "cpu"


def test_cuda_namespace(cuda):
    c = jitorch.cuda
    assert c.is_available() and c.device_count() == 1 and c.current_device() == 0
    assert c.get_device_name() == c.get_device_properties(0).name
    assert jitorch.device("cuda") != jitorch.device("cuda:0")  # as PyTorch: index None vs 0
    assert jitorch.ones(1, device="cuda").device == jitorch.device("cuda:0")
    c.set_device(0)
    with c.device(0):
        assert c.current_device() == 0
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        jitorch.ones(1, device="cuda:1")
    c.synchronize()
    s = c.Stream()
    assert c.current_stream() == c.default_stream() and s != c.default_stream()
    with c.stream(s):
        assert c.current_stream() is s
        jitorch.ones(2, device=cuda).sum()
    assert c.current_stream() == c.default_stream()
    assert s.query() is True
    s.synchronize()


def test_events_time_on_the_device_clock(cuda):
    c = jitorch.cuda
    start, end = c.Event(enable_timing=True), c.Event(enable_timing=True)
    start.record()
    (jitorch.randn(64, 64, device=cuda) @ jitorch.randn(64, 64, device=cuda)).sum().item()
    end.record()
    end.synchronize()
    assert end.query() and start.elapsed_time(end) > 0.0
    with pytest.raises(RuntimeError, match="enable_timing=True"):
        c.Event().elapsed_time(end)
    with pytest.raises(RuntimeError, match="must be recorded"):
        c.Event(enable_timing=True).elapsed_time(end)


def test_device_generator_is_seeded_and_separate(cuda):
    c = jitorch.cuda
    c.manual_seed(7)
    a = jitorch.randn(4, device=cuda)
    cpu_before = jitorch.random.get_rng_state()
    c.manual_seed_all(7)
    b = jitorch.randn(4, device=cuda)
    assert a.tolist() == b.tolist()
    assert jitorch.equal(jitorch.random.get_rng_state(), cpu_before)  # the CPU's is untouched
    jitorch.manual_seed(3)  # seeds every device, as PyTorch's
    x = jitorch.rand(3, device=cuda)
    jitorch.manual_seed(3)
    assert jitorch.rand(3, device=cuda).tolist() == x.tolist()
    st = c.get_rng_state()
    y = jitorch.rand(2, device=cuda)
    c.set_rng_state(st)
    assert jitorch.rand(2, device=cuda).tolist() == y.tolist()
    assert len(c.default_generators) == 1 and c.default_generators[0].device.type == "cuda"


def test_memory_statistics_count_live_device_memory(cuda):
    c = jitorch.cuda
    c.empty_cache()
    c.reset_peak_memory_stats()
    base = c.memory_allocated()
    x = jitorch.zeros(1000, device=cuda)  # 4000 bytes: 4096 in 512-byte blocks
    assert c.memory_allocated() == base + 4096
    y = x + 1  # a result made on the device
    assert c.memory_allocated() == base + 8192
    v = x[:10]  # a view allocates nothing
    assert c.memory_allocated() == base + 8192
    del x, y, v
    assert c.memory_allocated() == base
    assert c.max_memory_allocated() == base + 8192
    assert c.memory_reserved() >= base + 8192  # the cache keeps freed blocks
    c.empty_cache()
    assert c.memory_reserved() == c.memory_allocated() == base
    c.reset_peak_memory_stats()
    assert c.max_memory_allocated() == base
    stats = c.memory_stats()
    assert stats["allocated_bytes.all.current"] == base
    jitorch.ones(3)  # CPU tensors are not device memory
    assert c.memory_allocated() == base


def test_pinned_memory(cuda):
    x = jitorch.ones(3)
    p = x.pin_memory()
    assert p.is_pinned() and not x.is_pinned() and p.device.type == "cpu"
    assert p.to(cuda, non_blocking=True).tolist() == [1.0, 1.0, 1.0]
    assert jitorch.ones(2, device=cuda).cuda(non_blocking=True).is_cuda
    with pytest.raises(RuntimeError, match="only dense CPU tensors can be pinned"):
        jitorch.ones(2, device=cuda).pin_memory()


def test_default_device_scopes(cuda):
    with jitorch.device(cuda):
        assert jitorch.zeros(2).is_cuda and jitorch.arange(3).is_cuda
        assert jitorch.zeros(2, device="cpu").is_cpu
    assert jitorch.zeros(2).is_cpu
    jitorch.set_default_device(cuda)
    try:
        assert jitorch.get_default_device() == jitorch.device("cuda:0")
        assert jitorch.randn(2).is_cuda
    finally:
        jitorch.set_default_device(None)


def test_map_location_forms(cuda, tmp_path):
    jitorch.save([jitorch.ones(2, device=cuda), jitorch.ones(1)], tmp_path / "x.pt")
    moved = jitorch.load(tmp_path / "x.pt", map_location={"cuda:0": "cpu"})
    assert [t.device.type for t in moved] == ["cpu", "cpu"]
    up = jitorch.load(tmp_path / "x.pt", map_location="cuda:0")
    assert [t.device.type for t in up] == ["cuda", "cuda"]
    up = jitorch.load(tmp_path / "x.pt", map_location=jitorch.device("cuda"))
    assert [t.device.type for t in up] == ["cuda", "cuda"]
    got = jitorch.load(tmp_path / "x.pt", map_location=lambda s, loc: s.cuda())
    assert [t.device.type for t in got] == ["cuda", "cuda"]
    with pytest.raises(RuntimeError, match="on CUDA device 3 but torch.cuda.device_count"):
        jitorch.load(tmp_path / "x.pt", map_location="cuda:3")


# --- any configuration ---------------------------------------------------------------------------
def _cuda_file() -> bytes:
    """A file holding a tensor saved from cuda:0, made without CUDA: a CPU save whose tensor
    node gets the `device` tag a CUDA save writes."""
    buf = io.BytesIO()
    jitorch.save({"w": jitorch.arange(3.0)}, buf)
    src = zipfile.ZipFile(io.BytesIO(buf.getvalue()))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename.endswith("manifest.json"):
                man = json.loads(data)
                man["object"]["items"][0][1]["device"] = "cuda:0"
                data = json.dumps(man).encode()
            dst.writestr(info, data)
    return out.getvalue()


def test_loading_a_cuda_file_follows_map_location():
    data = _cuda_file()
    cpu = jitorch.load(io.BytesIO(data), map_location="cpu")["w"]
    assert cpu.device.type == "cpu" and cpu.tolist() == [0.0, 1.0, 2.0]
    assert jitorch.load(io.BytesIO(data), map_location={"cuda:0": "cpu"})["w"].is_cpu
    seen = []
    kept = jitorch.load(io.BytesIO(data), map_location=lambda t, loc: seen.append(loc) or t)
    assert seen == ["cuda:0"] and kept["w"].is_cpu  # the callable's tensor is used as it is
    if CUDA:
        assert jitorch.load(io.BytesIO(data))["w"].device == jitorch.device("cuda:0")
    else:
        with pytest.raises(RuntimeError) as e:
            jitorch.load(io.BytesIO(data))
        assert str(e.value) == (
            "Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is "
            "False. If you are running on a CPU-only machine, please use torch.load with "
            "map_location=torch.device('cpu') to map your storages to the CPU.")


def test_device_values():
    assert jitorch.device(0) == jitorch.device("cuda:0") and str(jitorch.device(1)) == "cuda:1"
    with pytest.raises(RuntimeError, match="Invalid device string"):
        jitorch.device("cuda:x")
    assert repr(jitorch.device("cuda", 1)) == "device(type='cuda', index=1)"
    assert jitorch.zeros(2).get_device() == -1
    if not CUDA:
        with pytest.raises(RuntimeError, match="Cannot access accelerator device"):
            jitorch.ones(2).pin_memory()
