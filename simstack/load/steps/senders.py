"""Which call steps send straight to a station that blocks before service.

Blocking before service (``blocking: before_service`` on a bounded ``server``): a request
may start its service at one station only once it has a place at the station it goes to
next. The station it goes to next is the next step of its request class, so the reader
marks each call to a ``server`` that is followed, in the same list of steps, by a call to
such a station: the mark (the call option ``reserve``) names the station whose place the
sender's server reserves before it starts the request's service.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace

from simstack.errors import ModelError
from simstack.kinds.servers import RESERVE
from simstack.lang.spec import Call, ComponentSpec, Step


def blocks_before(target: str, components: Mapping[str, ComponentSpec]) -> bool:
    comp = components.get(target)
    return comp is not None and comp.kind == "server" and comp.settings.get("blocking") == "before_service"


def mark_senders(steps: tuple[Step, ...], components: Mapping[str, ComponentSpec]) -> tuple[Step, ...]:
    """``steps`` with each server call that sends straight to a blocking-before-service
    station marked with that station's name."""
    out = list(steps)
    for i in range(len(out) - 1):
        step, after = out[i], out[i + 1]
        if isinstance(step, Call) and isinstance(after, Call) and blocks_before(after.target, components):
            comp = components.get(step.target)
            if comp is None or comp.kind != "server":
                continue
            if not math.isfinite(comp.settings["servers"]) or comp.settings["order"] == "lcfs-pr":
                raise ModelError(f"server {step.target!r} sends straight to {after.target!r}, which blocks before "
                                 "service, but it cannot keep a request from starting (a pure delay, or "
                                 "preemptive order lcfs-pr): give it finitely many servers and another order, "
                                 f"or {after.target!r} blocking: after_service", path=step.guard.path)
            out[i] = replace(step, options={**step.options, RESERVE: after.target})
    return tuple(out)
