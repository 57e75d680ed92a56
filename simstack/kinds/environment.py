"""The random environment at run time: the mode chain, and Poisson arrivals it modulates.

The chain draws each mode's stay (a unit exponential times the mode's mean) and its successor
from streams of its own (``environment.stay``, ``environment.next``), so every what-if of a
model sees the same sequence of modes. A modulated Poisson workload keeps the unit
exponential it must still cover: at a switch, what the old rate covered since the last
arrival is subtracted and the rest is covered at the new rate (a Poisson process's
remaining work is memoryless), so no draw is wasted and a mode at rate 0 only pauses it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import TYPE_CHECKING

from simstack.errors import ModelError
from simstack.lang.environment import Environment
from simstack.lang.samplers import Exp, Uniform
from simstack.lang.sizes import ModeSizes
from simstack.lang.spec import ComponentSpec, OpenWorkload, Workload
from simstack.resources.slots import ResizableSlots
from simstack.resources.wake import Wake

if TYPE_CHECKING:
    from simstack.engine.replication import Replication
    from simstack.engine.runners import Scope


class Modes:
    """The current mode of one replication and who listens for its switches."""

    def __init__(self, r: Replication, spec: Environment):
        self.env, self.spec, self.mode = r.env, spec, spec.start
        self.listeners: list[Callable[[], None]] = []
        self._stay = r.sampler("environment.stay", Exp(1.0))
        self._next = r.sampler("environment.next", Uniform(0.0, 1.0))
        for name, comp in r.spec.components.items():  # pools and semaphores whose size the modes set
            size = comp.settings.get("size")
            if isinstance(size, ModeSizes):  # a pool's slots, or the semaphore itself
                self.listeners.append(partial(self._resize, getattr(r.runtimes[name], "slots", r.runtimes[name]),
                                              size))
        self._arm()

    def _resize(self, slots: ResizableSlots, size: ModeSizes) -> None:
        slots.resize(size.by_mode[self.mode])

    def _arm(self) -> None:
        Wake(self.env, self._stay(None) * self.spec.stay[self.mode], self._switch)  # type: ignore[arg-type]

    def _switch(self, _event: object) -> None:
        self.mode = _pick(self.spec.jump[self.mode], self._next(None))  # type: ignore[arg-type]
        for listener in self.listeners:  # each settles what its old rate covered, then takes the new one
            listener()
        self._arm()


def _pick(row: tuple[float, ...], u: float) -> int:
    """The mode a uniform draw ``u`` picks from the probabilities ``row``."""
    total = 0.0
    for j, p in enumerate(row):
        total += p
        if u < total:
            return j
    return max(j for j, p in enumerate(row) if p > 0)  # u beyond a sum rounded below 1


def start_modulated(r: Replication, wl: OpenWorkload, scope: Scope, modes: Modes) -> None:
    """``wl``'s Poisson arrivals at its rate times the current mode's factor, ``wl.count`` in all."""
    base = 1.0 / wl.interarrival.mean
    unit = r.sampler(f"workloads.{wl.name}.interarrival", Exp(1.0))
    body = r.root(wl.request, scope)
    env = r.env
    s = {"left": 0.0, "since": wl.start, "rate": 0.0, "token": 0, "n": 0}

    def plan() -> None:
        """Settle what the rate covered since ``since``, then wait for the rest at the new rate."""
        now = env._now
        s["left"] = max(s["left"] - (now - s["since"]) * s["rate"], 0.0)
        s["since"], s["rate"] = now, base * modes.spec.factor(modes.mode, wl.name)
        s["token"] += 1  # the wake-up planned before is stale
        if s["rate"] > 0:
            token = s["token"]
            Wake(env, s["left"] / s["rate"], lambda _e: arrive(token))  # type: ignore[arg-type]

    def arrive(token: float) -> None:
        if token != s["token"] or s["n"] >= wl.count:
            return
        s["n"] += 1
        r.start(wl.request, wl.name, wl.item, scope, None, body=body)
        s["left"], s["rate"] = unit(None), 0.0  # type: ignore[arg-type]
        plan()

    def begin(_e: object = None) -> None:
        s["left"] = unit(None)  # type: ignore[arg-type]
        modes.listeners.append(plan)
        plan()

    Wake(env, wl.start, begin)  # type: ignore[arg-type]


def pools_of(components: Mapping[str, ComponentSpec]) -> set[str]:
    """The thread pools and semaphores of a fixed, finite size: the ones a mode's ``sizes`` may set."""
    return {name for name, comp in components.items() if comp.kind in ("threads", "semaphore")
            and isinstance(comp.settings.get("size"), int)}


def with_mode_sizes(components: Mapping[str, ComponentSpec], environment: Environment) -> dict[str, ComponentSpec]:
    """The components with each pool a mode resizes given a ``ModeSizes`` (its size per mode)."""
    out = dict(components)
    for name in sorted({n for sizes in environment.sizes for n in sizes}):
        comp = components[name]
        by_mode = tuple(environment.size(m, name, comp.settings["size"]) for m in range(len(environment.modes)))
        first = by_mode[environment.start]
        initial = comp.settings.get("initial")
        if initial is not None and initial > first:
            raise ModelError(f"initial ({initial}) must be at most the size in the start mode ({first})",
                             path=f"components.{name}.initial")
        size = ModeSizes((0.0,), (first,), None, by_mode)
        out[name] = ComponentSpec(comp.name, comp.kind, comp.host, {**comp.settings, "size": size})
    return out


def modulated(workloads: Mapping[str, Workload]) -> set[str]:
    """The workloads a mode's ``load`` applies to: open ones with Poisson arrivals at a constant
    rate (their names, and a replicated stream's ``w[i]`` also as ``w``)."""
    names = {name for name, wl in workloads.items()
             if isinstance(wl, OpenWorkload) and wl.schedule is None and isinstance(wl.interarrival, Exp)}
    return names | {name.split("[")[0] for name in names}
