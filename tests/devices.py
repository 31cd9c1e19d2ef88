"""The devices the device-generic tests run on (PyTorch's instantiate_device_type_tests):
`cpu` always, `cuda` where this process has CUDA: a GPU, or the simulator when the process was
started with `JITORCH_CUDA_SIM=1` (see docs/cuda.md, "Running the CUDA tiers"). The `device`
fixture (conftest.py) and the OpInfo tests' parametrisation read `DEVICES`; the session header
says which tiers are active, so a missing cuda tier is never a silent skip."""
import jitorch

CUDA = jitorch.cuda.is_available()
DEVICES = ("cpu", "cuda") if CUDA else ("cpu",)


def header() -> str:
    if not CUDA:
        return ("jitorch devices under test: cpu (no GPU and JITORCH_CUDA_SIM unset: the cuda "
                "cases run on the simulator in their own process, tests/test_cuda_sim_tier.py)")
    kind = "simulator" if jitorch.cuda.get_device_name().startswith("jitorch CUDA simulator") \
        else jitorch.cuda.get_device_name()
    return f"jitorch devices under test: cpu, cuda ({kind})"
