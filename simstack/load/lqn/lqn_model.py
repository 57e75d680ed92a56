"""A layered queueing network (LQN) as inert data: what an ``.lqnx`` or ``.lqn`` file says.

An LQN (the model of LQNS, lqsim and LINE) describes software as *tasks* (thread pools,
clients, locks) running on *processors*; a task offers *entries* (its operations), and an
entry's work is a list of *phases* (phase 1 until the reply, then phases 2 and 3 after it)
or a graph of *activities* joined by *precedences* (sequences, AND/OR forks and joins,
loops). Phases and activities take CPU time on their task's processor and make
synchronous (rendezvous), asynchronous (send-no-reply) or forwarded calls to other entries.

Both readers (``lqnx.py``, ``lqn_text.py``) build these frozen dataclasses and nothing
else; ``to_simstack`` interprets them. Every element keeps the line it was read from, so
a construct simstack cannot express is refused by name *and* line.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# Limits checked while reading: an imported file is data, and a hostile one must not make
# the importer build millions of objects or a flattened model with millions of threads.
MAX_ELEMENTS = 100_000  # XML elements or text declarations in one file
MAX_COPIES = 100_000  # a multiplicity, replication or initial token count
MAX_CALLS = 1_000_000.0  # a mean number of calls, a loop count
MAX_NAME = 200  # characters in one name
MAX_VALUE = 1e12  # a time, rate or factor: beyond it a run length overflows (1e308 did)
MAX_NESTING = 50  # forks and loops of an activity graph inside one another


@dataclass(frozen=True)
class Call:
    """A request from a phase or activity to an entry: ``sync`` (rendezvous: wait for the
    reply), ``async`` (send-no-reply) or ``forward`` (the reply goes on to ``dest``, with
    probability ``mean``)."""

    dest: str
    mean: float
    kind: str  # sync | async | forward
    line: int


@dataclass(frozen=True)
class Activity:
    """A phase of an entry or an activity of a task's graph: CPU demand (mean and squared
    coefficient of variation), a think time before it, and its calls. ``deterministic``
    calls are made exactly ``mean`` times, stochastic ones a geometric number of times."""

    name: str
    demand: float
    line: int
    cvsq: float = 1.0
    think: float = 0.0
    deterministic: bool = False
    calls: tuple[Call, ...] = ()
    phase: int = 0  # 1..3 for a phase, 0 for an activity of a graph
    bound_to: str | None = None  # the entry whose graph starts here


@dataclass(frozen=True)
class Precedence:
    """One ``pre -> post`` connection of an activity graph.

    ``pre`` is a join list: ``single`` (one activity), ``and`` (all of them, or ``quorum``
    of them) or ``or`` (any one). ``post`` is a fork list: ``single``, ``and`` (all start),
    ``or`` (one, with the probabilities ``values``), ``loop`` (each branch repeated a mean
    ``values`` times, then ``end``), or ``none`` (the thread ends)."""

    pre: tuple[str, ...]
    pre_kind: str  # single | and | or
    post: tuple[str, ...]
    post_kind: str  # none | single | and | or | loop
    line: int
    quorum: int = 0
    values: tuple[float, ...] = ()  # or: branch probabilities; loop: mean counts
    end: str | None = None  # loop: the activity after the loop


@dataclass(frozen=True)
class Entry:
    """An operation of a task: its phases, or the first activity of its graph."""

    name: str
    task: str
    line: int
    phases: tuple[Activity, ...] = ()  # phase 1, 2, 3 (missing phases are left out)
    start: str | None = None  # first activity, for an entry defined by activities
    open_rate: float = 0.0  # Poisson arrivals per unit of time from outside
    forwards: tuple[Call, ...] = ()
    priority: int = 0
    semaphore: str | None = None  # signal | wait
    rwlock: str | None = None  # r-lock | r-unlock | w-lock | w-unlock
    replica_of: str | None = None  # the LQN entry a written-out replica copies (lqn_replicas.flatten)


@dataclass(frozen=True)
class Task:
    """A software server (or, for ``ref``, a population of clients) on a processor."""

    name: str
    processor: str
    scheduling: str  # ref | fcfs | inf | semaphore | rwlock | hol | pri | burst | poll | uniform
    line: int
    entries: tuple[str, ...]
    multiplicity: float = 1  # a whole number, or inf
    replication: int = 1
    priority: int = 0
    think: float = 0.0  # reference tasks: mean think time between cycles
    queue_length: int = 0  # open arrivals beyond this many waiting are lost (0: no limit)
    initially: int | None = None  # semaphore tasks: tokens free at the start
    group: str | None = None
    activities: tuple[Activity, ...] = ()
    precedences: tuple[Precedence, ...] = ()
    replies: tuple[tuple[str, str], ...] = ()  # (activity, entry) pairs: the activity replies
    fan_in: tuple[tuple[str, int], ...] = ()
    fan_out: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class Processor:
    name: str
    scheduling: str  # fcfs | ps | pp | hol | inf | rand | cfs | ps-hol | ps-pp
    line: int
    multiplicity: float = 1  # a whole number, or inf
    replication: int = 1
    speed: float = 1.0
    quantum: float = 0.0


@dataclass(frozen=True)
class Group:
    """A share of a completely-fair-scheduling processor given to a set of tasks."""

    name: str
    processor: str
    share: float
    line: int
    cap: bool = False


@dataclass(frozen=True)
class Unsupported:
    """Something the file says that has no meaning to a simulation of its steady state, or
    no counterpart at all, kept so the importer can refuse or note it by name and line."""

    what: str
    line: int


@dataclass(frozen=True)
class LqnModel:
    name: str
    source: str  # the file's name, for messages
    processors: tuple[Processor, ...]
    tasks: tuple[Task, ...]
    entries: tuple[Entry, ...]
    comment: str = ""
    groups: tuple[Group, ...] = ()
    unsupported: tuple[Unsupported, ...] = ()  # refused when the model is converted
    ignored: tuple[Unsupported, ...] = field(default=())  # solver settings: noted, not refused
    remarks: tuple[str, ...] = ()  # what an export wrote in LQN terms (a lock as a task), for the file's comment

    def task(self, name: str) -> Task:
        return next(t for t in self.tasks if t.name == name)

    def entry(self, name: str) -> Entry:
        return next(e for e in self.entries if e.name == name)

    def processor(self, name: str) -> Processor:
        return next(p for p in self.processors if p.name == name)
