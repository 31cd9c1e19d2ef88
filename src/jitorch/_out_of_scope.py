"""PyTorch's public names that jitorch leaves out of scope, each with its reason.

One table, read by the library and by bench/api_coverage.py: `jitorch.<name>` and
`Tensor.<name>` of such a name raise `NotImplementedError` naming the reason (also an
`AttributeError`, so `hasattr(jitorch, "xpu")`-style probes that libraries make answer False),
and the coverage count lists these names apart instead of as missing.
"""
from __future__ import annotations

# names with no jitorch counterpart, each with its reason (counted apart, not as missing):
# a key ending in "*" is a prefix, one starting with "*" a suffix, any other an exact name
_JIT_IR = ("AliasDb AnyType Argument ArgumentSpec AwaitType Block BoolType CallStack Capsule "
           "ClassType Code CompilationUnit CompleteArgumentSpec ComplexType ConcreteModuleType "
           "ConcreteModuleTypeBuilder DeepCopyMemoTable DeviceObjType DictType EnumType "
           "ErrorReport ExecutionPlan FileCheck FloatType FunctionSchema FutureType Gradient "
           "Graph GraphExecutorState IODescriptor InferredType IntType InterfaceType ListType "
           "LiteScriptModule LockingLogger LoggerBase Node NoneType NoopLogger NumberType "
           "OperatorInfo OptionalType PyObjectType RRefType ScriptClass ScriptClassFunction "
           "ScriptDict ScriptDictIterator ScriptDictKeyIterator ScriptList ScriptListIterator "
           "ScriptMethod ScriptModuleSerializer ScriptObject ScriptObjectProperty StaticModule "
           "StreamObjType StringType SymBoolType SymIntType TensorType TracingState TupleType "
           "Type UnionType Use Value import_ir_module import_ir_module_from_buffer parse_ir "
           "parse_schema parse_type_comment merge_type_from_type_comment unify_type_list "
           "DispatchKey DispatchKeySet ExcludeDispatchKeyGuard DisableTorchFunction "
           "DisableTorchFunctionSubclass AggregationType BenchmarkConfig "
           "BenchmarkExecutionStats ThroughputBenchmark PyTorchFileReader PyTorchFileWriter "
           "SerializationStorageContext DeserializationStorageContext FatalError "
           "BroadcastingList1 BroadcastingList2 BroadcastingList3 boolean_dispatch "
           "handle_torch_function has_torch_function has_torch_function_unary "
           "has_torch_function_variadic").split()
OUT_OF_SCOPE = {
    **{n: "TorchScript's C++ IR, type and dispatch classes (jitorch's IR is its own)"
       for n in _JIT_IR},
    "quantize*": "quantization (int8 kernels, observers)",
    "quantized_*": "quantized kernels",
    "q_*": "quantized tensors",
    "Q*": "quantized storages",
    "fake_quantize*": "quantization",
    "fused_moving_avg_obs_fake_quant": "quantization",
    "choose_qparams_optimized": "quantization",
    "int_repr": "quantized tensors",
    "dequantize": "quantization",
    "qscheme": "quantization",
    "fbgemm_*": "FBGEMM backend kernels",
    "mkldnn*": "oneDNN layout",
    "to_mkldnn": "oneDNN layout",
    "miopen_*": "ROCm MIOpen kernels",
    "cudnn_*": "cuDNN entry points",
    "nested_*": "nested tensors",
    "to_padded_tensor": "nested tensors",
    "vulkan*": "Vulkan backend",
    "is_vulkan*": "Vulkan backend",
    "xpu*": "Intel XPU backend",
    "mps*": "Apple MPS backend",
    "ipu*": "IPU backend",
    "hpu*": "HPU backend",
    "mtia*": "MTIA backend",
    "sym_*": "symbolic shapes (torch.fx / dynamo)",
    "Sym*": "symbolic shapes (torch.fx / dynamo)",
    "*_notes": "documentation strings",
    "sparse_csr_tensor": "compressed sparse layouts (only COO is in scope)",
    "sparse_csc_tensor": "compressed sparse layouts (only COO is in scope)",
    "sparse_bsr_tensor": "compressed sparse layouts (only COO is in scope)",
    "sparse_bsc_tensor": "compressed sparse layouts (only COO is in scope)",
    "sparse_compressed_tensor": "compressed sparse layouts (only COO is in scope)",
    "to_sparse_csr": "compressed sparse layouts (only COO is in scope)",
    "to_sparse_csc": "compressed sparse layouts (only COO is in scope)",
    "to_sparse_bsr": "compressed sparse layouts (only COO is in scope)",
    "to_sparse_bsc": "compressed sparse layouts (only COO is in scope)",
    "batch_norm_*": "SyncBatchNorm's distributed CUDA kernels",
    "SyncBatchNorm": "distributed CUDA batch norm",
    "grouped_mm": "CUDA grouped GEMM kernels",
    "scaled_grouped_mm": "CUDA float8 GEMM kernels",
    "scaled_mm": "CUDA float8 GEMM kernels",
    "ScalingType": "CUDA float8 GEMM kernels",
    "SwizzleType": "CUDA float8 GEMM kernels",
    "record_stream": "CUDA caching-allocator streams",
    "profiler_allow_cudagraph_cupti_lazy_reinit_cuda12": "CUDA profiler internals",
    "compiled_with_cxx11_abi": "C++ build ABI",
    "get_autocast_xla_dtype": "XLA backend",
    "set_autocast_xla_dtype": "XLA backend",
    "is_autocast_xla_enabled": "XLA backend",
    "set_autocast_xla_enabled": "XLA backend",
}


def out_of_scope(name: str) -> str | None:
    """The reason `name` is out of scope, or None."""
    if name in OUT_OF_SCOPE:
        return OUT_OF_SCOPE[name]
    for key, why in OUT_OF_SCOPE.items():
        if (key.endswith("*") and name.startswith(key[:-1])) or (
                key.startswith("*") and name.endswith(key[1:])):
            return why
    return None


class OutOfScope(NotImplementedError, AttributeError):
    """A PyTorch name jitorch does not implement, by design (the message says why)."""


def missing(owner: str, name: str, reason: str | None = None) -> Exception:
    """The error for `owner.name`: OutOfScope with its reason when the name is out of scope
    (`reason` given or found in the table), else the AttributeError Python would raise."""
    why = reason or out_of_scope(name)
    if why:
        return OutOfScope(f"{owner}.{name} is not implemented in jitorch: {why}")
    return AttributeError(f"{owner!s} has no attribute {name!r}")
