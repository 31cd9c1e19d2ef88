"""The namespaces scripts touch first, answering as PyTorch does on a CPU-only machine:
`jitorch.cuda`, `backends`, `accelerator`, the default device, the Tensor device predicates,
`nn.parallel`, `onnx` and the missing parts of `special` (NotImplementedError naming them)."""
import importlib

import numpy as np
import pytest
import scipy.special as sps

import jitorch
import jitorch.nn as nn

# these are the answers of a process without CUDA; with CUDA (the simulator or a GPU) the
# `jitorch.cuda` answers are tests/test_device.py's
_NO_CUDA = pytest.mark.skipif(jitorch.cuda.is_available(),
                              reason="asserts what a process without CUDA answers")


@_NO_CUDA
def test_cuda_reports_no_gpu_and_harmless_calls_are_no_ops():
    c = jitorch.cuda
    assert c.is_available() is False and c.device_count() == 0 and not c.is_initialized()
    for f in (c.empty_cache, c.seed, c.seed_all, c.reset_peak_memory_stats):
        assert f() is None
    assert c.manual_seed(0) is None and c.manual_seed_all(123) is None
    assert c.memory_allocated() == 0 and c.max_memory_allocated() == 0
    assert c.memory_reserved() == 0 and c.get_rng_state_all() == []
    assert c.is_bf16_supported() is False and c.get_arch_list() == []


@_NO_CUDA
@pytest.mark.parametrize("name", ["current_device", "synchronize", "init", "get_device_name",
                                  "get_device_properties", "get_device_capability",
                                  "mem_get_info", "current_stream", "get_rng_state"])
def test_cuda_calls_that_need_a_gpu_raise_pytorchs_assertion(name):
    with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
        getattr(jitorch.cuda, name)()


@_NO_CUDA
def test_cuda_device_objects():
    with pytest.raises(RuntimeError, match="requires CUDA support"):
        jitorch.cuda.Stream()
    with jitorch.cuda.device(-1):  # a negative index selects nothing (PyTorch: a no-op)
        pass
    with pytest.raises(AssertionError):
        with jitorch.cuda.device(0):
            pass


@_NO_CUDA
def test_tensors_on_cuda_fail_as_both_pytorch_and_jitorch_say():
    """PyTorch's CPU-only build raises AssertionError; jitorch's rule for what is missing is
    NotImplementedError naming it: the error is both."""
    for make in (lambda: jitorch.zeros(2, device="cuda"), lambda: jitorch.zeros(2).cuda(),
                 lambda: jitorch.zeros(2).to("cuda:0")):
        with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
            make()
        with pytest.raises(NotImplementedError, match="cuda"):
            make()
    with pytest.raises(NotImplementedError, match="mps"):
        jitorch.zeros(2, device="mps")


@_NO_CUDA
def test_cpu_branch_of_the_usual_device_idiom():
    device = jitorch.device("cuda" if jitorch.cuda.is_available() else
                            "mps" if jitorch.backends.mps.is_available() else "cpu")
    x = jitorch.ones(2, device=device).to(device)
    assert x.device == jitorch.device("cpu")
    assert str(jitorch.device("mps")) == "mps"


def test_backends_flags():
    b = jitorch.backends
    assert b.mps.is_available() is False and b.mps.is_built() is False
    assert b.cudnn.is_available() is False and b.cudnn.version() is None
    assert (b.cudnn.enabled, b.cudnn.benchmark, b.cudnn.deterministic) == (True, False, False)
    b.cudnn.deterministic, b.cudnn.benchmark = True, True
    try:
        assert b.cudnn.deterministic and b.cudnn.benchmark
        with b.cudnn.flags(enabled=False, deterministic=False):
            assert not b.cudnn.enabled and not b.cudnn.deterministic
        assert b.cudnn.enabled and b.cudnn.deterministic
    finally:
        b.cudnn.deterministic, b.cudnn.benchmark = False, False
    assert b.cuda.is_built() is jitorch.cuda.is_available()  # a cuda backend: GPU or simulator
    assert b.cuda.matmul.allow_tf32 is False
    b.cuda.matmul.allow_tf32 = True
    assert b.cuda.matmul.allow_tf32 is True
    b.cuda.matmul.allow_tf32 = False
    with pytest.raises(AttributeError, match="Unknown attribute foo"):
        b.cuda.matmul.foo = 1
    assert b.mkldnn.is_available() is False and b.openmp.is_available() is False
    import jitorch.backends.cudnn as cudnn  # the import form scripts use
    assert cudnn is b.cudnn


def test_accelerator():
    a = jitorch.accelerator
    assert a.is_available() is False and a.current_accelerator() is None
    assert a.device_count() == 0
    with pytest.raises(RuntimeError, match="none is available"):
        a.current_device_index()


@_NO_CUDA
def test_default_device():
    assert jitorch.get_default_device() == jitorch.device("cpu")
    jitorch.set_default_device("cpu")
    jitorch.set_default_device(None)
    assert jitorch.get_default_device() == jitorch.device("cpu")
    with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
        jitorch.set_default_device("cuda")
    with pytest.raises(NotImplementedError, match="mps"):
        jitorch.set_default_device("mps")
    assert jitorch.get_default_device() == jitorch.device("cpu")
    with jitorch.device("cpu"):
        assert jitorch.zeros(1).device.type == "cpu"


