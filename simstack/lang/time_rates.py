"""A rate written as an expression of time: a daily load curve, a sinusoidal beam-current
cycle, a pulse of requests around an event.

``rate: {expression: "10/s * (1 + 0.5*sin(2*pi*t/60s))", peak: 15/s}`` is λ(t) in the
model's own expression language (``lang.expressions``: numbers with units, ``t``, ``pi``,
``sin``, ``cos``, ``abs``, ``min``, ``max``; parsed by hand, never eval'd). Its integral has no
closed form in general, so arrivals come by thinning (Lewis and Shedler 1979): candidates of
a Poisson process at the stated ``peak`` rate, each kept with probability λ(t)/peak. That is
exact whenever peak >= λ(t) for every t, and a candidate where λ(t) > peak stops the run with
an error naming the key, so a peak that is too low cannot bias the arrivals silently. Since
the candidates come at the peak rate whatever λ does, a short window of high rate gets its
arrivals however short it is; the cost is one event per candidate, peak × horizon in all.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from simstack.errors import ModelError
from simstack.lang.expressions import Quantity, time_expression
from simstack.lang.units import parse_rate, positive, shown

KEYS = ("expression", "peak")


@dataclass(frozen=True)
class RateExpression:
    """λ(t) from ``text``, at most ``peak`` arrivals per second."""

    text: str
    peak: float
    at: Callable[[float], Quantity] = field(compare=False, repr=False)

    def __reduce__(self) -> tuple[object, tuple[str, float]]:
        """Pickled as its text (a worker process parses it again): the compiled form is a closure."""
        return _rebuilt, (self.text, self.peak)

    def rate(self, t: float) -> float:
        """λ(t); an error if it is negative or above ``peak`` (thinning would then be wrong)."""
        value = self.at(t).value
        if not 0 <= value <= self.peak * (1 + 1e-12):
            raise ModelError(f"the rate {self.text!r} is {value:.6g}/s at t = {t:.6g} s, outside [0, peak = "
                             f"{self.peak:.6g}/s]; raise peak to bound the rate at every time", path="peak")
        return value


def _rebuilt(text: str, peak: float) -> RateExpression:
    return RateExpression(text, peak, time_expression(text))


def read_rate_expression(raw: Mapping[str, object]) -> RateExpression:
    """``{expression: TEXT, peak: RATE}``; errors located at the key (``expression``, ``peak``)."""
    unknown = sorted(set(raw) - set(KEYS))
    if unknown:
        raise ModelError(f"unknown key {unknown[0]!r} in a rate expression; keys: {', '.join(KEYS)}", path=unknown[0])
    if "peak" not in raw:
        raise ModelError("a rate expression needs peak: the most arrivals per second it ever reaches (its "
                         "arrivals are thinned from a Poisson process at that rate)", path=None)
    text = raw["expression"]
    if not isinstance(text, str):
        raise ModelError(f"expected an expression of time t such as '10/s * (1 + 0.5*sin(2*pi*t/60s))', got "
                         f"{shown(text)}", path="expression")
    try:
        peak = positive(parse_rate(raw["peak"]), raw["peak"])
    except ModelError as exc:
        raise exc.at(path="peak") from None
    try:
        at = time_expression(text)
    except ModelError as exc:
        raise exc.at(path="expression") from None
    if at(0.0).dim != (-1, 0):
        raise ModelError(f"the expression {text!r} is a {at(0.0).kind}, not a rate (arrivals per second, such "
                         "as 10/s * ...)", path="expression")
    rate = RateExpression(text, peak, at)
    rate.rate(0.0)  # out of [0, peak] at the start: said at once
    if not math.isfinite(peak):
        raise ModelError("peak must be finite", path="peak")
    return rate
