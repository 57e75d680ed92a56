"""Memory as a resource: a host's RAM, the pages its processes map, and copy-on-write.

Think of ``top``'s columns. A process's *private* pages are its own (heap it wrote); a
*segment* is a set of physical pages several processes map: the pages a parent had when it
forked (copy-on-write), a shared library image, a restored checkpoint. RSS counts every
page a process maps; PSS divides each shared page by the number of processes mapping it;
the host's *used* memory counts each physical page once.

Accounting is exact and cheap: sizes are whole bytes, and a segment is one object with a
``holders`` map (process -> bytes of it that process has written), never one object per
page. Writes go to the *same* pages in every process, from the start of the segment (the
model says "40 % of the image is written", and it is the same 40 % in every child, as the
heap objects a trigger process updates are the same in all of them): a holder that wrote
``w`` bytes has private copies of ``[0, w)`` and still maps ``[w, size)``. A page at offset x
is then resident once if any holder has not written it (``w <= x``), so a segment costs
``size - min(w)`` physical bytes, and the holder's own copies sit in its private count.
(When the last holder of a page writes it, Linux reuses the page instead of copying: the
page count is the same either way.)

Out of memory: a request that would take a host past its capacity fails with a message
naming the host, the step and the sizes (the run goes on; nothing is swapped). Its memory
is freed when it ends, like every process's.

Every change is booked at a time its caller gives (``now``, the first argument): SimPy's
runners pass the clock, the native loop's replay (``simstack.engine.nativememory``) the time
it logged each step at. Both book through these same methods, so there is one account.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable

MEMORY_COLUMNS = ("rep", "time", "host", "process", "request", "rss", "pss", "used")
PEAK_COLUMNS = ("rep", "host", "capacity", "peak_used", "peak_time", "final_used", "out_of_memory")


class OutOfMemory(Exception):
    """A request for memory the host does not have; the step turns it into a failed request."""


class Segment:
    """Physical pages mapped by several processes (``holders``: pid -> bytes written).

    ``levels`` counts the holders at each write level, so what is resident (``size`` minus
    the lowest level) is known from the few distinct levels, not from every holder: a node's
    17 forked children write one after another, each against the other 17 holders. Holders
    change only through ``hold``, ``grow`` and ``leave``, which keep the two in step."""

    __slots__ = ("name", "size", "cow", "holders", "levels")

    def __init__(self, name: str, size: int, cow: bool):
        self.name = name
        self.size = size
        self.cow = cow  # copy-on-write (written pages become private); else read-only
        self.holders: dict[int, int] = {}
        self.levels: dict[int, int] = {}  # bytes written -> holders that wrote that much

    def hold(self, pid: int, written: int) -> None:
        """``pid`` maps the segment, having written its first ``written`` bytes."""
        self.holders[pid] = written
        self.levels[written] = self.levels.get(written, 0) + 1

    def grow(self, pid: int, grown: int) -> None:
        """``pid`` wrote ``grown`` bytes more (``_leave_level`` and ``hold`` in one: a fork run's
        every child writes once)."""
        holders, levels = self.holders, self.levels
        old = holders[pid]
        left = levels[old] - 1
        if left:
            levels[old] = left
        else:
            del levels[old]
        new = holders[pid] = old + grown
        levels[new] = levels.get(new, 0) + 1

    def leave(self, pid: int) -> None:
        self._leave_level(self.holders.pop(pid))

    def _leave_level(self, written: int) -> None:
        left = self.levels[written] - 1
        if left:
            self.levels[written] = left
        else:
            del self.levels[written]

    def resident(self) -> int:
        return self.size - min(self.levels) if self.levels else 0

    def shrinks_by(self, pid: int, new: int) -> int:
        """How much less would be resident once ``pid`` has written up to ``new`` (more than
        now): nothing while another holder stays at the lowest level; else the pages up to the
        next level (or to ``new``), which ``pid`` alone mapped and now has as its own."""
        levels = self.levels
        old = self.holders[pid]
        if levels[old] > 1 or old != min(levels):
            return 0
        return min([v for v in levels if v != old] + [new]) - old

    def shares(self) -> dict[int, float]:
        """Each holder's proportional share (its PSS part) of this segment, in bytes.

        Between two consecutive write levels v_j < v_j+1 the pages are mapped by the C_j
        holders that wrote at most v_j; a holder at level v_m gets sum_{j>=m} (v_j+1 - v_j) / C_j.
        """
        levels = sorted(self.levels)
        counts = self.levels
        cumulative = list(itertools.accumulate(counts[v] for v in levels))
        share_from: dict[int, float] = {}
        tail = 0.0
        for j in range(len(levels) - 1, -1, -1):
            upper = levels[j + 1] if j + 1 < len(levels) else self.size
            tail += (upper - levels[j]) / cumulative[j]
            share_from[levels[j]] = tail
        return {pid: share_from[w] for pid, w in self.holders.items()}


class Process:
    """One process's view of memory: its private bytes and the segments it maps."""

    __slots__ = ("pid", "request", "host", "private", "maps")

    def __init__(self, pid: int, request: str, host: HostMemory):
        self.pid = pid
        self.request = request
        self.host = host
        self.private = 0
        self.maps: list[Segment] = []

    def rss(self) -> int:
        return self.private + sum(s.size - s.holders[self.pid] for s in self.maps)