def test_tensor_device_predicates():
    x = jitorch.zeros(2)
    assert x.is_cpu is True
    for name in ("is_cuda", "is_xpu", "is_mps", "is_meta", "is_quantized", "is_sparse",
                 "is_mkldnn", "is_nested"):
        assert getattr(x, name) is False, name


def test_data_parallel_is_the_module_on_cpu():
    jitorch.manual_seed(0)
    m = nn.Linear(3, 2)
    dp = nn.DataParallel(m, device_ids=[0])  # device ids are ignored without GPUs (PyTorch)
    assert dp.module is m and dp.device_ids == []
    x = jitorch.randn(4, 3)
    np.testing.assert_array_equal(dp(x).detach().numpy(), m(x).detach().numpy())
    assert list(dp.state_dict()) == ["module.weight", "module.bias"]
    assert repr(dp).startswith("DataParallel(\n  (module): Linear(")
    assert nn.parallel.DataParallel is nn.DataParallel
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        nn.parallel.DistributedDataParallel(m)  # it needs init_process_group (PyTorch's error)
    with pytest.raises(RuntimeError, match="device type could not be determined"):
        nn.parallel.data_parallel(m, x)


def test_onnx_imports_and_export_names_itself():
    onnx = importlib.import_module("jitorch.onnx")
    assert onnx.is_in_onnx_export() is False
    with pytest.raises(NotImplementedError, match="jitorch.onnx.export"):
        onnx.export(nn.Linear(2, 2), (jitorch.zeros(1, 2),), "m.onnx")


def test_special_missing_functions_name_themselves():
    with pytest.raises(NotImplementedError, match="jitorch.special.airy_ai"):
        jitorch.special.airy_ai(jitorch.zeros(2))
    with pytest.raises(AttributeError):
        jitorch.special.no_such_function  # noqa: B018


def test_special_aliases_are_the_registry_ops():
    s = jitorch.special
    assert s.expit is jitorch.sigmoid and s.gammaln is jitorch.lgamma
    assert s.psi is jitorch.digamma and s.erfinv is jitorch.erfinv
    x = jitorch.tensor([0.2, 0.5, 2.0], dtype=jitorch.float64)
    np.testing.assert_allclose(s.logsumexp(x, 0).item(), np.log(np.exp(x.numpy()).sum()))
    np.testing.assert_allclose(s.softmax(x, 0).numpy(),
                               np.exp(x.numpy()) / np.exp(x.numpy()).sum())
    np.testing.assert_allclose(s.round(x * 10, decimals=-1).numpy(), [0.0, 0.0, 20.0])
    np.testing.assert_allclose(s.multigammaln(x + 2, 2).numpy(),
                               [sps.multigammaln(v, 2) for v in (x + 2).tolist()])
    with pytest.raises(RuntimeError, match="greater than \\(p-1\\)/2"):
        jitorch.mvlgamma(x, 2)
    with pytest.raises(RuntimeError, match="negative n"):
        jitorch.polygamma(-1, x)
    np.testing.assert_allclose(x.polygamma(1).numpy(), jitorch.polygamma(1, x).numpy())


@_NO_CUDA
def test_cuda_amp_disables_itself_and_training_runs_in_float32():
    """The AMP idiom of PyTorch's examples on a machine without CUDA: GradScaler and autocast
    warn, disable themselves, and the step is the plain optimizer step."""
    jitorch.manual_seed(0)
    model = nn.Linear(3, 1)
    opt = jitorch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.warns(UserWarning, match="CUDA is not available"):
        scaler = jitorch.cuda.amp.GradScaler()
    assert not scaler.is_enabled() and scaler.get_scale() == 1.0
    x, y = jitorch.randn(8, 3), jitorch.randn(8, 1)
    before = model.weight.detach().clone()
    with pytest.warns(UserWarning, match="Disabling autocast"):
        ctx = jitorch.cuda.amp.autocast()
    with ctx:
        loss = ((model(x) - y) ** 2).mean()
    assert loss.dtype is jitorch.float32
    assert scaler.scale(loss) is loss
    scaler.scale(loss).backward()
    scaler.unscale_(opt)
    expected = before - 0.1 * model.weight.grad
    scaler.step(opt)
    scaler.update()
    np.testing.assert_allclose(model.weight.detach().numpy(), expected.numpy(), rtol=1e-6)
    assert scaler.state_dict() == {}
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        jitorch.cuda.amp.GradScaler(enabled=False)
        with jitorch.cuda.amp.autocast(enabled=False):
            pass


def test_distributed_before_init_process_group():
    # jitorch.distributed runs on MPI (tests/test_distributed.py); before init_process_group
    # the `if dist.is_available() and dist.is_initialized():` guard takes the 1-process path
    import jitorch.distributed as dist
    assert dist.is_initialized() is False
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        dist.get_rank()
