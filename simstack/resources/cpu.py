"""The CPU cores of a host under three scheduling disciplines.

A *demand* is CPU work in seconds on a reference core; a host with ``speed`` 2 does it
in half the time. ``fifo``: jobs take a free core in arrival order and run to completion.
``ps`` (processor sharing): all runnable jobs share the cores equally, each progressing
at ``speed * min(1, cores / n)``, the classic model of a time-sliced OS under load.
``priority``: preemptive-resume by thread priority (higher number more urgent, as in
EPICS / POSIX real-time priorities); an arriving job takes a core from the least urgent
running one, which later resumes where it stopped. Equal priorities are FIFO.

Each scheduler calls ``done(wait, service)`` when a job finishes: ``service`` is the time
it actually ran, ``wait`` the rest of its time in the system.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable
from typing import Any

import simpy

from simstack.resources.meter import IdleMeter, LevelMeter, Meter
from simstack.resources.protocol import Done, K
from simstack.resources.wake import Wake


class FifoCpu:
    """``servers`` identical servers taking jobs first come, first served.

    Also the engine of plain ``server`` stations: the service time is drawn when the job
    arrives (so what-ifs with common random numbers pair the same work), and run-to-
    completion needs no preemption bookkeeping, so this is the leanest path in the engine.
    """

    __slots__ = ("env", "cores", "speed", "meter", "_queue", "_free")
    exact_fusion = False  # an equal-priority job may slip in between two steps of a thread

    def __init__(self, env: simpy.Environment, cores: float, speed: float, meter: Meter):
        self.env = env
        self.cores = cores
        self.speed = speed
        self.meter = meter
        self._queue: deque[tuple[float, float, Any, bool]] = deque()
        self._free = cores

    def meters(self) -> list[Meter]:
        return [self.meter]

    def submit(self, demand: float, priority: int, done: Done, owner: object = None) -> None:
        self.enter(demand, done, False)

    def submit_k(self, demand: float, priority: int, k: K, owner: object = None) -> None:
        """As ``submit``, for a caller that needs no timings: ``k()`` is called as is, so the
        runner hands its continuation straight over instead of wrapping it per job."""
        self.enter(demand, k, True)

    def enter(self, demand: float, done: Any, plain: bool) -> None:
        """A job arrives: ``done()`` if ``plain``, else ``done(wait, service)`` when it ends.
        The one body of ``submit`` and ``submit_k``; a station's call site calls it directly."""
        meter = self.meter
        now = self.env._now
        meter.arrivals += 1
        meter.touch(now)
        service = demand / self.speed
        if self._free:
            self._free -= 1
            meter.busy += 1
            Wake(self.env, service, self._finish, (now, service, done, plain))
        else:
            self._queue.append((now, service, done, plain))
            meter.queue = len(self._queue)
            if meter.queue > meter.max_queue:
                meter.max_queue = meter.queue

    def _finish(self, event: Wake) -> None:
        arrived: float
        service: float
        arrived, service, done, plain = event.job
        now = self.env._now
        meter = self.meter
        meter.touch(now)
        queue = self._queue
        if queue:
            job = queue.popleft()
            meter.queue = len(queue)
            Wake(self.env, job[1], self._finish, job)
        else:
            self._free += 1
            meter.busy -= 1
        if plain:
            done()
        else:
            wait = now - arrived - service
            done(wait if wait > 0.0 else 0.0, service)


class FifoCall:
    """One call site of a FIFO station when steps are not recorded: draw the service time,
    enter the station with the caller's continuation. A class beside ``FifoCpu`` rather than
    a closure in the kind, so that it is compiled with it (``make compiled``)."""

    __slots__ = ("draw", "station")

    def __init__(self, draw: Callable[[Any], float], station: FifoCpu):
        self.draw = draw
        self.station = station

    def run(self, ctx: Any, k: K) -> None:
        self.station.enter(self.draw(ctx), k, True)


