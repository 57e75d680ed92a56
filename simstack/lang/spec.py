"""The validated, inert description of a model: frozen dataclasses and nothing else.

A ``ModelSpec`` is what a model file means once units are parsed, parameters substituted,
flags resolved and names checked. It never runs anything; ``graph`` and ``executor`` turn
it into a network and a simulation. Request classes are step trees in the style of
layered queueing networks: a step holds a thread or lock, uses CPU, calls a component or
another request synchronously, sends work asynchronously, or fans out in parallel.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from simstack.lang.environment import Environment
from simstack.lang.samplers import Distribution
from simstack.lang.schedules import RateSchedule
from simstack.lang.time_rates import RateExpression
from simstack.lang.traces import TraceIndex

if TYPE_CHECKING:
    import networkx as nx


@dataclass(frozen=True)
class HostSpec:
    name: str
    cores: float  # a whole number, or inf (every job runs at once: a delay centre)
    speed: float
    discipline: str  # fifo | ps | priority | hol | run_to_block | fair
    idle_spinner: int | None = None  # priority of a busy loop on every core (priority hosts)
    memory: float = float("inf")  # RAM in bytes (simstack.resources.memory)
    memory_record: str = "processes"  # processes | host: what the memory table records
    groups: tuple[tuple[str, float, bool], ...] = ()  # (name, share, cap) on a fair host


@dataclass(frozen=True)
class ComponentSpec:
    name: str
    kind: str
    host: str | None
    settings: Mapping[str, Any] = field(hash=False)


@dataclass(frozen=True)
class Guard:
    """What every step may carry besides its action."""

    name: str
    path: str  # where the step stands in the model file; names its random stream
    deadline: float | None = None  # seconds after the request started
    on_miss: str = "record"  # record | fail


@dataclass(frozen=True)
class Cpu:
    guard: Guard
    demand: Distribution
    per_byte: float = 0.0
    bytes: Distribution | None = None


@dataclass(frozen=True)
class Delay:
    guard: Guard
    duration: Distribution


@dataclass(frozen=True)
class Hold:
    guard: Guard
    target: str
    body: tuple[Step, ...]
    key: str | None = None  # "item" or a constant key for per-key locks
    mode: str = "write"  # read | write (read shares a read-write lock)


@dataclass(frozen=True)
class Call:
    guard: Guard
    target: str
    options: Mapping[str, Any] = field(default_factory=dict, hash=False)


@dataclass(frozen=True)
class Send:
    guard: Guard
    target: str


@dataclass(frozen=True)
class Parallel:
    guard: Guard
    count: int
    limit: float
    body: tuple[Step, ...]


@dataclass(frozen=True)
class Sequence:
    guard: Guard
    body: tuple[Step, ...]


@dataclass(frozen=True)
class Acquire:
    """Take a unit of a semaphore, or a lock in ``mode``, and keep it after this step: a
    later ``Release`` (in this request or another) gives it back."""

    guard: Guard
    target: str
    key: str | None = None
    mode: str = "write"


@dataclass(frozen=True)
class Release:
    guard: Guard
    target: str
    key: str | None = None
    mode: str = "write"


@dataclass(frozen=True)
class Reply:
    """In a called request class: the caller goes on from here while the rest of the
    class runs on (the second phase of a layered-queueing entry). ``first``: who goes on first
    at that instant, the caller (``caller``), the second phase (``second_phase``, lqsim's order) or
    either, drawn per reply with even odds (``either``, lqsim's order where both share a processor)."""

    guard: Guard
    first: str = "caller"


@dataclass(frozen=True)
class Branch:
    p: float
    body: tuple[Step, ...]  # may be empty: the branch does nothing


@dataclass(frozen=True)
class Choose:
    """Take one branch, each with its probability (an OR-fork)."""

    guard: Guard
    branches: tuple[Branch, ...]


@dataclass(frozen=True)
class Switch(Choose):
    """Class switching: the request becomes ``classes[i]`` with branch i's probability and goes
    on with that class's steps (each branch calls it); its later records carry the new class.
    A choose of calls to request classes to everything that walks steps, plus the new name."""

    classes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Repeat:
    """Run the steps ``count`` times one after another (a count distribution: Const or Geometric)."""

    guard: Guard
    count: Distribution
    body: tuple[Step, ...]


@dataclass(frozen=True)
class Fork:
    """Run different branches at once and go on when ``join`` of them have finished (an
    AND-fork with an AND- or quorum join); the others finish in the background. ``order``:
    the branches start in the order written, or in a random order each time (lqsim's)."""

    guard: Guard
    branches: tuple[tuple[Step, ...], ...]
    join: int
    order: str = "written"


@dataclass(frozen=True)
class Alloc:
    """New memory for the process: private, or a host-wide read-only segment shared by name."""

    guard: Guard
    bytes: Distribution
    shared: str | None = None
    host: str | None = None  # the process's host if it has none yet (may end in [item])


@dataclass(frozen=True)
class WriteMemory:
    """The process writes ``fraction`` of its copy-on-write pages (optionally spread ``over``)."""

    guard: Guard
    fraction: float
    over: float = 0.0
    pieces: int = 1


@dataclass(frozen=True)
class ForkProcess:
    """Child processes (request class ``request``) sharing the parent's pages copy-on-write."""

    guard: Guard
    request: str
    count: int = 1
    wait: bool = False
    respawn: float = 0  # replacements forked as children end (the watchdog)


@dataclass(frozen=True)
class FileOp:
    """Read a file through a store (file server, cache, swarm), or write one (checkpoint)."""

    guard: Guard
    store: str  # a component, or name[item]
    file: str
    bytes: Distribution | None = None
    lookups: tuple[int, int | None] | None = None
    write: bool = False
    files: int = 1  # a set of files read as one (bytes in all; lookups for each)


@dataclass(frozen=True)
class Restore:
    """Read a checkpoint, then map its memory: ``shared`` of it as the host-wide image."""

    guard: Guard
    read: FileOp
    memory: Distribution
    shared: float = 0.0
    host: str | None = None



Step = (Cpu | Delay | Hold | Call | Send | Parallel | Sequence | Acquire | Release | Reply | Choose | Repeat | Fork
        | Alloc | WriteMemory | ForkProcess | FileOp | Restore)


@dataclass(frozen=True)
class RequestSpec:
    name: str
    body: tuple[Step, ...]
    host: str | None = None
    priority: int = 0


@dataclass(frozen=True)
class Workload:
    """What drives the requests of class ``request``; each type adds its own fields in a
    subclass, read and run by its registered type in ``simstack.kinds.workloads``."""

    name: str
    request: str


@dataclass(frozen=True)
class OpenWorkload(Workload):
    interarrival: Distribution
    count: float  # arrivals to generate (inf: until the horizon)
    start: float = 0.0
    item: int = 0  # the item its requests carry (stream i of a replicated workload: i)
    # a rate that follows time: by inversion (interarrival unused), or thinned (interarrival at its peak)
    schedule: RateSchedule | RateExpression | None = None


@dataclass(frozen=True)
class TraceWorkload(Workload):
    trace: TraceIndex  # the scanned file (``simstack.lang.traces``)
    scale: float  # time stretch: 2 plays the trace at half its rate
    loop: bool
    block: float | None  # a moving-block bootstrap per replication, blocks of this many trace seconds
    count: float
    start: float = 0.0


@dataclass(frozen=True)
class ClosedWorkload(Workload):
    clients: int
    think: Distribution
    count: float  # cycles per client
    start: float = 0.0


@dataclass(frozen=True)
class PeriodicWorkload(Workload):
    period: float  # with a schedule: the period at its peak frequency (the limits' and solver's rate)
    phase: float
    jitter: Distribution
    copies: int
    count: float
    schedule: RateSchedule | None = None  # a frequency that follows time (a linac going from 120 Hz to 1 Hz)


def schedule_of(wl: Workload) -> RateSchedule | RateExpression | None:
    """The schedule an open workload's rate or a periodic one's frequency follows, if any."""
    schedule = getattr(wl, "schedule", None)
    return schedule if isinstance(schedule, RateSchedule | RateExpression) else None


@dataclass(frozen=True)
class ProtocolWorkload(Workload):
    """The measurement protocol of a benchmark: W warm-up runs, then R recorded runs,
    strictly one after another, as an engineer with a stopwatch would do them."""

    warmup: int
    repeat: int
    gap: Distribution


@dataclass(frozen=True)
class Parameter:
    name: str
    value: Any
    free: tuple[Any, Any] | None = None
    doc: str = ""
    fact: str = ""  # where the source states or measured this value; empty: a chosen value (an assumption)


@dataclass(frozen=True)
class ModelSpec:
    name: str
    description: str
    file: Path | None
    parameters: Mapping[str, Parameter] = field(hash=False)
    flags: frozenset[str]
    declared_flags: frozenset[str]
    hosts: Mapping[str, HostSpec] = field(hash=False)
    components: Mapping[str, ComponentSpec] = field(hash=False)
    requests: Mapping[str, RequestSpec] = field(hash=False)
    workloads: Mapping[str, Workload] = field(hash=False)
    settings: Mapping[str, Any] = field(default_factory=dict, hash=False)
    replicas: Mapping[str, int] = field(default_factory=dict, hash=False)  # replicated components: name -> N
    warnings: tuple[str, ...] = ()  # lines every run of the model prints (limits it raises: load.limits.raised)
    environment: Environment | None = field(default=None, hash=False)  # operating modes switching the rates
    # The validated graph, kept once built (``graph.validated_graph``); not an init field, so
    # a spec derived with ``dataclasses.replace`` starts without one and is checked afresh.
    graph: nx.DiGraph | None = field(default=None, init=False, compare=False, hash=False, repr=False)

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without the graph: a worker process only runs the spec, and for the
        1,500-node LHCb farm the graph would double the bytes sent per replication and
        quadruple the time to send them."""
        return {k: v for k, v in self.__dict__.items() if k != "graph"}
