"""Arrivals whose rate is an expression of time, by thinning (``lang.time_rates``).

Candidates come as a Poisson process at the expression's stated peak; at each, a uniform draw
keeps it with probability λ(t)/peak and a kept one starts a request. Each candidate is one
wake-up on SimPy's queue rather than a loop inside one call, so a rate that stays at zero costs
events up to the horizon and never a run that cannot end (the workload needs a horizon).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from simstack.errors import ModelError
from simstack.lang.samplers import Uniform
from simstack.lang.spec import OpenWorkload
from simstack.lang.time_rates import RateExpression
from simstack.resources.wake import Wake

if TYPE_CHECKING:
    from simstack.engine.replication import Replication
    from simstack.engine.runners import Scope


def start_thinned(r: Replication, wl: OpenWorkload, scope: Scope) -> None:
    """Start ``wl``'s requests at the kept candidates, ``wl.count`` in all. The candidates' gaps
    come from the stream a stationary open workload of the same name draws from (at the peak
    rate), the keep-or-drop draws from a stream of their own (``workloads.NAME.thinning``)."""
    rate = wl.schedule
    assert isinstance(rate, RateExpression)
    gap = r.sampler(f"workloads.{wl.name}.interarrival", wl.interarrival)
    keep = r.sampler(f"workloads.{wl.name}.thinning", Uniform(0.0, 1.0))
    peak, state = rate.peak, {"n": 0}
    body = r.root(wl.request, scope)

    def candidate(_e: object = None) -> None:
        try:
            level = rate.rate(r.env._now)
        except ModelError as exc:
            raise exc.at(path=f"workloads.{wl.name}.rate") from None
        if keep(None) * peak < level:  # type: ignore[arg-type]
            state["n"] += 1
            r.start(wl.request, wl.name, wl.item, scope, None, body=body)
            if state["n"] >= wl.count:
                return
        Wake(r.env, gap(None), candidate)  # type: ignore[arg-type]

    Wake(r.env, wl.start + gap(None), candidate)  # type: ignore[arg-type]
