"""Whether a fit can be read as a result.

A least-squares fit always ends somewhere: when the truth lies outside a parameter's
``free: [low, high]`` it ends pinned at an end of the range, with its targets still far off
(a service time of 1 s fitted in [0.05 s, 0.2 s] left the sojourn 89 % short), and printed
like any other fit it read as an answer (issue 30.13). The verdict is data in the result, and
so in ``calibrated.yaml``: the parameters at an end of their range (``at_bounds``) and the
checks the fit leaves outside their tolerance (``outside_tolerance``, each with its error);
the command line prints both as a warning, never as a normal result.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from simstack.studies.schema.study import CheckSpec

# A point of the unit cube this close to 0 or 1 is at an end of its range: least squares
# stops a hair inside an active bound (x = 0.99999), bisection returns the end itself.
AT_END = 1e-3


def ends_reached(names: Sequence[str], x: Iterable[float]) -> list[str]:
    """The parameters whose point in the unit cube (``Fit``: 0 is ``low``, 1 is ``high``) is at an end."""
    return [name for name, xi in zip(names, np.asarray(list(x), dtype=float), strict=True)
            if xi <= AT_END or xi >= 1 - AT_END]


def outside_tolerance(residuals: Iterable[Mapping[str, Any]], checks: Iterable[CheckSpec]) -> list[dict[str, Any]]:
    """The residuals (``check``, ``rel_error``) outside their check's tolerance, on its side."""
    by_id = {c.id: c for c in checks}
    return [{"check": r["check"], "rel_error": float(r["rel_error"]), "tolerance": by_id[r["check"]].tolerance}
            for r in residuals if r["check"] in by_id
            and not (np.isfinite(r["rel_error"]) and by_id[r["check"]].passes(float(r["rel_error"])))]


def judged(result: dict[str, Any], at_bounds: list[str], checks: Iterable[CheckSpec]) -> dict[str, Any]:
    """``result`` with its verdict: ``at_bounds`` and ``outside_tolerance`` (both empty for a good fit)."""
    result["at_bounds"] = at_bounds
    result["outside_tolerance"] = outside_tolerance(result.get("residuals") or [], checks)
    return result


def poor_fit(result: Mapping[str, Any]) -> bool:
    """Whether the fit is flagged: a parameter at an end of its range or a check outside its tolerance."""
    return bool(result.get("at_bounds") or result.get("outside_tolerance"))
