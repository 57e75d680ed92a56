"""Operating modes as a random environment: beam on, machine development, access.

An accelerator's control system lives through modes that change its load: during beam time
the consoles and the archiver are busy, machine development trims twice as often, an access
(the machine off, people in the tunnel) quiets nearly everything. The modes switch at random,
as a continuous-time Markov chain: each mode lasts an exponential time of mean ``stay``, then
the next is drawn from ``next``. Each mode scales the arrival rate of the open workloads
(``load``: one factor for all, or one per workload, the others at 1), may set pools' sizes
(``sizes``) and may slow a host (``speed``: the host's work, its ``delay`` and ``cpu`` steps,
runs at that factor of its speed, so 0.5 makes each one twice as long; a step takes the factor
of the mode in which it begins and keeps it through a switch). This is LINE's random
environment (its environment solver blends each mode's model by the chain's stationary
probabilities); simstack simulates the modulated model itself, so its results are exact
rather than blended, and the switches' effect on queues that outlive a mode is kept.

    environment:
      start: beam_on
      modes:
        beam_on: {stay: 8h, next: {machine_development: 0.7, access: 0.3}}
        machine_development: {stay: 2h, next: beam_on, load: {trims: 2}}
        access: {stay: 30min, next: beam_on, load: 0}
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

import numpy as np

from simstack.errors import ModelError
from simstack.lang.units import parse_time, positive, shown

MAX_MODES = 1_000
MODE_KEYS = ("stay", "next", "load", "sizes", "speed")


@dataclass(frozen=True)
class Environment:
    """Modes 0..m-1: ``stay[i]`` their mean sojourns, ``jump[i][j]`` the probability that mode
    j follows mode i, ``load[i]`` the factor on each listed workload's rate (others: 1)."""

    modes: tuple[str, ...]
    stay: tuple[float, ...]
    jump: tuple[tuple[float, ...], ...]
    load: tuple[Mapping[str, float], ...]
    default_load: tuple[float, ...]
    start: int = 0
    sizes: tuple[Mapping[str, int], ...] = ()  # per mode: pools and semaphores set to a size (others kept)
    speed: tuple[Mapping[str, float], ...] = ()  # per mode: hosts whose work runs at a factor of its speed

    def slowdown(self, host: str) -> tuple[float, ...] | None:
        """Per mode, the factor on the length of ``host``'s delay and CPU steps (1 / its speed),
        or None when no mode changes the host's speed (its steps are then left as they are)."""
        if not any(host in table for table in self.speed):
            return None
        return tuple(1.0 / table.get(host, 1.0) for table in self.speed)

    def factor(self, mode: int, workload: str) -> float:
        """The factor on ``workload``'s rate in ``mode`` (a replicated stream ``w[2]`` as ``w``)."""
        table = self.load[mode]
        if workload in table:
            return table[workload]
        return table.get(workload.split("[")[0], self.default_load[mode])

    def size(self, mode: int, pool: str, otherwise: int) -> int:
        """The size ``pool`` has in ``mode`` (``otherwise`` where the mode leaves it alone)."""
        return self.sizes[mode].get(pool, otherwise) if self.sizes else otherwise

    def stationary(self) -> np.ndarray:
        """The long-run share of time in each mode: the jump chain's stationary law weighted by
        the mean stays."""
        m = len(self.modes)
        generator = np.array(self.jump) / np.array(self.stay)[:, None]
        generator -= np.diag(generator.sum(axis=1))
        system = np.vstack([generator.T, np.ones(m)])
        share, *_ = np.linalg.lstsq(system, np.r_[np.zeros(m), 1.0], rcond=None)
        return share  # type: ignore[no-any-return]


