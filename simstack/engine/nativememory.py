"""The native loop's memory log replayed into the replication's ``MemoryState``, as
``lifecycle``'s runners book each step at its time (a request's end frees its process).

Every entry is booked through ``MemoryState``'s own methods, at the time the loop logged it
(passed as ``now``), so the rows, peaks and state are SimPy's by construction. The cyclic
collector pauses meanwhile: the replay's objects (a process per request, a row per entry) are
none of them garbage, and its passes over them took a fifth of the replay."""

from __future__ import annotations

import gc
from typing import Any

import numpy as np

from simstack.errors import ModelError
from simstack.resources.memory import MemoryState

MEM_ALLOC, MEM_WRITE, MEM_END, MEM_RESTORE, MEM_FORK = range(5)  # eventloop.c's log entries
TYPES = (np.int32, np.float64, np.int64, np.int32, np.int64, np.int32, np.float64)


def replay(r: Any, cols: tuple[bytes, ...], comp: Any) -> None:
    """The memory steps the loop logged (``cols``: op, time, request id, class, item, picker,
    value), in order, into ``r.memory``; ``comp`` is the run's ``nativecode.Compiler``."""
    mem = r.memory
    if mem is None or not cols[0]:
        return
    collecting = gc.isenabled()
    gc.disable()  # the replay makes a process and rows per entry, none of them garbage: no passes over them
    try:
        _entries(mem, cols, comp)
    finally:
        if collecting:
            gc.enable()


def _entries(mem: MemoryState, cols: tuple[bytes, ...], comp: Any) -> None:
    processes, alloc, end = mem.processes, mem.alloc, mem.end
    pickers, classes = comp.pickers, comp.classes
    data = zip(*(np.frombuffer(col, dtype=t).tolist() for col, t in zip(cols, TYPES, strict=True)), strict=True)
    for op, t, rid, cls, item, pick, value in data:
        if op == MEM_END:
            if rid in processes:  # most requests of a fork run end holding no memory: no call
                end(t, rid)
            continue
        proc = processes.get(rid)
        hosts, path, shared = pickers[pick]
        if proc is None:  # lifecycle._HostPicker.process
            if op == MEM_FORK and not hosts:  # ForkRunner: no process, no pages to share
                continue
            if not hosts:
                raise ModelError("a memory step needs a host: give host: in the step, or run it on a host's "
                                 "CPU (a request with host:, or inside a hold of a thread pool)", path=path)
            proc = mem.process(rid, classes[cls], hosts[item % len(hosts)])
        if op == MEM_ALLOC:
            if shared is None:
                alloc(t, proc, round(value))
            else:
                mem.map_shared(t, proc, shared, round(value), False, f"mapping {shared!r}")
        elif op == MEM_RESTORE:  # the image shared copy-on-write by the host's restored processes, the rest private
            total = round(value)
            image = round(shared * total)
            if image:
                mem.map_shared(t, proc, f"checkpoint:{comp.restored[pick]}", image, True, "restoring the image")
            alloc(t, proc, total - image, "restoring private memory")
        elif op == MEM_WRITE:
            mem.write(t, proc, value, "writing copy-on-write pages")
        else:  # MEM_FORK: the child (the next id) maps the parent's pages copy-on-write
            mem.fork(t, proc, [int(value)], shared)