class _Job:
    __slots__ = ("priority", "seq", "remaining", "arrived", "service", "done", "started", "token", "owner",
                 "plain", "level")

    def __init__(self, priority: int, seq: int, work: float, arrived: float, done: Any, owner: object,
                 plain: bool = False):
        self.plain = plain  # done() takes no timings (a runner's continuation, handed over as is)
        self.priority = priority
        self.seq = seq
        self.remaining = work  # seconds of run time still needed on this host
        self.arrived = arrived
        self.service = work
        self.done = done
        self.started = 0.0
        self.token = 0
        self.owner = owner
        self.level: LevelMeter | None = None  # its priority's meter, once it runs


def _seq_of(job: _Job) -> int:
    return job.seq


class PriorityCpu:
    """Preemptive-resume priority scheduling on ``cores`` identical cores (SCHED_FIFO).

    A thread that finishes one CPU step and goes straight on to the next keeps its core:
    it has not blocked, so an equal-priority thread that became ready meanwhile still
    waits (only a more urgent one takes the core). Busy time is also kept per priority
    level, which is how CPU share per priority is reported.

    ``idle_spinner`` is a CPU hog on every core at a priority below every thread: it runs
    exactly when a core would be idle and delays nobody, so it needs no events; its level
    shows the idle time it eats, and the host counts as fully busy.

    Accounting costs one update per change: the host's busy and queue areas once per
    arrival or completion (``Meter.touch``), a level's busy time once per run (when it
    stops: ``LevelMeter.stopped``), the spinner's once per idle spell (when a thread takes
    the core: ``IdleMeter.core_taken``).
    A level's ``busy`` counts its running threads, and ``_active`` holds the priorities
    with any running (changed only when a count leaves or reaches zero), so the least
    urgent running priority is its smallest key rather than a scan of the levels.
    """

    __slots__ = ("env", "cores", "speed", "meter", "_running", "_ready", "_seq", "_heir", "_levels",
                 "_name", "_spinner", "_spinner_priority", "_heir_seq", "_active")
    exact_fusion = True  # consecutive CPU steps of one thread may be submitted as one

    def __init__(self, env: simpy.Environment, cores: int, speed: float, meter: Meter,
                 idle_spinner: int | None = None):
        self.env = env
        self.cores = cores
        self.speed = speed
        self.meter = meter
        self._running: list[_Job] = []
        self._ready: list[tuple[int, int, _Job]] = []  # heap of (-priority, seq, job)
        self._seq = 0
        self._heir: object = None  # owner whose finished step reserved its core, if any
        self._heir_seq = 0  # ... and its place in line, which its next step keeps
        self._levels: dict[int, LevelMeter] = {}  # the threads' priorities (above the spinner's)
        self._active: dict[int, None] = {}  # the priorities with a thread running
        self._name = meter.name
        self._spinner: IdleMeter | None = None
        self._spinner_priority = idle_spinner
        if idle_spinner is not None:
            self._spinner = IdleMeter(f"{self._name}[priority {idle_spinner}]", cores)
            meter.busy = float(cores)

    def meters(self) -> list[Meter]:
        """The host's meter, then one per priority level, most urgent first."""
        levels: dict[int, Meter] = {p: m for p, m in self._levels.items()}
        if self._spinner is not None and self._spinner_priority is not None:
            levels[self._spinner_priority] = self._spinner
        return [self.meter, *(levels[p] for p in sorted(levels, reverse=True))]

    def submit(self, demand: float, priority: int, done: Done, owner: object = None) -> None:
        self._submit(demand, priority, done, owner, False)

    def submit_k(self, demand: float, priority: int, k: K, owner: object = None) -> None:
        """As ``submit``, calling ``k()`` without timings (no wrapper per job)."""
        self._submit(demand, priority, k, owner, True)

    def _submit(self, demand: float, priority: int, done: Any, owner: object, plain: bool) -> None:
        now = self.env._now
        meter = self.meter
        meter.arrivals += 1
        meter.touch(now)
        heir = self._heir
        ready = self._ready
        if heir is not None and owner is heir:
            # The thread goes on running: same core, same place in line (as if the two steps
            # were one), so fusing its consecutive steps changes nothing. Only a more urgent
            # thread that became ready meanwhile (granted a lock this one released, say) can
            # take the core, as it would preempt the thread at once.
            self._heir = None
            job = _Job(priority, self._heir_seq, demand / self.speed, now, done, owner, plain)
            if not ready or -ready[0][0] <= priority:
                self._run(job, now)
                return
        else:
            self._seq += 1
            job = _Job(priority, self._seq, demand / self.speed, now, done, owner, plain)
            if len(self._running) + (heir is not None) < self.cores and (not ready or -ready[0][0] < priority):
                self._run(job, now)
                return
        heapq.heappush(ready, (-priority, job.seq, job))
        self._fill(now)

    def _fill(self, now: float) -> None:
        """Give cores to the most urgent ready threads: free cores first (a core kept for a
        thread between two steps stays kept), then by preempting less urgent running ones."""
        ready, running = self._ready, self._running
        while ready:
            if len(running) + (self._heir is not None) < self.cores:
                self._run(heapq.heappop(ready)[2], now)
                continue
            active = self._active
            if not active:
                break
            lowest = min(active)  # the least urgent running priority
            if lowest >= -ready[0][0]:
                break
            # of the least urgent, the one that got its place in line last gives up its core
            self._preempt(max((j for j in running if j.priority == lowest), key=_seq_of), now)
            self._run(heapq.heappop(ready)[2], now)
        self._queue_changed()

    def _run(self, job: _Job, now: float) -> None:
        job.started = now
        job.token += 1
        running = self._running
        running.append(job)
        priority = job.priority
        level = job.level
        if level is None:
            level = self._levels.get(priority)
            if level is None:
                level = self._levels[priority] = LevelMeter(f"{self._name}[priority {priority}]", self.cores,
                                                             running, priority)
            job.level = level
        if not level.busy:
            self._active[priority] = None
        level.busy += 1
        spinner = self._spinner
        if spinner is None:
            self.meter.busy = float(len(running))
        else:
            spinner.core_taken(now)
        Wake(self.env, job.remaining, self._finish, (job, job.token))

    def _stop(self, job: _Job, now: float) -> None:
        """``job`` leaves its core: its level is credited with the run (its one update)."""
        running = self._running
        running.remove(job)
        level = job.level
        assert level is not None  # set when it started
        level.stopped(job.started, now)
        level.busy -= 1
        if not level.busy:
            del self._active[job.priority]
        spinner = self._spinner
        if spinner is None:
            self.meter.busy = float(len(running))
        else:
            spinner.core_freed(now)

    def _preempt(self, job: _Job, now: float) -> None:
        job.remaining -= now - job.started
        job.token += 1  # its pending completion is now stale
        self._stop(job, now)
        # Resumes ahead of later arrivals of its priority: it keeps its original seq.
        heapq.heappush(self._ready, (-job.priority, job.seq, job))
        self._queue_changed()

    def _finish(self, event: Wake) -> None:
        job: _Job
        token: int
        job, token = event.job
        if job.token != token:
            return
        now = self.env._now
        self.meter.touch(now)
        self._stop(job, now)
        ready = self._ready
        keep = job.owner is not None and (not ready or -ready[0][0] <= job.priority)
        if keep:
            self._heir = job.owner  # the core waits for this thread's next step, if any
            self._heir_seq = job.seq
        try:
            if job.plain:
                job.done()
            else:
                wait = now - job.arrived - job.service
                job.done(wait if wait > 0.0 else 0.0, job.service)
        finally:
            if keep:
                self._heir = None
            if ready:
                self._fill(now)

    def restore(self, running: list[tuple[int, float]], idle: list[float], levels: dict[int, tuple]) -> None:
        """Take the state the native kernel kept (``engine.native``): the threads still running
        (priority, when they last started), read by the levels at the end; when each idle core
        fell idle; the levels that ran, with their meters' state (``Meter.restore``'s arguments)."""
        for priority, started in running:
            job = _Job(priority, 0, 0.0, started, None, None)
            job.started = started
            self._running.append(job)
        if self._spinner is not None:
            self._spinner.restore_idle(idle)
        for priority, state in levels.items():
            level = self._levels[priority] = LevelMeter(f"{self._name}[priority {priority}]", self.cores,
                                                        self._running, priority)
            level.restore(*state)

    def _queue_changed(self) -> None:
        meter = self.meter
        meter.queue = len(self._ready)
        if meter.queue > meter.max_queue:
            meter.max_queue = meter.queue
