"""Names of PyTorch's API that jitorch leaves out by design (src/jitorch/_out_of_scope.py): a
NotImplementedError naming the reason, which is also an AttributeError so that the `hasattr`
probes libraries make answer False; any other missing name is a plain AttributeError."""
import pytest

import jitorch


@pytest.mark.parametrize("name,why", [("quantize_per_tensor", "quantization"),
                                      ("xpu", "Intel XPU backend"),
                                      ("sparse_csr_tensor", "compressed sparse layouts")])
def test_an_out_of_scope_name_raises_not_implemented_with_its_reason(name, why):
    with pytest.raises(NotImplementedError, match=f"jitorch.{name} is not implemented in "
                                                  f"jitorch: {why}"):
        getattr(jitorch, name)
    assert not hasattr(jitorch, name)


def test_any_other_missing_name_is_a_plain_attribute_error():
    with pytest.raises(AttributeError) as info:
        jitorch.no_such_function
    assert not isinstance(info.value, NotImplementedError)
    assert "'no_such_function'" in str(info.value)
    with pytest.raises(ImportError):
        from jitorch import no_such_function  # noqa: F401
