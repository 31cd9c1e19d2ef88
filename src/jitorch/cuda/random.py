"""The CUDA devices' default random generators (`torch.cuda.default_generators`): one
`jitorch.Generator` per device, separate from the CPU's, drawn from by random factories called
with `device="cuda..."` and no `generator=`. Seeding the CPU (`jitorch.manual_seed`) seeds these
too, as PyTorch's does."""
from __future__ import annotations

from .._device import as_device, cuda_backend, current_index

_generators: list = []


def generators() -> tuple:
    """One generator per CUDA device (empty without CUDA); made on first use."""
    if not _generators:
        be = cuda_backend()
        if be is not None:
            from .._random import Generator
            _generators.extend(Generator(device=as_device(i)) for i in range(be.count()))
    return tuple(_generators)


def default_generator(index: int | None = None):
    gens = generators()
    if not gens:
        raise AssertionError("Torch not compiled with CUDA enabled")
    return gens[current_index() if index is None else index]


def _index(device) -> int:
    if device is None or device == "cuda":
        return current_index()
    return device if isinstance(device, int) else as_device(device).index


def manual_seed(seed) -> None:
    seed = int(seed)  # PyTorch rejects a seed that is not an integer
    if generators():
        default_generator().manual_seed(seed)


def manual_seed_all(seed) -> None:
    seed = int(seed)
    for g in generators():
        g.manual_seed(seed)


def seed() -> None:
    if generators():
        default_generator().seed()


def seed_all() -> None:
    gens = generators()
    if gens:
        s = gens[0].seed()
        for g in gens[1:]:
            g.manual_seed(s)


def initial_seed() -> int:
    return default_generator().initial_seed()


def get_rng_state(device="cuda"):
    return default_generator(_index(device)).get_state()


def set_rng_state(new_state, device="cuda") -> None:
    if generators():
        default_generator(_index(device)).set_state(new_state)


def get_rng_state_all() -> list:
    return [g.get_state() for g in generators()]


def set_rng_state_all(new_states) -> None:
    for g, s in zip(generators(), new_states):
        g.set_state(s)
