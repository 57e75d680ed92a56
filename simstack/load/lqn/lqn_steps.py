"""One LQN phase or activity as simstack steps, the way lqsim executes it.

lqsim divides an activity's CPU demand D into *slices* between its calls: with Y calls in
all (the sum of their mean counts) each slice takes D / (1 + Y) on average, so the demand
is D whatever the number of calls. A *stochastic* activity (the default) then makes a
geometric number of calls with mean Y: after each slice it calls again with probability
Y / (1 + Y), picking entry i with probability y_i / Y, and computes another slice; that is
``repeat: geometric(Y)`` over ``[call, cpu slice]`` here, after a first slice. A
*deterministic* activity makes exactly y_i calls to each entry in the order written, a
slice after each. A think time is an exponential delay before the work.

Slice times follow the squared coefficient of variation cv² as in lqsim: 0 constant,
1 exponential, between them gamma, above 1 the balanced two-phase hyperexponential; on a
bursty (``burst``) reference task every slice is Pareto with that cv² (1 if not given), as
lqsim draws them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from simstack.load.lqn.lqn_model import Activity, Call
from simstack.load.lqn.lqn_values import located

# Constructs the LQN grammar has and simstack does not (yet): refused by name and line.
MISSING: dict[str, str] = {}


def num(x: float) -> str:
    """A number as the model file shows it: whole numbers without a point, others to 12
    significant digits (0.6 / 1.5 is written 0.4, not 0.39999999999999997)."""
    x = float(f"{x:.12g}")
    return str(int(x)) if math.isfinite(x) and x == int(x) and abs(x) < 1e15 else repr(x)


def distribution(mean: float, cvsq: float, what: str, source: str, line: int, pareto: bool = False) -> str:
    """A simstack distribution with this mean and squared coefficient of variation (Pareto
    slices on a bursty task, as lqsim's ``burst`` tasks draw them)."""
    if pareto:
        if cvsq <= 0:
            raise located(source, line, f"{what}: a bursty task's slices are Pareto, which needs host-demand-cvsq "
                                        f"> 0, got {num(cvsq)}")
        return f"pareto({num(mean)}, {num(math.sqrt(cvsq))})"
    if cvsq == 0:
        return f"const({num(mean)})"
    if cvsq == 1:
        return f"exp({num(mean)})"
    if cvsq < 1:
        return f"gamma({num(mean)}, {num(math.sqrt(cvsq))})"
    return f"hyperexp({num(mean)}, {num(math.sqrt(cvsq))})"


class Work:
    """Steps of phases and activities; ``target(call)`` is the request class a call reaches."""

    def __init__(self, source: str, target: Callable[[Call], str]):
        self.source = source
        self.target = target
        self.pareto = False  # the task being read is bursty: its slices are Pareto

    def steps(self, act: Activity) -> list[Any]:
        out: list[Any] = []
        if act.think > 0:
            out.append({"delay": f"exp({num(act.think)})"})
        calls = [c for c in act.calls if c.mean > 0]
        total = sum(c.mean for c in calls)
        cpu: list[Any] = []
        if act.demand > 0:
            cpu = [{"cpu": distribution(act.demand / (1 + total), act.cvsq, f"activity {act.name!r}", self.source,
                                        act.line, self.pareto)}]
        out += cpu
        if not calls:
            return out
        if act.deterministic:
            for c in calls:
                if c.mean != int(c.mean):
                    raise located(self.source, c.line, f"activity {act.name!r} makes a deterministic {num(c.mean)} "
                                                       f"calls to {c.dest!r}: a deterministic count must be whole")
                body = [self.call(c), *cpu]
                out += body if c.mean == 1 else [{"repeat": int(c.mean), "steps": body}]
            return out
        if len(calls) == 1:
            pick = self.call(calls[0])
        else:
            pick = {"choose": [{"p": c.mean / total, "steps": [self.call(c)]} for c in calls]}
        out.append({"repeat": f"geometric({num(total)})", "steps": [pick, *cpu]})
        return out

    def call(self, c: Call) -> dict[str, Any]:
        return {"call" if c.kind == "sync" else "send": self.target(c)}