def read_environment(raw: object, open_workloads: AbstractSet[str], pools: AbstractSet[str],
                     hosts: AbstractSet[str]) -> Environment:
    """The ``environment:`` section; ``open_workloads`` are the ones a mode's ``load`` may name,
    ``pools`` the thread pools and semaphores of fixed size its ``sizes`` may set, ``hosts`` the
    hosts its ``speed`` may slow."""
    if not isinstance(raw, Mapping) or set(raw) - {"modes", "start"} or not isinstance(raw.get("modes"), Mapping):
        raise ModelError(f"expected {{modes: {{NAME: {{stay: TIME, next: NAME, load: FACTOR}}, ...}}, start: NAME}}, "
                         f"got {shown(raw)}", path="environment")
    modes = raw["modes"]
    names = tuple(str(n) for n in modes)
    if not 2 <= len(names) <= MAX_MODES:
        raise ModelError(f"expected 2 to {MAX_MODES} modes, got {len(names)}", path="environment.modes")
    stay, jump, load, default, sizes, speed = [], [], [], [], [], []
    for name in names:
        where = f"environment.modes.{name}"
        mode = modes[name]
        if not isinstance(mode, Mapping) or set(mode) - set(MODE_KEYS) or "stay" not in mode or "next" not in mode:
            raise ModelError(f"expected {{stay: TIME, next: NAME or {{NAME: PROBABILITY}}, load: FACTOR}}, got "
                             f"{shown(mode)}", path=where)
        try:
            stay.append(positive(parse_time(mode["stay"]), mode["stay"]))
        except ModelError as exc:
            raise exc.at(path=f"{where}.stay") from None
        jump.append(_next(mode["next"], name, names, f"{where}.next"))
        table, factor = _load(mode.get("load", 1), open_workloads, f"{where}.load")
        load.append(table)
        default.append(factor)
        sizes.append(_sizes(mode.get("sizes", {}), pools, f"{where}.sizes"))
        speed.append(_speed(mode.get("speed", {}), hosts, f"{where}.speed"))
    start = raw.get("start", names[0])
    if start not in names:
        raise ModelError(f"unknown mode {shown(start)}; modes: {', '.join(names)}", path="environment.start")
    return Environment(names, tuple(stay), tuple(jump), tuple(load), tuple(default), names.index(start),
                       tuple(sizes), tuple(speed) if any(speed) else ())


def _next(raw: object, name: str, names: tuple[str, ...], where: str) -> tuple[float, ...]:
    chances = {raw: 1.0} if isinstance(raw, str) else raw
    if not isinstance(chances, Mapping) or not chances:
        raise ModelError(f"expected a mode or {{MODE: PROBABILITY, ...}}, got {shown(raw)}", path=where)
    row = [0.0] * len(names)
    for other, p in chances.items():
        if other not in names or other == name:
            raise ModelError(f"{shown(other)} is not another mode; modes: {', '.join(names)}", path=f"{where}.{other}")
        if isinstance(p, bool) or not isinstance(p, int | float) or not 0 < p <= 1:
            raise ModelError(f"expected a probability in (0, 1], got {shown(p)}", path=f"{where}.{other}")
        row[names.index(other)] = float(p)
    if abs(sum(row) - 1) > 1e-9:
        raise ModelError(f"the probabilities add up to {sum(row):g}, not 1", path=where)
    return tuple(row)


def _load(raw: object, open_workloads: AbstractSet[str], where: str) -> tuple[dict[str, float], float]:
    """(factor per named workload, factor for the others)."""
    if not isinstance(raw, Mapping):
        return {}, _factor(raw, where)
    table = {}
    for name, value in raw.items():
        if name not in open_workloads:
            raise ModelError(f"{shown(name)} is not an open workload with a constant rate; those are: "
                             f"{', '.join(sorted(open_workloads)) or '(none)'}", path=f"{where}.{name}")
        table[str(name)] = _factor(value, f"{where}.{name}")
    return table, 1.0


def _sizes(raw: object, pools: AbstractSet[str], where: str) -> dict[str, int]:
    if not isinstance(raw, Mapping):
        raise ModelError(f"expected {{POOL: SIZE, ...}}, got {shown(raw)}", path=where)
    out = {}
    for name, size in raw.items():
        if name not in pools:
            raise ModelError(f"{shown(name)} is not a thread pool or semaphore of fixed size; those are: "
                             f"{', '.join(sorted(pools)) or '(none)'}", path=f"{where}.{name}")
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise ModelError(f"expected a whole size >= 0, got {shown(size)}", path=f"{where}.{name}")
        out[str(name)] = size
    return out


def _speed(raw: object, hosts: AbstractSet[str], where: str) -> dict[str, float]:
    if not isinstance(raw, Mapping):
        raise ModelError(f"expected {{HOST: FACTOR, ...}}, got {shown(raw)}", path=where)
    out = {}
    for name, factor in raw.items():
        if name not in hosts:
            raise ModelError(f"{shown(name)} is not a host; those are: {', '.join(sorted(hosts)) or '(none)'}",
                             path=f"{where}.{name}")
        if isinstance(factor, bool) or not isinstance(factor, int | float) or not 0 < factor < math.inf:
            raise ModelError(f"expected a factor > 0 on the host's speed (1: unchanged, 0.5: its steps take "
                             f"twice as long), got {shown(factor)}", path=f"{where}.{name}")
        out[str(name)] = float(factor)
    return out


def _factor(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not (0 <= value < math.inf):
        raise ModelError(f"expected a factor >= 0 on the rate (1: unchanged, 0: no arrivals), got {shown(value)}",
                         path=where)
    return float(value)
