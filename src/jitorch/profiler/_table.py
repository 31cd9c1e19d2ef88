"""PyTorch's profiler table, column for column (`torch.autograd.profiler_util._build_table`).

Columns: Name, Self CPU %, Self CPU, CPU total %, CPU total, CPU time avg, then CPU Mem and Self
CPU Mem (profile_memory), # of Calls, Input Shapes (when any row has shapes: key_averages with
group_by_input_shape) and Source Location (when any row has a stack: group_by_stack_n, one
frame per line); a dashed rule above and below, and the "Self CPU time total: ..." footer.
Percentages are shares of the sum of the rows' self CPU times, as in PyTorch.
"""
from __future__ import annotations

_WIDTH = 12
_SPACING = 2


def format_time(time_us: float) -> str:
    if time_us >= 1e6:
        return f"{time_us / 1e6:.3f}s"
    if time_us >= 1e3:
        return f"{time_us / 1e3:.3f}ms"
    return f"{time_us:.3f}us"


def format_time_share(time_us: float, total_us: float) -> str:
    if total_us == 0:
        return "NaN"
    return f"{time_us * 100.0 / total_us:.2f}%"


def format_memory(nbytes: int) -> str:
    kb, mb, gb = 1024, 1024 ** 2, 1024 ** 3
    if abs(nbytes) >= gb:
        return f"{nbytes / gb:.2f} GB"
    if abs(nbytes) >= mb:
        return f"{nbytes / mb:.2f} MB"
    if abs(nbytes) >= kb:
        return f"{nbytes / kb:.2f} KB"
    return f"{nbytes} B"


def _unit(time_us: float, time_unit) -> str:
    if time_unit == "s":
        return f"{time_us / 1e6:.3f}s"
    if time_unit == "ms":
        return f"{time_us / 1e3:.3f}ms"
    if time_unit == "us":
        return f"{time_us:.3f}us"
    return format_time(time_us)


def _trim_path(path: str, width: int) -> str:
    if len(path) > width:
        path = path[len(path) - width:]
        if len(path) > 3:
            path = "..." + path[3:]
    return path


def build_table(events, *, row_limit=100, header=None, profile_memory=False,
                max_src_column_width=75, max_name_column_width=55, max_shapes_column_width=80,
                top_level_events_only=False, time_unit=None) -> str:
    if not events:
        return ""
    has_shapes = any(e.input_shapes for e in events)
    stacks = [e.stack for e in events if e.stack]
    name_w = max(len(e.key) for e in events) + 4
    if max_name_column_width is not None:
        name_w = min(name_w, max_name_column_width)
    shapes_w = max(len(str(e.input_shapes)) for e in events) + 4
    if max_shapes_column_width is not None:
        shapes_w = min(shapes_w, max_shapes_column_width)
    src_w = None
    if stacks:
        src_w = max(len(f) for s in stacks for f in s) + 4
        if max_src_column_width is not None:
            src_w = min(src_w, max_src_column_width)

    headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    if profile_memory:
        headers += ["CPU Mem", "Self CPU Mem"]
    headers.append("# of Calls")
    fmt, sep, width = "", "", -_SPACING

    def column(pad, align=">"):
        nonlocal fmt, sep, width
        fmt += "{: " + align + str(pad) + "}" + " " * _SPACING
        sep += "-" * pad + " " * _SPACING
        width += pad + _SPACING

    column(name_w)
    for _ in headers[1:]:
        column(_WIDTH)
    if has_shapes:
        headers.append("Input Shapes")
        column(shapes_w)
    if stacks:
        headers.append("Source Location")
        column(src_w, "<")

    total_self = sum(e.self_cpu_time_total for e in events)
    lines = []
    if header is not None:
        lines += ["=" * width, header]
    if top_level_events_only:
        lines += ["=" * width, "This report only display top-level ops statistics"]
    lines += [sep, fmt.format(*headers), sep]
    shown = 0
    for e in events:
        if shown == row_limit:
            break
        if top_level_events_only and e.cpu_parent is not None:
            continue
        shown += 1
        name = e.key
        if max_name_column_width is not None and len(name) >= max_name_column_width - 3:
            name = name[:max_name_column_width - 3] + "..."
        row = [name, format_time_share(e.self_cpu_time_total, total_self),
               _unit(e.self_cpu_time_total, time_unit),
               format_time_share(e.cpu_time_total, total_self),
               _unit(e.cpu_time_total, time_unit), _unit(e.cpu_time, time_unit)]
        if profile_memory:
            row += [format_memory(e.cpu_memory_usage), format_memory(e.self_cpu_memory_usage)]
        row.append(e.count)
        if has_shapes:
            row.append(str(e.input_shapes)[:shapes_w])
        if stacks:
            row.append(_trim_path(e.stack[0], src_w) if e.stack else "")
        lines.append(fmt.format(*row))
        if stacks:
            blank = [""] * (len(headers) - 1)
            for frame in (e.stack or [])[1:]:
                lines.append(fmt.format(*(blank + [_trim_path(frame, src_w)])))
            lines.append(fmt.format(*(blank + [""])))
    lines += [sep, f"Self CPU time total: {_unit(total_self, time_unit)}"]
    return "\n".join(lines) + "\n"
