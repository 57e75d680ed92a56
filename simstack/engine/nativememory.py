"""The native loop's memory log replayed into the replication's ``MemoryState``, as
``lifecycle``'s runners book each step at its time (a request's end frees its process).

Most entries of a large farm are a private ``alloc`` (or a ``restore``'s private part) and a
process's end on a host that records only its total (``memory_record: host``) and has no
capacity (the native subset's rule): each is then a sum and a row, booked here without
``MemoryState``'s calls (``alloc`` checks the capacity and formats what it is for; ``_changed``
looks for other processes to record). Every other entry goes through ``MemoryState`` itself, so
the rows, peaks and state are the same. The cyclic collector pauses meanwhile: the replay's
objects (a process per request, a row per entry) are none of them garbage, and its passes over
them took a fifth of the replay."""

from __future__ import annotations

import gc
import math
from typing import Any

import numpy as np

from simstack.errors import ModelError

MEM_ALLOC, MEM_WRITE, MEM_END, MEM_RESTORE, MEM_FORK = range(5)  # eventloop.c's log entries
TYPES = (np.int32, np.float64, np.int64, np.int32, np.int64, np.int32, np.float64)


def replay(r: Any, cols: tuple[bytes, ...], comp: Any) -> None:
    """The memory steps the loop logged (``cols``: op, time, request id, class, item, picker,
    value), in order, into ``r.memory``; ``comp`` is the run's ``nativecode.Compiler``."""
    mem = r.memory
    if mem is None or not cols[0]:
        return
    plain = {name for name, host in mem.hosts.items() if not host.detail and math.isinf(host.capacity)}
    collecting = gc.isenabled()
    gc.disable()  # the replay makes a process and rows per entry, none of them garbage: no passes over them
    try:
        _entries(mem, r.env, cols, comp, plain)
    finally:
        if collecting:
            gc.enable()


def _entries(mem: Any, env: Any, cols: tuple[bytes, ...], comp: Any, plain: set[str]) -> None:
    rep, rows, processes = mem.rep, mem.rows, mem.processes
    pickers, classes = comp.pickers, comp.classes
    data = zip(*(np.frombuffer(col, dtype=t).tolist() for col, t in zip(cols, TYPES, strict=True)), strict=True)
    for op, t, rid, cls, item, pick, value in data:
        proc = processes.get(rid)
        if op == MEM_END:
            if proc is None:
                continue
            host = proc.host
            if proc.maps or host.name not in plain:
                env._now = t
                mem.end(rid)
                continue
            del processes[rid], host.processes[rid]  # MemoryState.end of a process mapping nothing
            host.used -= proc.private
            proc.private = 0
            rows.append((rep, t, host.name, -1, "", 0, 0.0, host.used))
            continue
        hosts, path, shared = pickers[pick]
        if op == MEM_FORK and proc is None and not hosts:  # ForkRunner: no process, no pages to share
            continue
        env._now = t
        if proc is None:  # lifecycle._HostPicker.process
            if not hosts:
                raise ModelError("a memory step needs a host: give host: in the step, or run it on a host's "
                                 "CPU (a request with host:, or inside a hold of a thread pool)", path=path)
            proc = mem.process(rid, classes[cls], hosts[item % len(hosts)])
        if op == MEM_ALLOC and shared is None:
            nbytes = round(value)
            what = "alloc"
        elif op == MEM_RESTORE:  # the image shared copy-on-write by the host's restored processes, the rest private
            total = round(value)
            image = round(shared * total)
            if image:
                mem.map_shared(proc, f"checkpoint:{comp.restored[pick]}", image, True, "restoring the image")
            nbytes = total - image
            what = "restore"
        else:
            if op == MEM_ALLOC:
                mem.map_shared(proc, shared, round(value), False, f"mapping {shared!r}")
            elif op == MEM_WRITE:
                mem.write(proc, value, "writing copy-on-write pages")
            else:  # MEM_FORK: the child (the next id) maps the parent's pages copy-on-write
                mem.fork(proc, [int(value)], shared)
            continue
        host = proc.host  # the private bytes of an alloc or a restore
        if host.name not in plain:
            mem.alloc(proc, nbytes, f"alloc of {nbytes} B" if what == "alloc" else "restoring private memory")
            continue
        proc.private += nbytes  # MemoryState.alloc on a host without capacity or detail
        used = host.used = host.used + nbytes
        if used > host.peak:
            host.peak, host.peak_time = used, t
        rows.append((rep, t, host.name, -1, "", 0, 0.0, used))
