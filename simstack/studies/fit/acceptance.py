"""The acceptance rule of a prediction interval: which alternative readings may widen it.

An alternative reading of a model (``predictions.interval.alternatives``) enters the envelope
only if its fit is *acceptable*: every calibration target within its check's tolerance (on
the check's side), read from the residuals its ``calibrated:`` file records. A surrogate
calibration fits CSV rows rather than checks; its file records the residuals of the checks
its confirmation ran, and those are the ones judged. An alternative with no ``calibrated:``
file shares the point prediction's fit and is not judged; neither is a file that records no
residuals (written by hand). The profile of a parameter (``simstack.studies.fit.uncertainty``) uses the
same rule to say how far the parameter may move.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from simstack.errors import ModelError
from simstack.io.paths import inside
from simstack.io.safeyaml import read_yaml
from simstack.studies.schema.prediction_grid import Alternative
from simstack.studies.schema.study import Study, within

RULE = ("an alternative enters the envelope only if every calibration target (for a surrogate calibration: "
        "every check its confirmation ran) is within its check's tolerance, by the residuals of its calibrated file")


@dataclass(frozen=True)
class Verdict:
    """Whether one alternative widens the interval, and the residual that decided it."""

    name: str
    status: str  # accepted | rejected | not judged
    reason: str = ""
    worst: Mapping[str, Any] | None = None  # {check, rel_error, tolerance, side}: the furthest out

    @property
    def enters(self) -> bool:
        return self.status != "rejected"

    def record(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "status": self.status}
        if self.reason:
            out["reason"] = self.reason
        if self.worst is not None:
            out["worst_residual"] = dict(self.worst)
        return out


def target_checks(study: Study, residuals: Sequence[Mapping[str, Any]]) -> list[str]:
    """The checks a fit is judged on: the calibration targets, or (a surrogate calibration,
    which has none) the checks its residuals name."""
    targets = list(study.calibration.targets) if study.calibration is not None else []
    return targets or [str(r.get("check")) for r in residuals]


def worst_residual(study: Study, residuals: Sequence[Mapping[str, Any]]) -> tuple[bool, dict[str, Any] | None]:
    """Whether every target is within tolerance, and the target furthest out (relative to its
    tolerance); a target with no residual counts as out."""
    checks = {c.id: c for c in study.checks}
    by_check = {str(r.get("check")): r for r in residuals}
    ok, worst, score = True, None, -math.inf
    for name in target_checks(study, residuals):
        check = checks.get(name)
        if check is None or check.baseline is None:
            continue  # a residual of a check the study no longer has, or an ordering
        row = by_check.get(name)
        error = float(row["rel_error"]) if row is not None and row.get("rel_error") is not None else math.nan
        inside = within(error, check.tolerance, check.side)
        ok &= inside
        excess = 0.0 if error == 0 else abs(error) / check.tolerance if check.tolerance and math.isfinite(error) \
            else math.inf
        if excess > score or worst is None:
            score = excess
            worst = {"check": name, "rel_error": error, "tolerance": check.tolerance, "side": check.side}
    return ok, worst


def fitted(study: Study, alternative: Alternative) -> Mapping[str, Any] | None:
    """The alternative's ``calibrated:`` file as read (None without one); a missing file or one
    without a ``parameters`` mapping is refused."""
    if alternative.calibrated is None:
        return None
    key = f"predictions.interval.alternatives.{alternative.name}.calibrated"
    try:
        path = inside(study.path.parent, alternative.calibrated, key)  # not through a link out of the folder
    except ModelError as exc:
        raise exc.at(file=str(study.path)) from None
    if not path.is_file():
        raise ModelError(f"alternative {alternative.name!r}: no file {alternative.calibrated!r} beside the model",
                         file=str(study.path), path=key)
    doc = read_yaml(path) or {}
    if not isinstance(doc, Mapping) or not isinstance(doc.get("parameters"), Mapping):
        raise ModelError("expected a 'parameters' mapping", file=str(path))
    return doc


def judge(study: Study, alternative: Alternative) -> Verdict:
    doc = fitted(study, alternative)
    if doc is None:
        return Verdict(alternative.name, "not judged", "no calibrated: file; it shares the point's fit")
    residuals = doc.get("residuals")
    if not isinstance(residuals, list) or not residuals:
        return Verdict(alternative.name, "not judged", f"{alternative.calibrated} records no residuals")
    ok, worst = worst_residual(study, [r for r in residuals if isinstance(r, Mapping)])
    return Verdict(alternative.name, "accepted" if ok else "rejected", worst=worst)


def verdicts(study: Study) -> list[Verdict]:
    """One verdict per alternative of the study's interval, in order (none without one)."""
    interval = study.predictions.interval if study.predictions is not None else None
    return [] if interval is None else [judge(study, a) for a in interval.alternatives]


def describe(verdict: Verdict) -> str:
    """One printed line: ``alternative slow: rejected (lat_two error +30.0 % outside 20 %)``."""
    text = f"alternative {verdict.name}: {verdict.status}"
    w = verdict.worst
    if verdict.status == "rejected" and w is not None:
        text += f" ({w['check']} error {w['rel_error']:+.1%} outside {_band(w['tolerance'], w['side'])})"
    elif verdict.status == "accepted" and w is not None:
        text += f" (largest: {w['check']} error {w['rel_error']:+.1%} within {_band(w['tolerance'], w['side'])})"
    elif verdict.reason:
        text += f" ({verdict.reason})"
    return text


def _band(tolerance: float, side: str) -> str:
    return {"at_least": f">= -{tolerance:.0%}", "at_most": f"<= +{tolerance:.0%}"}.get(side, f"±{tolerance:.0%}")
