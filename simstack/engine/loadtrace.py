"""A resource's load over time: how many of its servers were busy and how many callers
waited, in each interval of a fixed length up to the horizon, for the resources a run names.

A utilisation row says a file server was 40 % busy over the whole run; a start-up storm
is a few minutes of saturation and then nothing, which only a time series shows (``sar``
on a server, sampled every few seconds). Every resource already keeps exact time-weighted
areas under its busy and queue curves (``resources.meter``); this samples those areas
once per interval, so each row is the exact mean over its interval, not an instantaneous
value that could miss a spike. It costs one event per interval for all the traced
resources together and nothing on the hot path.

Asked for with the run setting ``trace: {resources: [nfs], every: 10s}`` (``simulate(...,
trace=...)``); the rows are the run's ``load_trace`` table (``RunResult.table("load_trace")``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from simstack.errors import ConfigError, ModelError
from simstack.lang.units import parse_time
from simstack.resources.meter import Meter
from simstack.resources.wake import Wake

TRACE_COLUMNS = ("rep", "time", "resource", "kind", "capacity", "busy", "queue")
MAX_INTERVALS = 1_000_000  # a trace of more intervals than this is a mistake in ``every``


@dataclass(frozen=True)
class Trace:
    """Which resources to trace and the interval length in seconds."""

    resources: tuple[str, ...]
    every: float


def parse_trace(raw: object) -> Trace | None:
    """``{resources: [name, ...] or name, every: TIME}`` as a run setting (None: no trace)."""
    if raw is None or isinstance(raw, Trace):
        return raw
    if not isinstance(raw, Mapping) or set(raw) - {"resources", "every"} or "resources" not in raw:
        raise ConfigError(f"sim trace must be {{resources: [NAME, ...], every: TIME}}, got {raw!r}")
    names = raw["resources"] if isinstance(raw["resources"], list) else [raw["resources"]]
    if not names or not all(isinstance(n, str) and n for n in names):
        raise ConfigError(f"trace.resources must name resources, got {raw['resources']!r}")
    try:
        every = parse_time(raw.get("every", "1s"))
    except ModelError as exc:
        raise ConfigError(f"trace.every: {exc.reason}") from None
    if not (every > 0 and math.isfinite(every)):
        raise ConfigError(f"trace.every must be a time > 0, got {raw.get('every')!r}")
    return Trace(tuple(names), every)


class LoadTrace:
    """Samples the named meters every ``every`` seconds until the run ends: the
    ``load_trace`` result table."""

    TABLES = {"load_trace": TRACE_COLUMNS}  # the result table it adds

    def __init__(self, env: Any, rep: int, trace: Trace, meters: Sequence[Meter], horizon: float | None):
        known = {m.name: m for m in meters}
        missing = [n for n in trace.resources if n not in known]
        if missing:
            raise ConfigError(f"trace: unknown resource {missing[0]!r}; resources: {', '.join(known)}")
        if horizon is None:  # a sample after the last event would move the end of the run
            raise ConfigError("trace needs a horizon (sim.horizon, or the model's settings)")
        if horizon / trace.every > MAX_INTERVALS:
            raise ConfigError(f"trace.every ({trace.every:g} s) gives more than {MAX_INTERVALS:,} intervals "
                              f"over the horizon ({horizon:g} s)")
        self.env = env
        self.rep = rep
        self.every = trace.every
        self.horizon = horizon
        self.meters = [known[n] for n in trace.resources]
        self.rows: list[tuple] = []
        self._last = 0.0
        self._areas = [m.areas() for m in self.meters]
        Wake(env, self.every, self._sample)

    def tables(self) -> dict[str, list[tuple]]:
        """Its rows of ``TABLES``, for the run's result."""
        return {"load_trace": self.rows}

    def _sample(self, _event: object = None) -> None:
        self.sample(self.env._now)
        if self.env._now + self.every < self.horizon:  # the last interval ends at the horizon
            Wake(self.env, self.every, self._sample)

    def sample(self, now: float) -> None:
        """One row per meter: the mean busy servers and queue length since the last sample (or
        since the meters were reset at the end of a warm-up, if that came in between)."""
        if now <= self._last:
            return
        for i, m in enumerate(self.meters):
            m.touch(now)
            start, busy, queue = self._areas[i]
            areas = m.areas()
            since = self._last
            if areas[0] != start:  # reset at the end of the warm-up: its areas start there
                busy = queue = 0.0
                since = areas[0]
            span = now - since
            self.rows.append((self.rep, now, m.name, m.kind, m.capacity,
                              (areas[1] - busy) / span if span > 0 else 0.0,
                              (areas[2] - queue) / span if span > 0 else 0.0))
            self._areas[i] = areas
        self._last = now
