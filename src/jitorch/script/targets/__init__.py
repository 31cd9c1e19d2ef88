"""Code generation targets, one package each (`cpu/`, `cuda/`), chosen by device through
`codegen.target.get_target`. A target package imports `codegen/` and below, never another
target (tests/test_layout.py). Generated programs import modules of their target's package
(kernels, allocation helpers), so this file and each package's `__init__.py` stay light."""
