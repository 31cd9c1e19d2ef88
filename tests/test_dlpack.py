"""DLPack exchange (issue 16): `jitorch.from_dlpack`, `jitorch.utils.dlpack.{from,to}_dlpack`,
`Tensor.__dlpack__`/`__dlpack_device__`, zero-copy with NumPy both ways, and PyTorch's errors.
On the simulator tier (`JITORCH_CUDA_SIM=1`) the cuda cases check that the simulator refuses to
export host memory as CUDA memory and that jitorch-to-jitorch exchange still shares memory."""
import numpy as np
import pytest

import jitorch
from jitorch.utils.dlpack import DLDeviceType, from_dlpack, to_dlpack
from devices import DEVICES

DTYPES = [jitorch.bool, jitorch.uint8, jitorch.int8, jitorch.int16, jitorch.int32, jitorch.int64,
          jitorch.float16, jitorch.float32, jitorch.float64, jitorch.complex64]


@pytest.fixture(params=[d for d in DEVICES if d != "cpu"])
def cuda(request):
    return request.param


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_numpy_round_trip_shares_memory(dtype):
    t = jitorch.arange(6).reshape(2, 3).to(dtype)
    a = np.from_dlpack(t)
    assert a.dtype == t.numpy().dtype and a.tolist() == t.tolist()
    back = jitorch.from_dlpack(a)
    assert back.dtype is dtype and back.tolist() == t.tolist()
    one = np.ones((), a.dtype)
    a[1, 2] = one  # a write through NumPy is seen by both tensors
    assert t[1, 2].item() == one.item() and back[1, 2].item() == one.item()
    back[0, 0] = one.item()  # and a write through the imported tensor by NumPy and the original
    assert a[0, 0] == one and t[0, 0].item() == one.item()


def test_from_numpy_exporter_and_capsules():
    a = np.arange(4.0)
    t = jitorch.from_dlpack(a)
    a[0] = 9.0
    assert t[0].item() == 9.0
    cap = to_dlpack(jitorch.tensor([1.0, 2.0]))
    u = from_dlpack(cap)
    assert u.tolist() == [1.0, 2.0]
    with pytest.raises(RuntimeError, match="consumed only once"):
        from_dlpack(cap)
    v = jitorch.from_dlpack(np.arange(3).__dlpack__(max_version=(1, 0)))  # a versioned capsule
    assert v.tolist() == [0, 1, 2]
    w = jitorch.tensor([1.0, 2.0])
    z = jitorch.from_dlpack(w)  # jitorch to jitorch on the CPU: through the protocol
    z[0] = 5.0
    assert w[0].item() == 5.0 and z.dtype is w.dtype


def test_non_contiguous_views_keep_their_strides():
    base = jitorch.arange(12.0).reshape(3, 4)
    for view in (base.t(), base[:, ::2], base[1:, 1:3]):
        a = np.from_dlpack(view)
        assert a.tolist() == view.tolist()
        assert a.strides == view.numpy().strides
        a[0, 0] = -1.0
        assert view[0, 0].item() == -1.0
    t = jitorch.from_dlpack(np.arange(12.0).reshape(3, 4)[:, 1::2].T)
    assert t.tolist() == [[1.0, 5.0, 9.0], [3.0, 7.0, 11.0]] and not t.is_contiguous()


def test_dlpack_device_and_errors():
    t = jitorch.ones(2)
    assert t.__dlpack_device__() == (DLDeviceType.kDLCPU, 0)
    with pytest.raises(BufferError, match="require gradient"):
        t.requires_grad_().__dlpack__()
    with pytest.raises(BufferError, match="require gradient"):
        jitorch.from_dlpack(jitorch.ones(2, requires_grad=True))
    with pytest.raises(BufferError, match="bfloat16"):
        np.from_dlpack(jitorch.ones(2, dtype=jitorch.bfloat16))
    with pytest.raises(TypeError, match="stream"):
        jitorch.ones(2).__dlpack__(stream="s")
    with pytest.raises(RuntimeError, match="invalid capsule"):
        jitorch.from_dlpack([1, 2])


def test_cuda_dlpack_device_and_the_simulators_refusal(cuda):
    t = jitorch.arange(4.0, device=cuda)
    assert t.__dlpack_device__() == (DLDeviceType.kDLCUDA, 0)
    u = jitorch.from_dlpack(t)  # jitorch to jitorch: the same device memory
    assert u.device == t.device
    u[0] = 7.0
    assert t[0].item() == 7.0
    if jitorch.cuda.get_device_name().startswith("jitorch CUDA simulator"):
        with pytest.raises(BufferError, match="simulator keeps device memory in host memory"):
            t.__dlpack__()
        with pytest.raises(BufferError, match="simulator"):
            np.from_dlpack(t)
    else:
        import cupy
        c = cupy.from_dlpack(t)
        c[1] = 5.0
        assert t[1].item() == 5.0
        assert jitorch.from_dlpack(c).device == t.device
