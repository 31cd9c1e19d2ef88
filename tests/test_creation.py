"""Tensor creation: `tensor` inference and conversion, `as_tensor`/`asarray`/`from_numpy`
sharing, the constant factories, `eye`, `empty_strided`, `scalar_tensor`, `tril/triu_indices`
and the ranges (`arange`, `linspace`, `logspace`).

The expected values, dtypes, shapes and error messages in the tables below were produced by
PyTorch 2.13 from the same expressions (`T` is the library under test).
"""
import math
import warnings

import numpy as np
import pytest

import jitorch

inf, nan = math.inf, math.nan

VALUE_CASES = [
    ('T.tensor([T.tensor(1.), T.tensor(2.)])', 'float32', (2,), [1.0, 2.0]),
    ('T.tensor([T.tensor(1, dtype=T.int32), T.tensor(2, dtype=T.int32)])', 'int32', (2,), [1, 2]),
    ('T.tensor([T.tensor(1, dtype=T.int32), 2.5])', 'float32', (2,), [1.0, 2.5]),
    ('T.tensor([T.tensor(1, dtype=T.int32), 2])', 'int64', (2,), [1, 2]),
    ('T.tensor([T.tensor(1.5, dtype=T.float64), 2])', 'float64', (2,), [1.5, 2.0]),
    ('T.tensor([T.tensor(1.5, dtype=T.float16), 2.5])', 'float32', (2,), [1.5, 2.5]),
    ('T.tensor([T.tensor(True), 2])', 'int64', (2,), [1, 2]),
    ('T.tensor([[T.tensor(1.), 2.], [3., 4.]])', 'float32', (2, 2), [[1.0, 2.0], [3.0, 4.0]]),
    ('T.tensor([T.tensor([[1.]])])', 'float32', (1,), [1.0]),
    ('T.tensor([T.tensor(1.), T.tensor([2.])])', 'float32', (2,), [1.0, 2.0]),
    ('T.tensor([])', 'float32', (0,), []),
    ('T.tensor([[]])', 'float32', (1, 0), [[]]),
    ('T.tensor([[], []])', 'float32', (2, 0), [[], []]),
    ('T.tensor(3)', 'int64', (), 3),
    ('T.tensor(3.5)', 'float32', (), 3.5),
    ('T.tensor(True)', 'bool', (), True),
    ('T.tensor(1+2j)', 'complex64', (), [1.0, 2.0]),
    ('T.tensor([1, 2.5, True])', 'float32', (3,), [1.0, 2.5, 1.0]),
    ('T.tensor([1, 2j])', 'complex64', (2,), [[1.0, 0.0], [0.0, 2.0]]),
    ('T.tensor([True, False])', 'bool', (2,), [True, False]),
    ('T.tensor([True, 2.5j])', 'complex64', (2,), [[1.0, 0.0], [0.0, 2.5]]),
    ('T.tensor(np.float32(2.5))', 'float32', (), 2.5),
    ('T.tensor(np.float64(2.5))', 'float64', (), 2.5),
    ('T.tensor([np.float32(2.5), 1])', 'float32', (2,), [2.5, 1.0]),
    ('T.tensor([np.float64(1.), 2])', 'float64', (2,), [1.0, 2.0]),
    ('T.tensor(np.int32(2))', 'int32', (), 2),
    ('T.tensor([np.int32(2), 3])', 'int64', (2,), [2, 3]),
    ('T.tensor(np.bool_(True))', 'bool', (), True),
    ('T.tensor(np.array([1, 2], dtype=np.int32))', 'int32', (2,), [1, 2]),
    ('T.tensor(np.array(5))', 'int64', (), 5),
    ('T.tensor([np.array([1, 2], dtype=np.int32), np.array([3, 4], dtype=np.int32)])',
     'int32',
     (2, 2),
     [[1, 2], [3, 4]]),
    ('T.tensor(np.array([[1.5, 2.5]], dtype=np.float16))', 'float16', (1, 2), [[1.5, 2.5]]),
    ('T.tensor(np.array([1, 2]), dtype=T.float32)', 'float32', (2,), [1.0, 2.0]),
    ('T.tensor([1, 2], dtype=T.bool)', 'bool', (2,), [True, True]),
    ('T.tensor([0.0, 2], dtype=T.bool)', 'bool', (2,), [False, True]),
    ('T.tensor([1j, 0j], dtype=T.bool)', 'bool', (2,), [True, False]),
    ("T.tensor([3.7, float('nan')], dtype=T.bool)", 'bool', (2,), [True, True]),
    ('T.tensor([1.7, -2.7], dtype=T.int32)', 'int32', (2,), [1, -2]),
    ('T.tensor([-1], dtype=T.uint8)', 'uint8', (1,), [255]),
    ('T.tensor([-255], dtype=T.uint8)', 'uint8', (1,), [1]),
    ('T.tensor([-129], dtype=T.uint8)', 'uint8', (1,), [127]),
    ('T.tensor([255], dtype=T.uint8)', 'uint8', (1,), [255]),
    ('T.tensor([127, -128], dtype=T.int8)', 'int8', (2,), [127, -128]),
    ('T.tensor(2**63 - 1)', 'int64', (), 9223372036854775807),
    ('T.tensor(-2**63)', 'int64', (), -9223372036854775808),
    ('T.tensor([2**63], dtype=T.float64)', 'float64', (1,), [9.223372036854776e+18]),
    ('T.tensor([2**70], dtype=T.float32)', 'float32', (1,), [1.1805916207174113e+21]),
    ('T.tensor([1e40])', 'float32', (1,), [inf]),
    ('T.tensor([1e40], dtype=T.float16)', 'float16', (1,), [inf]),
    ('T.tensor([1e300], dtype=T.float32)', 'float32', (1,), [inf]),
    ("T.tensor([float('nan'), float('inf')])", 'float32', (2,), [nan, inf]),
    ('T.tensor([[1], [2]], dtype=T.float16)', 'float16', (2, 1), [[1.0], [2.0]]),
    ('T.tensor([[1, 2], [3, 4]], dtype=T.bfloat16)', 'bfloat16', (2, 2), [[1.0, 2.0], [3.0, 4.0]]),
    ('T.tensor([True], dtype=T.complex64)', 'complex64', (1,), [[1.0], [0.0]]),
    ('T.tensor((1, 2))', 'int64', (2,), [1, 2]),
    ('T.tensor(range(3))', 'int64', (3,), [0, 1, 2]),
    ('T.tensor([[1, 2], (3, 4)])', 'int64', (2, 2), [[1, 2], [3, 4]]),
    ('T.tensor(((1.5,),))', 'float32', (1, 1), [[1.5]]),
    ('T.tensor([[True], [False]], dtype=T.float64)', 'float64', (2, 1), [[1.0], [0.0]]),
    ('T.tensor([1.5], dtype=T.int64)', 'int64', (1,), [1]),
    ('T.tensor([1, 2], dtype=float)', 'float64', (2,), [1.0, 2.0]),
    ('T.tensor([1.5], dtype=int)', 'int64', (1,), [1]),
    ('T.tensor([[[1, 2], [3, 4]], [[5, 6], [7, 8]]])',
     'int64',
     (2, 2, 2),
     [[[1, 2], [3, 4]], [[5, 6], [7, 8]]]),
    ('T.tensor([1.5, 2.5], dtype=T.float64)', 'float64', (2,), [1.5, 2.5]),
    ('T.tensor(0.1)', 'float32', (), 0.10000000149011612),
    ('T.tensor([0.1], dtype=T.float64)', 'float64', (1,), [0.1]),
    ('T.as_tensor([1, 2], dtype=T.float64)', 'float64', (2,), [1.0, 2.0]),
    ('T.as_tensor(T.ones(2), dtype=T.int32)', 'int32', (2,), [1, 1]),
    ('T.as_tensor(3.5)', 'float32', (), 3.5),
    ('T.asarray([1, 2.])', 'float32', (2,), [1.0, 2.0]),
    ('T.asarray(T.ones(2), dtype=T.float64)', 'float64', (2,), [1.0, 1.0]),
    ('T.asarray(np.ones(2, dtype=np.float32))', 'float32', (2,), [1.0, 1.0]),
    ('T.asarray(5)', 'int64', (), 5),
    ('T.zeros(2, 3)', 'float32', (2, 3), [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]),
    ('T.zeros((2, 3))', 'float32', (2, 3), [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]),
    ('T.zeros([2, 3])', 'float32', (2, 3), [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]),
    ('T.zeros(size=(2, 3))', 'float32', (2, 3), [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]),
    ('T.zeros([])', 'float32', (), 0.0),
    ('T.zeros(())', 'float32', (), 0.0),
    ('T.zeros(np.int64(2))', 'float32', (2,), [0.0, 0.0]),
    ('T.zeros(T.tensor(2))', 'float32', (2,), [0.0, 0.0]),
    ('T.zeros(T.Size([2, 1]))', 'float32', (2, 1), [[0.0], [0.0]]),
    ('T.zeros(0, 3)', 'float32', (0, 3), []),
    ('T.ones(2, dtype=T.bool)', 'bool', (2,), [True, True]),
    ('T.ones(2, 2, dtype=T.int8)', 'int8', (2, 2), [[1, 1], [1, 1]]),
    ('T.ones(3, dtype=T.complex64)', 'complex64', (3,), [[1.0, 1.0, 1.0], [0.0, 0.0, 0.0]]),
    ('T.ones(2, dtype=T.bfloat16)', 'bfloat16', (2,), [1.0, 1.0]),
    ('T.empty(2, 3).shape', None, None, (2, 3)),
    ('T.empty((0,)).shape', None, None, (0,)),
    ('T.zeros(2, dtype=float)', 'float64', (2,), [0.0, 0.0]),
    ('T.zeros(2, dtype=int)', 'int64', (2,), [0, 0]),
    ('T.zeros(2, dtype=bool)', 'bool', (2,), [False, False]),
    ('T.zeros(2, dtype=complex)', 'complex128', (2,), [[0.0, 0.0], [0.0, 0.0]]),
    ('T.full((2, 3), 1.5)', 'float32', (2, 3), [[1.5, 1.5, 1.5], [1.5, 1.5, 1.5]]),
    ('T.full((2,), 1)', 'int64', (2,), [1, 1]),
    ('T.full([2], True)', 'bool', (2,), [True, True]),
    ('T.full((2,), 1j)', 'complex64', (2,), [[0.0, 0.0], [1.0, 1.0]]),
    ('T.full((), 2)', 'int64', (), 2),
    ('T.full((2,), T.tensor(1.5))', 'float32', (2,), [1.5, 1.5]),
    ('T.full((2,), T.tensor(1, dtype=T.int32))', 'int64', (2,), [1, 1]),
    ('T.full((2,), 1.5, dtype=T.int64)', 'int64', (2,), [1, 1]),
    ('T.full((2,), -1.5, dtype=T.int32)', 'int32', (2,), [-1, -1]),
    ('T.full((2,), 5, dtype=T.bool)', 'bool', (2,), [True, True]),
    ('T.full((2,), -1, dtype=T.uint8)', 'uint8', (2,), [255, 255]),
    ("T.full((2,), float('nan'))", 'float32', (2,), [nan, nan]),
    ('T.full((1, 2), 3, dtype=T.float64)', 'float64', (1, 2), [[3.0, 3.0]]),
    ('T.full((2,), np.float64(2.5))', 'float32', (2,), [2.5, 2.5]),
    ('T.zeros_like(T.ones(2, 3))', 'float32', (2, 3), [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]),
    ('T.zeros_like(T.ones(2), dtype=T.int32)', 'int32', (2,), [0, 0]),
    ('T.ones_like(T.ones(2, 3, dtype=T.int16))', 'int16', (2, 3), [[1, 1, 1], [1, 1, 1]]),
    ('T.ones_like(T.ones(2), dtype=T.bool)', 'bool', (2,), [True, True]),
    ('T.empty_like(T.ones(2, dtype=T.float64)).shape', None, None, (2,)),
    ('T.full_like(T.tensor([1, 2]), 2.7)', 'int64', (2,), [2, 2]),
    ('T.full_like(T.ones(2), True)', 'float32', (2,), [1.0, 1.0]),
    ('T.full_like(T.ones(2, dtype=T.complex64), 1j)', 'complex64', (2,), [[0.0, 0.0], [1.0, 1.0]]),
    ('T.full_like(T.ones(2), 7, dtype=T.int8)', 'int8', (2,), [7, 7]),
    ('T.scalar_tensor(3)', 'float32', (), 3.0),
    ('T.scalar_tensor(True)', 'float32', (), 1.0),
    ('T.scalar_tensor(3, dtype=T.int32)', 'int32', (), 3),
    ('T.scalar_tensor(T.tensor(2.))', 'float32', (), 2.0),
    ('T.scalar_tensor(2.5, dtype=T.float64)', 'float64', (), 2.5),
    ('T.scalar_tensor(1j, dtype=T.complex64)', 'complex64', (), [0.0, 1.0]),
    ('T.eye(3)', 'float32', (3, 3), [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]),
    ('T.eye(2, 3)', 'float32', (2, 3), [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]),
    ('T.eye(3, 2)', 'float32', (3, 2), [[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]),
    ('T.eye(0)', 'float32', (0, 0), []),
    ('T.eye(2, dtype=T.bool)', 'bool', (2, 2), [[True, False], [False, True]]),
    ('T.eye(3, m=2)', 'float32', (3, 2), [[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]),
    ('T.eye(2, dtype=T.int64)', 'int64', (2, 2), [[1, 0], [0, 1]]),
    ('T.eye(1, 0)', 'float32', (1, 0), [[]]),
    ('T.empty_strided((2, 3), (1, 2)).stride()', None, None, (1, 2)),
    ('T.empty_strided((2, 3), (3, 1)).stride()', None, None, (3, 1)),
    ('T.empty_strided((2, 3), (0, 0)).stride()', None, None, (0, 0)),
    ('T.empty_strided((2, 3), (1, 2)).shape', None, None, (2, 3)),
    ('T.empty_strided((2, 0), (1, 1)).shape', None, None, (2, 0)),
    ('T.empty_strided((), ()).shape', None, None, ()),
    ('T.empty_strided((2, 3), (1, 2)).is_contiguous()', None, None, False),
    ('T.empty_strided((2, 3), (3, 1)).is_contiguous()', None, None, True),
    ('T.tril_indices(3, 3)', 'int64', (2, 6), [[0, 1, 1, 2, 2, 2], [0, 0, 1, 0, 1, 2]]),
    ('T.triu_indices(3, 4, 1)', 'int64', (2, 6), [[0, 0, 0, 1, 1, 2], [1, 2, 3, 2, 3, 3]]),
    ('T.tril_indices(4, 3, -1)', 'int64', (2, 6), [[1, 2, 2, 3, 3, 3], [0, 0, 1, 0, 1, 2]]),
    ('T.triu_indices(2, 2, -1)', 'int64', (2, 4), [[0, 0, 1, 1], [0, 1, 0, 1]]),
    ('T.tril_indices(0, 0)', 'int64', (2, 0), [[], []]),
    ('T.tril_indices(3, 3, dtype=T.int32)',
     'int32',
     (2, 6),
     [[0, 1, 1, 2, 2, 2], [0, 0, 1, 0, 1, 2]]),
    ('T.from_numpy(np.array([1.5, 2.5]))', 'float64', (2,), [1.5, 2.5]),
    ('T.from_numpy(np.array([[1, 2]], dtype=np.int16))', 'int16', (1, 2), [[1, 2]]),
    ('T.from_numpy(np.array(True))', 'bool', (), True),
]

ERROR_CASES = [
    ('T.tensor([[1, 2], [3]])', 'ValueError', 'expected sequence of length 2 at dim 1 (got 1)'),
    ('T.tensor([[1, 2, 3], [3, 4]])',
     'ValueError',
     'expected sequence of length 3 at dim 1 (got 2)'),
    ('T.tensor([[1, 2], 3])', 'TypeError', 'not a sequence'),
    ('T.tensor([1, [2, 3]])', 'TypeError', "'list' object cannot be interpreted as an integer"),
    ('T.tensor([1., [2., 3.]])', 'TypeError', 'must be real number, not list'),
    ('T.tensor([[[1, 2], [3, 4]], [[1, 2], [3]]])',
     'ValueError',
     'expected sequence of length 2 at dim 2 (got 1)'),
    ("T.tensor('a')", 'TypeError', "new(): invalid data type 'str'"),
    ("T.tensor(['a'])", 'ValueError', "too many dimensions 'str'"),
    ("T.tensor([[1, 2], [3, 'a']])", 'TypeError', "new(): invalid data type 'str'"),
    ('T.tensor([None])', 'RuntimeError', 'Could not infer dtype of NoneType'),
    ('T.tensor(None)', 'RuntimeError', 'Could not infer dtype of NoneType'),
    ('T.tensor([1, None])', 'RuntimeError', 'Could not infer dtype of NoneType'),
    ('T.tensor([1, object()])', 'RuntimeError', 'Could not infer dtype of object'),
    ('T.tensor(object())', 'RuntimeError', 'Could not infer dtype of object'),
    ('T.tensor({1, 2})', 'RuntimeError', 'Could not infer dtype of set'),
    ('T.tensor([None], dtype=T.float32)', 'TypeError', 'must be real number, not NoneType'),
    ('T.tensor([300], dtype=T.uint8)',
     'RuntimeError',
     'value cannot be converted to type uint8 without overflow'),
    ('T.tensor([-256], dtype=T.uint8)',
     'RuntimeError',
     'value cannot be converted to type uint8 without overflow'),
    ('T.tensor([128], dtype=T.int8)',
     'RuntimeError',
     'value cannot be converted to type int8 without overflow'),
    ('T.tensor([-129], dtype=T.int8)',
     'RuntimeError',
     'value cannot be converted to type int8 without overflow'),
    ('T.tensor([1e20], dtype=T.int64)',
     'RuntimeError',
     'value cannot be converted to type int64 without overflow'),
    ('T.tensor([2.5e9], dtype=T.int32)',
     'RuntimeError',
     'value cannot be converted to type int32 without overflow'),
    ('T.tensor([300.], dtype=T.uint8)',
     'RuntimeError',
     'value cannot be converted to type uint8 without overflow'),
    ('T.tensor([-1.], dtype=T.uint8)',
     'RuntimeError',
     'value cannot be converted to type uint8 without overflow'),
    ("T.tensor([float('inf')], dtype=T.int64)",
     'RuntimeError',
     'value cannot be converted to type int64 without overflow'),
    ("T.tensor([float('nan')], dtype=T.int32)",
     'RuntimeError',
     'value cannot be converted to type int32 without overflow'),
    ('T.tensor([2**63])', 'ValueError', 'Overflow when unpacking long long'),
    ('T.tensor([2**64])', 'ValueError', 'Overflow when unpacking long long'),
    ('T.tensor(2**63)', 'ValueError', 'Overflow when unpacking long long'),
    ('T.tensor([2**63], dtype=T.uint8)', 'ValueError', 'Overflow when unpacking long long'),
    ('T.tensor([1.5 + 2j], dtype=T.float32)', 'TypeError', 'must be real number, not complex'),
    ('T.tensor([1j], dtype=T.int64)',
     'TypeError',
     "'complex' object cannot be interpreted as an integer"),
    ('T.tensor([1 + 0j], dtype=T.float32)', 'TypeError', 'must be real number, not complex'),
    ('T.tensor([T.tensor([1., 2.]), [3., 4.]])',
     'ValueError',
     'only one element tensors can be converted to Python scalars'),
    ('T.tensor([np.array([1., 2.]), np.array([3.])])',
     'ValueError',
     'expected sequence of length 2 at dim 1 (got 1)'),
    ('T.tensor([np.array(1.), 2])', 'TypeError', 'len() of unsized object'),
    ('T.tensor(np.int64(300), dtype=T.uint8)',
     'RuntimeError',
     'value cannot be converted to type uint8 without overflow'),
    ('T.tensor([np.int64(300)], dtype=T.uint8)',
     'RuntimeError',
     'value cannot be converted to type uint8 without overflow'),
    ('T.tensor([1, 2], requires_grad=True)',
     'RuntimeError',
     'Only Tensors of floating point and complex dtype can require gradients'),
    ("T.tensor([1, 2], dtype='float32')",
     'TypeError',
     "tensor(): argument 'dtype' must be torch.dtype, not str"),
    ('T.zeros(2.5)',
     'TypeError',
     "zeros(): argument 'size' (position 1) must be tuple of ints, not float"),
    ('T.zeros((2, 2.5))',
     'TypeError',
     'zeros(): argument \'size\' failed to unpack the object at pos 2 with error "type must be '
     'tuple of ints,but got float"'),
    ('T.zeros(2, 2.5)',
     'TypeError',
     'zeros(): argument \'size\' failed to unpack the object at pos 2 with error "type must be '
     'tuple of ints,but got float"'),
    ('T.zeros(2, None)',
     'TypeError',
     'zeros(): argument \'size\' failed to unpack the object at pos 2 with error "type must be '
     'tuple of ints,but got NoneType"'),
    ("T.ones((2, 'a'))",
     'TypeError',
     'ones(): argument \'size\' failed to unpack the object at pos 2 with error "type must be '
     'tuple of ints,but got str"'),
    ('T.zeros(-1)', 'RuntimeError', 'zeros: Dimension size must be non-negative.'),
    ('T.zeros(2, -3)', 'RuntimeError', 'zeros: Dimension size must be non-negative.'),
    ('T.ones(-1)', 'RuntimeError', 'Trying to create tensor with negative dimension -1: [-1]'),
    ('T.empty(-1)', 'RuntimeError', 'Trying to create tensor with negative dimension -1: [-1]'),
    ('T.full((-1,), 1.)',
     'RuntimeError',
     'Trying to create tensor with negative dimension -1: [-1]'),
    ('T.zeros(True)',
     'TypeError',
     "zeros(): argument 'size' (position 1) must be tuple of ints, not bool"),
    ('T.zeros((2,), (3,))', 'TypeError', 'zeros() takes 1 positional argument but 2 were given'),
    ("T.zeros('a')",
     'TypeError',
     "zeros(): argument 'size' (position 1) must be tuple of ints, not str"),
    ('T.zeros(None)',
     'TypeError',
     "zeros(): argument 'size' (position 1) must be tuple of ints, not NoneType"),
    ('T.zeros()', 'TypeError', 'zeros() missing 1 required positional arguments: "size"'),
    ("T.zeros(2, dtype='float32')",
     'TypeError',
     "zeros(): argument 'dtype' must be torch.dtype, not str"),
    ('T.zeros(2, dtype=np.float32)',
     'TypeError',
     "zeros(): argument 'dtype' must be torch.dtype, not type"),
    ('T.zeros(2, out=T.ones(3), dtype=T.int32)',
     'RuntimeError',
     'dtype Int does not match dtype of out parameter (Float)'),
    ('T.ones(2, dtype=T.int64, requires_grad=True)',
     'RuntimeError',
     'Only Tensors of floating point and complex dtype can require gradients'),
    ('T.zeros_like([1, 2])',
     'TypeError',
     "zeros_like(): argument 'input' (position 1) must be Tensor, not list"),
    ('T.ones_like(None)',
     'TypeError',
     "ones_like(): argument 'input' (position 1) must be Tensor, not NoneType"),
    ('T.full(3, 1.)',
     'TypeError',
     "full(): argument 'size' (position 1) must be tuple of ints, not int"),
    ('T.full((2,), 300, dtype=T.uint8)',
     'RuntimeError',
     'value cannot be converted to type uint8_t without overflow'),
    ("T.full((2,), float('nan'), dtype=T.int64)",
     'RuntimeError',
     'value cannot be converted to type int64_t without overflow'),
    ('T.full((2,), 1j, dtype=T.float32)',
     'RuntimeError',
     'value cannot be converted to type float without overflow'),
    ('T.full((2,), 1e40, dtype=T.float32)',
     'RuntimeError',
     'value cannot be converted to type float without overflow'),
    ('T.full((2,), 1j, dtype=T.float64)',
     'RuntimeError',
     'value cannot be converted to type double without overflow'),
    ('T.full((2,), 2**40, dtype=T.int32)',
     'RuntimeError',
     'value cannot be converted to type int without overflow'),
    ('T.full((2,), 1j, dtype=T.int16)',
     'RuntimeError',
     'value cannot be converted to type int16_t without overflow'),
    ('T.full((2,), 1e40, dtype=T.float16)',
     'RuntimeError',
     'value cannot be converted to type c10::Half without overflow'),
    ('T.full((2, 2), 1e5, dtype=T.float16)',
     'RuntimeError',
     'value cannot be converted to type c10::Half without overflow'),
    ('T.full((2,), 1e40, dtype=T.bfloat16)',
     'RuntimeError',
     'value cannot be converted to type c10::BFloat16 without overflow'),
    ("T.full_like(T.tensor([1, 2]), float('nan'))",
     'RuntimeError',
     'value cannot be converted to type int64_t without overflow'),
    ('T.full_like(T.tensor([1, 2], dtype=T.uint8), 300)',
     'RuntimeError',
     'value cannot be converted to type uint8_t without overflow'),
    ('T.full_like(T.ones(2), 1j)',
     'RuntimeError',
     'value cannot be converted to type float without overflow'),
    ('T.scalar_tensor(1j)',
     'RuntimeError',
     'value cannot be converted to type float without overflow'),
    ('T.scalar_tensor(1e40)',
     'RuntimeError',
     'value cannot be converted to type float without overflow'),
    ('T.scalar_tensor(300, dtype=T.int8)',
     'RuntimeError',
     'value cannot be converted to type int8_t without overflow'),
    ('T.eye(-1)', 'RuntimeError', 'n must be greater or equal to 0, got -1'),
    ('T.eye(2, -1)', 'RuntimeError', 'm must be greater or equal to 0, got -1'),
    ('T.eye(2.5)', 'TypeError', "eye(): argument 'n' (position 1) must be int, not float"),
    ('T.eye(2, 2.5)', 'TypeError', ''),
    ('T.empty_strided((2, 3), (1,))',
     'RuntimeError',
     'dimensionality of sizes (2) must match dimensionality of strides (1)'),
    ('T.empty_strided((2, 3), (-1, 2))',
     'RuntimeError',
     'Storage size calculation overflowed with sizes=[2, 3] and strides=[-1, 2]'),
    ('T.asarray(np.ones(2), copy=False, dtype=T.float32)',
     'ValueError',
     "can't alias tensor with dtype 'Double' into dtype 'Float'."),
    ('T.asarray(T.ones(2), copy=False, dtype=T.float64)',
     'ValueError',
     "can't alias tensor with dtype 'Float' into dtype 'Double'."),
    ('T.from_numpy([1])', 'TypeError', 'expected np.ndarray (got list)'),
    ('T.arange(0, 5, 0)', 'RuntimeError', 'step must be nonzero'),
    ('T.arange(5, 0)', 'RuntimeError', 'upper bound and lower bound inconsistent with step sign'),
    ('T.arange(-5)', 'RuntimeError', 'upper bound and lower bound inconsistent with step sign'),
    ("T.arange(0, float('inf'))", 'RuntimeError', 'unsupported range: 0 -> inf'),
    ("T.arange(float('nan'))", 'RuntimeError', 'unsupported range: 0 -> nan'),
    ('T.arange(0, 2.5, 0.5, dtype=T.int64)', 'ValueError', 'step must be nonzero'),
    ('T.arange(5, dtype=T.bool)',
     'NotImplementedError',
     '"arange_cpu" not implemented for \'Bool\''),
    ('T.arange(1j)', 'RuntimeError', 'value cannot be converted to type double without overflow'),
    ('T.arange(0, 5, -1)',
     'RuntimeError',
     'upper bound and lower bound inconsistent with step sign'),
    ('T.linspace(0, 1, -1)', 'RuntimeError', 'number of steps must be non-negative'),
    ('T.linspace(0, 1, 2.5)', 'TypeError', ''),
    ('T.linspace(0, 1, 3, dtype=T.bool)',
     'NotImplementedError',
     '"linspace_cpu" not implemented for \'Bool\''),
    ('T.linspace(T.tensor([0.]), 1, 3)',
     'RuntimeError',
     'linspace only supports 0-dimensional start and end tensors, but got start with 1 '
     'dimension(s).'),
    ('T.linspace(0, T.ones(2), 3)',
     'RuntimeError',
     'linspace only supports 0-dimensional start and end tensors, but got end with 1 '
     'dimension(s).'),
    ('T.logspace(0, 1, -1)', 'RuntimeError', 'number of steps must be non-negative'),
    ('T.logspace(0, 1, 3, dtype=T.bool)',
     'NotImplementedError',
     '"logspace_cpu" not implemented for \'Bool\''),
    ('T.linspace(0, 1j, 3, dtype=T.float16)',
     'RuntimeError',
     "torch.linspace(): inferred dtype c10::complex<float> can't be safely cast to passed "
     'dtype Half'),
    ('T.linspace(0, 1j, 3, dtype=T.int8)',
     'RuntimeError',
     "torch.linspace(): inferred dtype c10::complex<float> can't be safely cast to passed "
     'dtype Char'),
    ('T.linspace(0, 1e5, 3, dtype=T.float16)',
     'RuntimeError',
     'value cannot be converted to type c10::Half without overflow'),
    ('T.linspace(-300, 1, 3, dtype=T.uint8)',
     'RuntimeError',
     'value cannot be converted to type uint8_t without overflow'),
    ('T.linspace(-18.9, 1, 14, dtype=T.uint8)',
     'RuntimeError',
     'value cannot be converted to type uint8_t without overflow'),
    ('T.logspace(0, 1e40, 3, dtype=T.float32)',
     'RuntimeError',
     'value cannot be converted to type float without overflow'),
    ('T.logspace(-3.875, 1.69, 9, dtype=T.uint8)',
     'RuntimeError',
     'value cannot be converted to type uint8_t without overflow'),
    ('T.logspace(0, 1e40, 3, dtype=T.bfloat16)',
     'RuntimeError',
     'value cannot be converted to type c10::BFloat16 without overflow'),
    ('T.arange(-0.59, dtype=T.int64)',
     'RuntimeError',
     'upper bound and lower bound inconsistent with step sign'),
    ('T.arange(-17, -2.29, -0.5, dtype=T.int64)',
     'RuntimeError',
     'upper bound and lower bound inconsistent with step sign'),
    ('T.linspace(300, 1, 1, dtype=T.uint8)',
     'RuntimeError',
     'value cannot be converted to type uint8_t without overflow'),
    ('T.tril_indices(-1, 3)', 'RuntimeError', 'row must be non-negative, got-1'),
    ('T.triu_indices(3, -2)', 'RuntimeError', 'col must be non-negative, got-2'),
    ('T.tril_indices(3, 3, dtype=T.float32)',
     'NotImplementedError',
     '"tril_indices" not implemented for \'Float\''),
    ('T.tril_indices(3, 3, dtype=T.int16)',
     'NotImplementedError',
     '"tril_indices" not implemented for \'Short\''),
    ('T.tril_indices(2.5, 3)',
     'TypeError',
     "tril_indices(): argument 'row' (position 1) must be int, not float"),
]


RANGE_CASES = [
    ('T.arange(5)', 'int64', [0, 1, 2, 3, 4]),
    ('T.arange(5.)', 'float32', [0.0, 1.0, 2.0, 3.0, 4.0]),
    ('T.arange(1, 4, 0.5)', 'float32', [1.0, 1.5, 2.0, 2.5, 3.0, 3.5]),
    ('T.arange(0, 1, 0.1)',
     'float32',
     [0.0, 0.10000000149011612, 0.20000000298023224, 0.30000001192092896, 0.4000000059604645, 0.5,
      0.6000000238418579, 0.699999988079071, 0.800000011920929, 0.8999999761581421]),
    ('T.arange(10, 0, -3)', 'int64', [10, 7, 4, 1]),
    ('T.arange(0, 1, 0.3, dtype=T.float16)',
     'float16',
     [0.0, 0.300048828125, 0.60009765625, 0.89990234375]),
    ('T.arange(-1.5, 2.5)', 'float32', [-1.5, -0.5, 0.5, 1.5]),
    ('T.arange(0.5)', 'float32', [0.0]),
    ('T.arange(5, 5)', 'int64', []),
    ('T.arange(True)', 'int64', [0]),
    ('T.arange(1, 2.5, 0.5, dtype=T.float64)', 'float64', [1.0, 1.5, 2.0]),
    ('T.arange(0, 10, 3, dtype=T.int32)', 'int32', [0, 3, 6, 9]),
    ('T.arange(0.5, 3, 1, dtype=T.int64)', 'int64', [0, 1, 2]),
    ('T.arange(0.5, 3, 1, dtype=T.int32)', 'int32', [0, 1, 2]),
    ('T.arange(-3, 3, 2, dtype=T.int8)', 'int8', [-3, -1, 1]),
    ('T.arange(1, -1, -0.25)', 'float32', [1.0, 0.75, 0.5, 0.25, 0.0, -0.25, -0.5, -0.75]),
    ('T.arange(0, 1, 1/3)', 'float32', [0.0, 0.3333333432674408, 0.6666666865348816]),
    ('T.arange(T.tensor(5))', 'int64', [0, 1, 2, 3, 4]),
    ('T.arange(T.tensor(5, dtype=T.int32))', 'int64', [0, 1, 2, 3, 4]),
    ('T.arange(T.tensor(2.5))', 'float32', [0.0, 1.0, 2.0]),
    ('T.arange(start=1, end=4)', 'int64', [1, 2, 3]),
    ('T.arange(end=4)', 'int64', [0, 1, 2, 3]),
    ('T.arange(0, 5, 2, dtype=T.bfloat16)', 'bfloat16', [0.0, 2.0, 4.0]),
    ('T.arange(1e6, 1e6 + 5)', 'float32', [1000000.0, 1000001.0, 1000002.0, 1000003.0, 1000004.0]),
    ('T.arange(0, 3, 1, dtype=T.uint8)', 'uint8', [0, 1, 2]),
    ('T.arange(0, 1.5, 0.5, dtype=T.int32)', 'int32', [0, 0, 0]),
    ('T.arange(0, 3, 1.5, dtype=T.int16)', 'int16', [0, 1]),
    ('T.arange(0, 3, 1.5)', 'float32', [0.0, 1.5]),
    ('T.arange(0, 3, 1.5, dtype=T.int64)', 'int64', [0, 1, 2]),
    ('T.linspace(0, 1, 5)', 'float32', [0.0, 0.25, 0.5, 0.75, 1.0]),
    ('T.linspace(0, 10, 4, dtype=T.int64)', 'int64', [0, 3, 6, 10]),
    ('T.linspace(0, 1, 0)', 'float32', []),
    ('T.linspace(0, 1, 1)', 'float32', [0.0]),
    ('T.linspace(-1, 1, 7, dtype=T.float64)',
     'float64',
     [-1.0, -0.6666666666666667, -0.33333333333333337, 5.551115123125783e-17, 0.33333333333333337,
      0.6666666666666667, 1.0]),
    ('T.linspace(1j, 2, 3)', 'complex64', [[0.0, 1.0], [1.0, 0.5], [2.0, 0.0]]),
    ('T.linspace(T.tensor(0.), T.tensor(1.), 3)', 'float32', [0.0, 0.5, 1.0]),
    ('T.linspace(T.tensor(0, dtype=T.int32), 5, 3)', 'float32', [0.0, 2.5, 5.0]),
    ('T.linspace(3, -3, 5, dtype=T.int32)', 'int32', [3, 1, 0, -1, -3]),
    ('T.linspace(0, 1, 11, dtype=T.float16)',
     'float16',
     [0.0, 0.0999755859375, 0.199951171875, 0.2998046875, 0.39990234375, 0.5, 0.60009765625,
      0.7001953125, 0.7998046875, 0.89990234375, 1.0]),
    ('T.linspace(0, 1, 9, dtype=T.bfloat16)',
     'bfloat16',
     [0.0, 0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 0.875, 1.0]),
    ('T.linspace(-5, 5, 20)',
     'float32',
     [-5.0, -4.473684310913086, -3.9473683834075928, -3.4210524559020996, -2.8947367668151855,
      -2.3684210777282715, -1.8421051502227783, -1.3157893419265747, -0.7894735336303711,
      -0.2631577253341675, 0.2631577253341675, 0.7894735336303711, 1.3157893419265747,
      1.8421051502227783, 2.3684210777282715, 2.8947367668151855, 3.4210524559020996,
      3.9473683834075928, 4.473684310913086, 5.0]),
    ('T.linspace(0.1, 0.9, 3, dtype=T.int64)', 'int64', [0, 0, 0]),
    ('T.logspace(0, 2, 3)', 'float32', [1.0, 10.0, 100.0]),
    ('T.logspace(0, 2, 3, base=2)', 'float32', [1.0, 2.0, 4.0]),
    ('T.logspace(0, 3, 4, dtype=T.int64)', 'int64', [1, 10, 100, 1000]),
    ('T.logspace(0, 1, 3, base=2.5)', 'float32', [1.0, 1.5811388492584229, 2.5]),
    ('T.logspace(-2, 2, 5, dtype=T.float64)', 'float64', [0.01, 0.1, 1.0, 10.0, 100.0]),
    ('T.logspace(0, 1, 0)', 'float32', []),
    ('T.logspace(1, 1, 1)', 'float32', [10.0]),
    ('T.logspace(0, 4, 5, base=3, dtype=T.int32)', 'int32', [1, 3, 9, 27, 81]),
    ('T.logspace(4.8425, -3.5, 1, dtype=T.int32)', 'int32', [69582]),
    ('T.logspace(0.5, 4.0, 8, dtype=T.int32)', 'int32', [1, 3, 13, 51, 193, 719, 2682, 10000]),
    ('T.logspace(2.75, 1.75, 11, dtype=T.uint8)',
     'uint8',
     [100, 79, 63, 50, 39, 31, 25, 19, 15, 12, 10]),
    ('T.logspace(-1.0, 3.675, 8, dtype=T.bfloat16)',
     'bfloat16',
     [0.10009765625, 0.466796875, 2.1875, 10.1875, 46.0, 215.0, 1004.0, 4704.0]),
    ('T.logspace(4.775, 4.75, 7, dtype=T.bfloat16)',
     'bfloat16',
     [60416.0, 59648.0, 58880.0, 58368.0, 57600.0, 56832.0, 56320.0]),
    ('T.logspace(2.025, -0.725, 9, dtype=T.bfloat16)',
     'bfloat16',
     [107.5, 48.75, 22.125, 10.0, 4.4375, 2.015625, 0.9140625, 0.4140625, 0.1875]),
    ('T.logspace(-2, 2, 9, dtype=T.float16)',
     'float16',
     [0.01000213623046875, 0.0316162109375, 0.0999755859375, 0.316162109375, 1.0, 3.162109375,
      10.0, 31.625, 100.0]),
    ('T.logspace(0, 1j, 3)',
     'complex64',
     [[1.0, 0.0], [0.40730729699134827, 0.9132911562919617],
      [-0.6682015657424927, 0.7439802885055542]]),
    ('T.logspace(1, 2, 3, base=-2.0, dtype=T.float64)', 'float64', [-2.0, nan, 4.0]),
    ('T.linspace(-19, 2.89, 5, dtype=T.uint8)', 'uint8', [237, 178, 119, 60, 2]),
    ('T.linspace(4.652, -2.863, 21, dtype=T.int32)',
     'int32',
     [4, 3, 3, 3, 2, 2, 2, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, -1, -1, -1, -2]),
    ('T.linspace(-16, 4.0, 16)',
     'float32',
     [-16.0, -14.666666984558105, -13.333333015441895, -12.0, -10.666666030883789,
      -9.333333015441895, -8.0, -6.666666507720947, -5.333333492279053, -4.0, -2.6666669845581055,
      -1.3333334922790527, -1.1920928955078125e-07, 1.3333332538604736, 2.6666665077209473, 4.0]),
    ('T.linspace(-16, 4.0, 16, dtype=T.int64)',
     'int64',
     [-16, -14, -13, -12, -10, -9, -8, -6, -5, -3, -2, -1, 0, 1, 2, 4]),
    ('T.linspace(1.7, 5, 1, dtype=T.int64)', 'int64', [1]),
    ('T.linspace(0, 1e5, 3, dtype=T.bfloat16)', 'bfloat16', [0.0, 49920.0, 99840.0]),
    ('T.linspace(-300, 1, 3, dtype=T.float16)', 'float16', [-300.0, -149.5, 1.0]),
    ('T.linspace(0, 1, 3, dtype=T.complex128)',
     'complex128',
     [[0.0, 0.0], [0.5, 0.0], [1.0, 0.0]]),
    ('T.arange(0, 1e5, 3e4, dtype=T.float16)', 'float16', [0.0, 30000.0, 60000.0, inf]),
    ('T.arange(-1, 1e3, 300, dtype=T.uint8)', 'uint8', [255, 43, 87, 131]),
    ('T.arange(0.5, dtype=T.int64)', 'int64', []),
    ('T.arange(-0.5, 3, 1.5, dtype=T.int64)', 'int64', [0, 1, 2]),
]


NS = {"T": jitorch, "np": np}


def _eval(expr):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return eval(expr, dict(NS))


def _values(t):
    v = t.tolist()
    if t.is_complex():
        a = np.array(v, dtype=complex)
        return [a.real.tolist(), a.imag.tolist()]
    return v


def _same(a, b):
    """Exact equality of nested lists, with nan equal to nan."""
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return a == b and type(a) is type(b)


@pytest.mark.parametrize("expr,dtype,shape,values", VALUE_CASES,
                         ids=[c[0] for c in VALUE_CASES])
def test_creation_matches_pytorch(expr, dtype, shape, values):
    r = _eval(expr)
    if dtype is None:  # a non-tensor result (shape, strides, flags)
        assert (tuple(r) if isinstance(r, tuple) else r) == values
        return
    assert isinstance(r, jitorch.Tensor)
    assert r.dtype is getattr(jitorch, dtype)
    assert tuple(r.shape) == shape
    assert r._data.dtype == r.dtype.np  # storage invariant
    assert _same(_values(r), values), f"{_values(r)} != {values}"


@pytest.mark.parametrize("expr,exc,msg", ERROR_CASES, ids=[c[0] for c in ERROR_CASES])
def test_creation_errors_match_pytorch(expr, exc, msg):
    with pytest.raises(Exception) as info:
        _eval(expr)
    assert type(info.value).__name__ == exc, f"{type(info.value).__name__}: {info.value}"
    if msg:
        assert str(info.value).split("\n")[0] == msg


@pytest.mark.parametrize("expr,dtype,values", RANGE_CASES, ids=[c[0] for c in RANGE_CASES])
def test_ranges_match_pytorch(expr, dtype, values):
    r = _eval(expr)
    assert r.dtype is getattr(jitorch, dtype)
    got = _values(r)
    if r.is_complex():  # the table holds (real, imag) pairs
        values = np.array(values).reshape(-1, 2).T.tolist()
    assert len(got) == len(values)
    # PyTorch's vectorised kernels may differ in the last bit (FMA, vector width); integer
    # results and the endpoints of linspace/logspace are exact
    np.testing.assert_allclose(np.array(got, dtype=float), np.array(values, dtype=float),
                               rtol=1e-6, atol=1e-15)
    if not r.is_floating_point() and not r.is_complex():
        assert got == values
    if values and not r.is_complex() and ("linspace" in expr or "logspace" in expr):
        assert got[0] == values[0] and got[-1] == values[-1]


# --- semantics the tables can't express -----------------------------------------------------
def test_tensor_copies_but_as_tensor_and_from_numpy_share():
    a = np.arange(3.0)
    t, s, f = jitorch.tensor(a), jitorch.as_tensor(a), jitorch.from_numpy(a)
    a[0] = 42.0
    assert t.tolist() == [0.0, 1.0, 2.0]
    assert s.tolist() == [42.0, 1.0, 2.0] and f.tolist() == [42.0, 1.0, 2.0]
    assert s.dtype is jitorch.float64
    # a cast can't share
    c = jitorch.as_tensor(a, dtype=jitorch.float32)
    a[1] = -1.0
    assert c.tolist() == [42.0, 1.0, 2.0] and c.dtype is jitorch.float32


def test_as_tensor_and_asarray_return_the_tensor_itself():
    t = jitorch.ones(2)
    assert jitorch.as_tensor(t) is t
    assert jitorch.asarray(t) is t
    c = jitorch.asarray(t, copy=True)
    assert c is not t and not np.shares_memory(c._data, t._data)
    assert c.tolist() == [1.0, 1.0]
    r = jitorch.asarray(t, requires_grad=True)  # PyTorch sets the flag on the same tensor
    assert r is t and t.requires_grad


def test_asarray_shares_numpy_memory():
    a = np.zeros(3, dtype=np.float32)
    t = jitorch.asarray(a)
    a[2] = 5.0
    assert t.tolist() == [0.0, 0.0, 5.0] and t.dtype is jitorch.float32


def test_non_native_byte_order_is_rejected():
    a = np.array([1, 2], dtype=">i4")
    for f in (jitorch.tensor, jitorch.as_tensor, jitorch.from_numpy):
        with pytest.raises(ValueError, match="byte order different from the native"):
            f(a)


def test_tensor_from_tensor_warns_and_detaches():
    x = jitorch.tensor([1.0, 2.0], requires_grad=True)
    with pytest.warns(UserWarning, match="sourceTensor.detach\\(\\).clone\\(\\)"):
        y = jitorch.tensor(x)
    assert y.is_leaf and not y.requires_grad and y.tolist() == [1.0, 2.0]
    assert not np.shares_memory(y._data, x._data)
    with pytest.warns(UserWarning):
        z = jitorch.tensor(x, dtype=jitorch.float64, requires_grad=True)
    assert z.dtype is jitorch.float64 and z.requires_grad and z.is_leaf


@pytest.mark.parametrize("make", [
    lambda: jitorch.tensor([1.0, 2.0], requires_grad=True),
    lambda: jitorch.zeros(2, requires_grad=True),
    lambda: jitorch.ones(2, 2, requires_grad=True),
    lambda: jitorch.full((2,), 1.5, requires_grad=True),
    lambda: jitorch.arange(3.0, requires_grad=True),
    lambda: jitorch.linspace(0, 1, 3, requires_grad=True),
    lambda: jitorch.eye(2, requires_grad=True),
    lambda: jitorch.zeros_like(jitorch.ones(2), requires_grad=True),
])
def test_factories_make_leaves_that_require_grad(make):
    t = make()
    assert t.requires_grad and t.is_leaf and t.grad_fn is None


def test_out_argument_writes_and_resizes():
    o = jitorch.empty(5)
    r = jitorch.arange(3, out=o)
    assert r is o and o.tolist() == [0.0, 1.0, 2.0] and o.dtype is jitorch.float32
    o = jitorch.empty(2, dtype=jitorch.int32)
    assert jitorch.full((3,), 2, out=o) is o
    assert o.tolist() == [2, 2, 2] and o.dtype is jitorch.int32
    o = jitorch.empty(4, dtype=jitorch.int32)
    jitorch.eye(2, out=o)
    assert o.tolist() == [[1, 0], [0, 1]]
    o = jitorch.ones(2, 3)
    v = o._version[0]
    jitorch.zeros(2, 3, out=o)
    assert o.tolist() == [[0.0] * 3] * 2 and o._version[0] > v


@pytest.mark.parametrize("d", [jitorch.bool, jitorch.uint8, jitorch.int8, jitorch.int16,
                               jitorch.int32, jitorch.int64, jitorch.float16, jitorch.bfloat16,
                               jitorch.float32, jitorch.float64, jitorch.complex64,
                               jitorch.complex128], ids=lambda d: d.name)
def test_every_dtype_is_stored_exactly(d):
    made = [jitorch.zeros(2, dtype=d), jitorch.ones(2, 3, dtype=d), jitorch.empty(1, dtype=d),
            jitorch.full((2,), 1, dtype=d), jitorch.eye(2, dtype=d),
            jitorch.tensor([1, 0], dtype=d), jitorch.zeros_like(jitorch.ones(2), dtype=d),
            jitorch.empty_strided((2, 2), (1, 2), dtype=d), jitorch.scalar_tensor(1, dtype=d)]
    if d is not jitorch.bool and d.is_complex is False:
        made += [jitorch.arange(3, dtype=d), jitorch.linspace(0, 2, 3, dtype=d)]
    for t in made:
        assert t.dtype is d and t._data.dtype == d.np


def test_default_dtype_drives_inference():
    jitorch.set_default_dtype(jitorch.float64)
    try:
        assert jitorch.tensor([1.5]).dtype is jitorch.float64
        assert jitorch.tensor([1j]).dtype is jitorch.complex128
        assert jitorch.tensor([1, 2]).dtype is jitorch.int64
        assert jitorch.zeros(2).dtype is jitorch.float64
        assert jitorch.full((2,), 1.5).dtype is jitorch.float64
        assert jitorch.arange(1.5).dtype is jitorch.float64
        assert jitorch.linspace(0, 1, 3).dtype is jitorch.float64
        assert jitorch.linspace(0, 1j, 3).dtype is jitorch.complex128
        assert jitorch.eye(2).dtype is jitorch.float64
        assert jitorch.scalar_tensor(1).dtype is jitorch.float64
        assert jitorch.Tensor([1, 2]).dtype is jitorch.float64
    finally:
        jitorch.set_default_dtype(jitorch.float32)
    assert jitorch.tensor([1.5]).dtype is jitorch.float32


def test_tensor_constructor_class():
    t = jitorch.Tensor([1, 2])
    assert t.dtype is jitorch.float32 and t.tolist() == [1.0, 2.0]
    assert jitorch.Tensor(2, 3).shape == (2, 3)


def test_empty_strided_layout():
    t = jitorch.empty_strided((2, 3), (1, 2))
    assert t.stride() == (1, 2) and not t.is_contiguous()
    assert t.tolist() == [[0.0] * 3] * 2
    assert jitorch.empty_strided((2, 3), (3, 1)).is_contiguous()


def test_devices():
    assert jitorch.zeros(2, device="cpu").device == jitorch.device("cpu")
    assert jitorch.tensor([1], device=jitorch.device("cpu")).device.type == "cpu"
    if jitorch.cuda.is_available():  # (the cuda tier: tests/test_device.py)
        assert jitorch.zeros(2, device="cuda").is_cuda
    else:
        with pytest.raises(NotImplementedError):
            jitorch.zeros(2, device="cuda")


def test_large_nested_list_is_fast_and_exact():
    data = [[float(i) + 0.5 * j for j in range(100)] for i in range(1000)]
    t = jitorch.tensor(data)
    assert t.shape == (1000, 100) and t.dtype is jitorch.float32
    np.testing.assert_array_equal(t.numpy(), np.array(data, dtype=np.float32))


def test_tensor_always_makes_contiguous_copies():
    a = np.arange(6.0).reshape(2, 3).T
    t = jitorch.tensor(a)
    assert t.is_contiguous() and t.stride() == (2, 1) and t.tolist() == a.tolist()
    with pytest.warns(UserWarning):
        u = jitorch.tensor(jitorch.from_numpy(a), dtype=jitorch.float32)
    assert u.is_contiguous() and u.tolist() == a.tolist()
    assert not jitorch.as_tensor(a).is_contiguous()  # as_tensor aliases, like PyTorch
