"""`jitorch.profiler`: PyTorch's profiler API (`torch.profiler`). Re-exports only.

Records eager ops ("aten::<op>"), scripted/traced calls ("script::<name>"), compiles
("compile::<name>", with the reason and time) and `record_function` ranges, with input shapes,
allocated bytes and user stacks on request; `key_averages().table()`, `export_chrome_trace`,
`export_stacks` and `tensorboard_trace_handler` read them out in PyTorch's formats.
"""
from .events import EventList, FunctionEvent, FunctionEventAvg  # noqa: F401
from .profiler import (ProfilerAction, ProfilerActivity, profile,  # noqa: F401
                       schedule, supported_activities, tensorboard_trace_handler)
from .record_function import record_function  # noqa: F401

__all__ = ["profile", "record_function", "schedule", "ProfilerAction", "ProfilerActivity",
           "supported_activities", "tensorboard_trace_handler", "EventList", "FunctionEvent",
           "FunctionEventAvg"]
