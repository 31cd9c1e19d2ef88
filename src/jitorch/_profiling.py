"""The profiler's switch, read by the places that emit events (no imports: anything may read it).

`collector[0]` is the active `jitorch.profiler._collector.Collector`, or None when no profiler
records. The emitting places check it once and do nothing else when it is None: eager op
dispatch (`_ops/registry.dispatch`), the compile log (`script/runtime/stats.log_compile`) and
`record_function`. Scripted calls are recorded by swapping `ScriptFunction.__call__` while a
collector is active (`_collector.py`), so their call path carries no check at all.
"""
collector: list = [None]
