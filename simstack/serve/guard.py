"""What a request to the page may ask, checked by the server: anyone at the page (or a page of
another site, through the browser) sends what it likes, so the limits the page's fields show
(``min``/``max`` in the browser) are checked again here, and a request that is not the page's
own is refused before Dash reads it.

- ``Host``: bound to a loopback address, only a loopback name is served (``localhost``,
  ``127.0.0.1``, ``[::1]``): a site whose name an attacker points at 127.0.0.1 (DNS
  rebinding) gets 403, never the page. Bound to another interface the token decides.
- ``Origin``: a request that a page of another site sends (a cross-site ``POST`` to
  ``/_dash-update-component``, which would start a run or save a what-if) is refused.
- A request body is at most ``MOST_BODY`` bytes.
- A simulation's numbers: ``run_numbers``.
"""

from __future__ import annotations

import ipaddress
import math
from typing import Any
from urllib.parse import urlsplit

from dash import Dash
from flask import Response, request

from simstack.errors import ConfigError

MOST_BODY = 1 << 20  # bytes: the page's largest request (every control of tango) is a few KB
MOST_REPLICATIONS = 100  # the page's field's max; a precision target adds its own (answers.PRECISION_MOST)
MOST_HORIZON = 1e9  # simulated seconds: past it the clock's resolution is coarser than 0.1 us
PRECISION_PERCENT = (0.1, 99.0)  # the page's field's range


def _loopback_name(host: str) -> bool:
    name = (urlsplit(f"//{host}").hostname or "").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def guard(app: Dash, loopback: bool) -> None:
    """Refuse what is not the page's own request (module docstring); ``loopback``: bound to a
    loopback address, so the ``Host`` must name one."""
    app.server.config["MAX_CONTENT_LENGTH"] = MOST_BODY

    @app.server.before_request
    def own_request() -> Response | None:
        if loopback and not _loopback_name(request.host):
            return _refused(f"the Host {request.host[:80]!r} is not this server's (it serves localhost only)")
        origin = request.headers.get("Origin")
        if origin is not None and urlsplit(origin).netloc.lower() != request.host.lower():
            return _refused(f"a request from another site ({origin[:80]!r}) is not served")
        return None


def _refused(why: str) -> Response:
    return Response(f"simstack serve: {why}\n", status=403, mimetype="text/plain")


def _number(value: Any, field: str, rule: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ConfigError(f"{field} expects {rule}, got {str(value)[:40]!r}")
    try:
        number = float(value)
    except ValueError:
        raise ConfigError(f"{field} expects {rule}, got {str(value)[:40]!r}") from None
    if not math.isfinite(number):
        raise ConfigError(f"{field} expects {rule}, got {number!r}")
    return number


def fields(values: list[Any]) -> list[float | None]:
    """The number fields' values, a value that is not a finite number (a string, a list, NaN,
    inf: what only a hand-made request sends) read as an empty field."""
    out: list[float | None] = []
    for v in values:
        try:
            out.append(_number(v, "", "") if v is not None else None)
        except ConfigError:
            out.append(None)
    return out


def run_numbers(replications: Any, horizon: Any, precision: Any) -> tuple[int, float | None, float | None]:
    """The page's replications, horizon (s) and precision target (%) as a run takes them
    (replications, seconds or None, a share or None); a value outside what the page's field
    accepts is refused in the page's words (``ConfigError``)."""
    reps = 5 if replications is None else _number(replications, "replications",
                                                  f"a whole number from 2 to {MOST_REPLICATIONS}")
    if reps != int(reps) or not 2 <= reps <= MOST_REPLICATIONS:
        raise ConfigError(f"replications expects a whole number from 2 to {MOST_REPLICATIONS}, got {reps:g}")
    span = (None if horizon is None else
            _number(horizon, "the horizon (s)", f"a number of seconds up to {MOST_HORIZON:g}"))
    if span is not None and not 0 < span <= MOST_HORIZON:
        raise ConfigError(f"the horizon (s) expects a number of seconds above 0 and up to {MOST_HORIZON:g}, "
                          f"got {span:g}")
    low, high = PRECISION_PERCENT
    share = None if precision is None else _number(precision, "the precision target (%)", f"{low:g} to {high:g}")
    if share is not None and not low <= share <= high:
        raise ConfigError(f"the precision target (%) expects {low:g} to {high:g}, got {share:g}")
    return int(reps), span, None if share is None else share / 100


__all__ = ["MOST_BODY", "MOST_HORIZON", "MOST_REPLICATIONS", "fields", "guard", "run_numbers"]
