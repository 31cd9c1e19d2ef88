"""How this process's generated functions were typed: by the lean compiler (targets/cpu/lean),
or by Numba's frontend where the lean compiler declined them. Kept in this bottom layer so that
`jit.stats()["lean"]` reads it without naming a target."""

counts = {"compiled": 0, "declined": 0}
unsupported: dict = {}  # (module, function, argument types) -> why the lean compiler declined
