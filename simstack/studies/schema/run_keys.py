"""The run settings a study file may state, checked when the study is read.

A study states run settings in its ``defaults:``, in a run's ``settings:`` (a metric's, a
grid point's, a figure's run), in the report's ``settings:``, a capacity's ``screen:`` and a
leave-out's ``settings:``. A typo there (``horizen: 5s``) was kept and ignored, and a bad
value (``replications: -1``, ``horizon: 5sec``) was only refused by the first run, naming
``sim.*`` rather than the file and key. Each value is checked by the check its run applies
(``simstack.load.precedence.run_settings`` for the times, ``simstack.tables.stopping`` for a
precision), so the two cannot drift apart; a bound a model may raise (``settings.limits``)
is left to the run, which knows the model.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from simstack.errors import ConfigError, ModelError
from simstack.lang.schema import at_least, located, mapping, suggest
from simstack.lang.units import non_negative, positive, shown
from simstack.load.precedence import run_settings
from simstack.tables.stopping import precision_from

# The settings a study's runs take from it (and from the command line, over its ``defaults:``).
RUN_KEYS = ("seed", "replications", "horizon", "warmup", "precision")
MOST_SEED = 2**63 - 1  # a seed is a 64-bit signed number in the run (``engine.simulate``)


def _seed(value: object) -> int:
    seed = at_least(0)(value)
    if seed > MOST_SEED:
        raise ModelError(f"expected a whole number from 0 to 2^63 - 1, got {shown(value)}")
    return seed


def _time(key: str, check: Callable[[float, object], float]) -> Callable[[object], object]:
    """A time as the run reads it (``run_settings``), its error without the ``sim.`` name
    the command line's would carry (the caller names the file's key); kept as written."""
    def parse(value: object) -> object:
        try:
            seconds = run_settings({key: value})[key]
        except ConfigError as exc:
            raise ModelError(str(exc).removeprefix(f"sim.{key}: ")) from None
        if seconds != "mser5":
            check(seconds, value)
        return value
    return parse


def _precision(value: object) -> object:
    """A precision as the run reads it (``precision_from``), kept as written."""
    try:
        precision_from(value, "precision")  # type: ignore[arg-type]
    except ConfigError as exc:
        raise ModelError(str(exc).removeprefix("precision: ").removeprefix("precision.")) from None
    return value


_CHECKS: dict[str, Callable[[object], object]] = {
    "seed": _seed, "replications": at_least(1), "horizon": _time("horizon", positive),
    "warmup": _time("warmup", non_negative), "precision": _precision}


def run_setting_values(value: object) -> dict[str, Any]:
    """A mapping of run settings, each key known and each value one its run takes: counts as
    whole numbers (``3.0`` is 3), times and a precision as written (the run reads them
    again). A null leaves the earlier layer's value. Errors name the key; the caller's path
    and file are added around it."""
    settings = mapping(value)
    for key, raw in settings.items():
        if key not in _CHECKS:
            raise ModelError(f"unknown run setting{suggest(key, RUN_KEYS)}; known: {', '.join(RUN_KEYS)}", path=key)
        if raw is not None:
            settings[key] = located(_CHECKS[key], raw, key)
    return settings


__all__ = ["RUN_KEYS", "run_setting_values"]