class HostMemory:
    """The RAM of one host: capacity, bytes in use, peak, and the named shared segments."""

    __slots__ = ("name", "capacity", "used", "peak", "peak_time", "detail", "named", "processes",
                 "out_of_memory", "_last")

    def __init__(self, name: str, capacity: float, detail: bool):
        self.name = name
        self.capacity = capacity
        self.used = 0
        self.peak = 0
        self.peak_time = 0.0
        self.detail = detail  # record every process's RSS / PSS, or only the host's total
        self.named: dict[str, Segment] = {}
        self.processes: dict[int, Process] = {}
        self.out_of_memory = 0
        self._last: dict[int, tuple[int, float]] = {}

    def need(self, extra: int, what: str) -> None:
        if extra > 0 and self.used + extra > self.capacity:
            self.out_of_memory += 1
            raise OutOfMemory(f"out of memory on host {self.name!r}: {what} needs {_size(extra)} more, "
                              f"{_size(self.used)} of {_size(self.capacity)} in use")


class MemoryState:
    """Every host's memory in one replication, and the tidy records it produces: the
    ``memory`` table (one row per change) and ``memory_peaks`` (one row per host)."""

    TABLES = {"memory": MEMORY_COLUMNS, "memory_peaks": PEAK_COLUMNS}  # the result tables it adds

    def __init__(self, rep: int, hosts: Iterable[tuple[str, float, bool]]):
        self.rep = rep
        self.hosts = {name: HostMemory(name, capacity, detail) for name, capacity, detail in hosts}
        self.processes: dict[int, Process] = {}
        self.rows: list[tuple] = []

    # -- processes -------------------------------------------------------------------------
    def process(self, pid: int, request: str, host: str) -> Process:
        proc = self.processes.get(pid)
        if proc is None:
            mem = self.hosts[host]
            proc = self.processes[pid] = mem.processes[pid] = Process(pid, request, mem)
        return proc

    def alloc(self, now: float, proc: Process, nbytes: int, what: str | None = None) -> None:
        """``nbytes`` of new private memory (heap growth, data read into memory); ``what`` names
        it in an out-of-memory message (an ``alloc of N B`` when not given). The commonest change
        of a large farm, whose nodes have no capacity: ``need`` (which counts the failure and
        says what ran out) is called, and its message made, only past the capacity."""
        host = proc.host
        if host.used + nbytes > host.capacity and nbytes > 0:
            host.need(nbytes, f"alloc of {nbytes} B" if what is None else what)
        proc.private += nbytes
        self._changed(now, host, nbytes, [proc])

    def map_shared(self, now: float, proc: Process, name: str, nbytes: int, cow: bool, what: str) -> None:
        """Map the host-wide segment ``name`` (a library image: read-only; a checkpoint image:
        copy-on-write); the first mapper on the host brings it into memory (and fixes its
        size), later ones share it."""
        host = proc.host
        seg = host.named.get(name)
        if seg is not None and proc.pid in seg.holders:
            return
        if seg is None:
            host.need(nbytes, what)
            seg = host.named[name] = Segment(name, nbytes, cow)
        before = seg.resident()
        seg.hold(proc.pid, 0)
        proc.maps.append(seg)
        self._changed(now, host, seg.resident() - before, [proc])

    def write(self, now: float, proc: Process, fraction: float, what: str) -> None:
        """The process writes ``fraction`` of every copy-on-write segment it maps (the same
        pages as every other holder, from the start): those pages become private copies."""
        host = proc.host
        plan = []
        extra = 0
        for seg in proc.maps:
            if not seg.cow:
                continue
            old = seg.holders[proc.pid]
            new = min(seg.size, old + round(fraction * seg.size))
            if new == old:
                continue
            extra += (new - old) - seg.shrinks_by(proc.pid, new)
            plan.append((seg, new - old))
        if extra > 0 and host.used + extra > host.capacity:
            host.need(extra, what)
        for seg, grown in plan:
            seg.grow(proc.pid, grown)
            proc.private += grown
        self._changed(now, host, extra, [proc])

    def fork(self, now: float, parent: Process, child_pids: list[int], request: str) -> list[Process]:
        """Children that map everything the parent maps, copy-on-write: the parent's private
        pages become one segment held by the parent and every child (no memory is copied)."""
        host = parent.host
        children = [Process(pid, request, host) for pid in child_pids]
        for child in children:
            self.processes[child.pid] = host.processes[child.pid] = child
        if parent.private:
            seg = Segment(f"fork:{parent.pid}", parent.private, True)
            seg.hold(parent.pid, 0)
            parent.maps.append(seg)
            parent.private = 0
        for seg in parent.maps:
            written = seg.holders[parent.pid]
            for child in children:
                seg.hold(child.pid, written)
                child.maps.append(seg)
        self._changed(now, host, 0, [parent, *children])
        return children

    def end(self, now: float, pid: int) -> None:
        """A process ended: its private pages are freed and it leaves every segment. (A pid
        with no memory is no process here: nothing happens.)"""
        proc = self.processes.pop(pid, None)
        if proc is None:
            return
        host = proc.host
        del host.processes[pid]
        freed = proc.private
        for seg in proc.maps:
            before = seg.resident()
            seg.leave(pid)
            freed += before - seg.resident()
            if not seg.holders and host.named.get(seg.name) is seg:
                del host.named[seg.name]
        left = proc.maps
        proc.private = 0
        proc.maps = []
        self._changed(now, host, -freed, [], left, ended=proc)

    # -- records ---------------------------------------------------------------------------
    def _changed(self, now: float, host: HostMemory, delta: int, touched: list[Process],
                 segments: Iterable[Segment] = (), ended: Process | None = None) -> None:
        """Book ``delta`` bytes on the host and record every process whose RSS or PSS moved:
        the ones named and everyone sharing a segment with them."""
        host.used += delta
        if host.used > host.peak:
            host.peak, host.peak_time = host.used, now
        rows = self.rows
        if not host.detail:
            rows.append((self.rep, now, host.name, -1, "", 0, 0.0, host.used))
            return
        affected = {p.pid: p for p in touched}
        segs = {id(s): s for p in touched for s in p.maps}
        segs.update((id(s), s) for s in segments)
        for seg in segs.values():
            for pid in seg.holders:
                affected.setdefault(pid, self.processes[pid])
        pss = self._pss(affected.values())
        last = host._last
        for pid, proc in affected.items():
            value = (proc.rss(), pss[pid])
            if last.get(pid) != value:
                last[pid] = value
                rows.append((self.rep, now, host.name, pid, proc.request, value[0], value[1], host.used))
        if ended is not None:
            last.pop(ended.pid, None)
            rows.append((self.rep, now, host.name, ended.pid, ended.request, 0, 0.0, host.used))
        if not affected and ended is None:
            rows.append((self.rep, now, host.name, -1, "", 0, 0.0, host.used))

    @staticmethod
    def _pss(procs: Iterable[Process]) -> dict[int, float]:
        out: dict[int, float] = {}
        cache: dict[int, dict[int, float]] = {}
        for proc in procs:
            total = float(proc.private)
            for seg in proc.maps:
                shares = cache.get(id(seg))
                if shares is None:
                    shares = cache[id(seg)] = seg.shares()
                total += shares[proc.pid]
            out[proc.pid] = total
        return out

    def tables(self) -> dict[str, list[tuple]]:
        """Its rows of ``TABLES``, for the run's result."""
        return {"memory": list(self.rows), "memory_peaks": list(self.peaks())}

    def peaks(self) -> list[tuple]:
        return [(self.rep, h.name, h.capacity, h.peak, h.peak_time, h.used, h.out_of_memory)
                for h in self.hosts.values()]


def _size(nbytes: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if abs(nbytes) >= scale:
            return f"{nbytes / scale:.4g} {unit}"
    return f"{nbytes:g} B"
