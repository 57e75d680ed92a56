"""What every component kind provides, and the registry that maps ``kind:`` names to kinds.

A kind is a small class: the fields its section of a model file accepts, whether it must
live on a host, and how to build its runtime. A kind plays one or more *roles*:
``hold`` (a step holds it around nested steps: thread pools, locks), ``call`` (a step calls
it and waits: servers, databases, links) and ``send`` (a step hands work to it and goes on:
queues). ``bind`` connects a built runtime to the rest of the model, and ``bind_call`` /
``bind_hold`` happen once per call site, all before time starts, so the hot path only runs
small prepared callables. Every hook is declared here with its default, so the engine calls
it on any kind without probing: ``bind_call_plain`` (a call that needs no timings),
``thread_scope`` (the threads a kind provides), ``meters`` and ``tables`` (what a kind adds
to a run's result, like desmod's ``get_result_hook``). A model file can name only
registered kinds, never Python.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import simpy

from simstack.errors import ModelError
from simstack.lang.samplers import Distribution
from simstack.lang.schema import Field
from simstack.lang.spec import ComponentSpec
from simstack.resources.blocking import Handoff
from simstack.resources.meter import Meter
from simstack.resources.protocol import Discipline, Done, K

Granted = Callable[[float], None]


class Ctx:
    """Where a piece of work stands: its request and the fan-out item it serves."""

    __slots__ = ("req", "item")

    def __init__(self, req: Any, item: int):
        self.req = req
        self.item = item

    def thread(self) -> Ctx:
        """The context of the work this request hands to a thread of a pool it holds: the same
        request and item under another identity. A CPU keeps a core only for the thread whose
        step just ended (its ``owner``), so the caller, blocked meanwhile, does not lend its
        kept core to the callee's work, nor the callee its own to the caller's next step."""
        return Ctx(self.req, self.item)


Sampler = Callable[[Ctx], float]
SamplerFactory = Callable[[str, Distribution], Sampler]


@dataclass
class BuildContext:
    env: simpy.Environment
    cpus: Mapping[str, Discipline]
    sampler: SamplerFactory
    # the replication's one meeting point of stations that block their senders (``resources.blocking``)
    handoff: Handoff = field(default_factory=Handoff)


StartRequest = Callable[..., None]  # Replication.start(cls, workload, item, scope, on_end, parent=, since=, site=)
RefuseRequest = Callable[[str, str, int, int, float, str], None]  # (cls, workload, parent, item, since, reason)


@dataclass
class BindContext:
    """What a kind may use once every component is built: the hosts' CPUs, and the
    replication's requests (start one of a class, or record one turned away)."""

    cpus: Mapping[str, Discipline]
    start: StartRequest
    refuse: RefuseRequest


class Kind:
    kind: ClassVar[str]
    doc: ClassVar[str]
    fields: ClassVar[dict[str, Field]]
    roles: ClassVar[frozenset[str]]
    needs_host: ClassVar[bool] = False
    call_options: ClassVar[dict[str, Field]] = {}
    # Result tables the kind adds to a run (name -> columns, ``rep`` first), filled by ``tables``.
    result_tables: ClassVar[dict[str, tuple[str, ...]]] = {}

    @classmethod
    def validate(cls, spec: ComponentSpec) -> None:
        """Cross-field checks after parsing; raise ModelError naming the field."""

    @classmethod
    def build(cls, spec: ComponentSpec, ctx: BuildContext) -> Any:
        raise NotImplementedError

    @classmethod
    def bind(cls, spec: ComponentSpec, runtime: Any, ctx: BindContext) -> None:
        """Connect the runtime to the rest of the model before time starts, once every
        component is built (a queue's consumers start its handler class). Most kinds need
        nothing here."""

    @classmethod
    def bind_call(cls, runtime: Any, options: Mapping[str, Any], sampler: SamplerFactory,
                  stream: str) -> Callable[[Ctx, Done], None]:
        raise ModelError(f"kind {cls.kind!r} cannot be called")

    @classmethod
    def bind_call_plain(cls, runtime: Any, options: Mapping[str, Any], sampler: SamplerFactory,
                        stream: str) -> Callable[[Ctx, K], None] | None:
        """``bind_call`` for a caller that needs no timings (steps not recorded): a callable
        that takes the caller's continuation and calls it without arguments, so no wrapper is
        made per call. ``None`` (the default): the kind has no such path; ``bind_call`` is used."""
        return None

    @classmethod
    def bind_hold(cls, runtime: Any, key: str | None, mode: str, priority: int = 0
                  ) -> tuple[Callable[[Ctx, Granted], bool], Callable[[Ctx], None]]:
        raise ModelError(f"kind {cls.kind!r} cannot be held")

    @classmethod
    def thread_scope(cls, spec: ComponentSpec) -> tuple[str, int] | None:
        """(host, priority) of the threads this component provides, for the work done while
        holding it or on its behalf (a thread pool, a queue's consumers); ``None``: no threads."""
        return None

    @classmethod
    def thread_cpu(cls, spec: ComponentSpec, cpu: Discipline) -> Discipline:
        """The CPU the threads' work runs on, given their host's: the host's own, or the part
        of it their group gets on a fair-share host."""
        return cpu

    @classmethod
    def meters(cls, runtime: Any) -> list[Meter]:
        return [runtime.meter]

    @classmethod
    def tables(cls, rep: int, name: str, runtime: Any) -> dict[str, list[tuple]]:
        """The rows component ``name`` adds to its kind's ``result_tables`` in replication
        ``rep``, read once the replication has ended (desmod's ``get_result_hook``); the run
        gathers them into ``RunResult.tables``. Most kinds add none."""
        return {}


REGISTRY: dict[str, type[Kind]] = {}


def register(kind: type[Kind]) -> type[Kind]:
    """Class decorator: make ``kind.kind`` usable in model files."""
    REGISTRY[kind.kind] = kind
    return kind


def lookup(name: object) -> type[Kind]:
    if name not in REGISTRY:
        raise ModelError(f"unknown kind {name!r}; known kinds: {', '.join(sorted(REGISTRY))}")
    return REGISTRY[str(name)]
