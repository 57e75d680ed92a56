"""Prediction intervals that state their coverage and the basis each row's interval rests on.

``simstack predict`` evaluates every row under the point's reading and each accepted
alternative (``simstack.studies.readings``); the envelope of those values is what the model's
readings disagree on. This module turns it into the written interval (docs/studies.md,
"Intervals"):

1. **cross-validated**: where the calibration left rows out (``model_error: true``) and the
   row's distance class has enough left-out errors, the band point x exp(+-q) of
   ``simstack.studies.evaluate.conformal``, united with the envelope: the model's own error,
   measured where the model had to predict rows it never saw at that distance, and the
   readings the rows cannot tell apart.
2. **bounds**: otherwise, where the row lies beyond the configurations the calibration was
   fitted on and the section declares ``bounds``: between no further gain and ideal scaling
   from the nearest validated row (its *anchor*), within the limits the model declares
   (``simstack.studies.analysis.bounds.extrapolated``), united with the envelope.
3. **alternatives**: otherwise the envelope alone, when the readings disagree;
4. **none**: otherwise (no left-out rows, too few for the coverage, all with no error, and no
   alternative that disagrees): no low and no high, since an interval of no width would claim
   the coverage at the point.

The union is conservative on purpose: an accepted alternative is a model that fits every row
too, so a band or a bound drawn around the point's reading does not rule it out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from simstack.errors import ModelError
from simstack.io.safeyaml import read_yaml
from simstack.lang.expressions import evaluate
from simstack.load.parameters import declared_parameters, resolve_values
from simstack.load.precedence import calibrated_parameters
from simstack.load.whatif import load_whatif
from simstack.studies.analysis.bounds import extrapolated
from simstack.studies.evaluate.conformal import Coverage, ErrorClass, band, class_table, fold_coverage, needed
from simstack.studies.evaluate.distance import axis_order, counted_axes, distance, fitted_configurations
from simstack.studies.evaluate.leftout import left_out_scores
from simstack.studies.evaluate.metrics import chosen
from simstack.studies.facts import Premises, premises
from simstack.studies.schema.interval import Bounds, Interval
from simstack.studies.schema.metric_types import CapacityMetric, RunMetric
from simstack.studies.schema.prediction_grid import GridPoint
from simstack.studies.schema.selection import RunSelection
from simstack.studies.schema.study import Study

WHERE = "predictions.interval"
NONE = "none"  # the basis of a row with no interval
BOUNDS_IF = "bounds-if"  # a row bounded only if the assumptions it names hold
ASSUMES = "assumes"  # the column naming them (written when the interval has bounds)
DIMENSIONS = {"latency": (1, 0), "throughput": (-1, 0)}  # a limit's dimension, by run metric type


@dataclass(frozen=True)
class Method:
    """What the interval of every grid point rests on, decided before anything runs."""

    interval: Interval
    classes: Mapping[int, ErrorClass] = field(default_factory=dict, hash=False)
    check: Coverage | None = None  # the self-check on the left-out rows
    steps: tuple[tuple[int, bool], ...] = ()  # per grid point: steps beyond the fitted range, fitted exactly
    anchors: Mapping[int, int] = field(default_factory=dict, hash=False)  # bounds row -> its anchor row

    def basis(self, index: int) -> str:
        steps = self.steps[index][0]
        known = self.classes.get(min(steps, 2))
        if known is not None and known.usable:
            return "cross-validated"
        if steps > 0 and self.interval.bounds is not None:
            return "bounds"
        return "alternatives"

    def record(self) -> dict[str, Any]:
        """The method as ``predictions_meta.json`` records it."""
        out: dict[str, Any] = {"coverage": self.interval.coverage, "bases": {}}
        for i in range(len(self.steps)):
            out["bases"][self.basis(i)] = out["bases"].get(self.basis(i), 0) + 1
        if self.interval.model_error:
            out["model_error"] = {
                "score": "|log(measured / predicted)| of the calibration's left-out rows (simulated, else surrogate)",
                "quantile": f"the ceil((n + 1) x {self.interval.coverage:g})-th smallest score of the row's distance "
                            "class (split conformal, Lei et al. 2018), at least "
                            f"{needed(self.interval.coverage)} scores",
                "classes": [c.record() for c in self.classes.values()]}
        if self.check is not None:
            out["self_check"] = self.check.record()
        return out


def method(study: Study) -> Method | None:
    """The left-out errors by class, the self-check, each grid point's distance and each bounds
    row's anchor (None without an interval)."""
    pred = study.predictions
    if pred is None or pred.interval is None:
        return None
    interval = pred.interval
    scored = left_out_scores(study)
    classes = class_table(scored, interval.coverage) if scored is not None else {}
    check = fold_coverage(scored, interval.coverage) if scored is not None else None
    axes = counted_axes(study)
    fitted = fitted_configurations(study)
    order = axis_order(pred, axes)
    steps = tuple(distance(p.at, p.columns, fitted, order, interval.distance.within) for p in pred.points)
    done = Method(interval, classes, check, steps)
    anchors = {}
    for i in range(len(pred.points)):
        if done.basis(i) == "bounds":
            anchors[i] = _anchor(i, pred.points, steps, study)
    return Method(interval, classes, check, steps, anchors)


def _anchor(index: int, points: Sequence[GridPoint], steps: Sequence[tuple[int, bool]], study: Study) -> int:
    """The validated row (fitted exactly on every counted axis) nearest to row ``index``: most
    axis values in common, then fewest steps apart on the others."""
    pred = study.predictions
    assert pred is not None
    order = {axis: {str(v.written): k for k, v in enumerate(values)} for axis, values in pred.axis_values.items()}
    mine = points[index]
    best: tuple[int, int, int] | None = None
    for j, other in enumerate(points):
        if not steps[j][1]:
            continue
        differ = [a for a in mine.at if str(mine.at[a]) != str(other.at[a])]
        apart = sum(abs(order[a].get(str(mine.at[a]), 0) - order[a].get(str(other.at[a]), 0)) for a in differ)
        score = (len(differ), apart, j)
        if best is None or score < best:
            best = score
    if best is None:
        raise ModelError(f"bounds: no row of the grid lies at a configuration the calibration was fitted on, so row "
                         f"{mine.label()} has no validated row to extrapolate from; add such a point to the grid",
                         file=str(study.path), path=f"{WHERE}.bounds")
    return best[2]


def intervals(study: Study, how: Method, indices: Sequence[int], points: Sequence[GridPoint],
              values: Sequence[float], envelopes: Sequence[tuple[float, float]],
              base: Mapping[str, Any], facts_only: dict[int, tuple[float, float]] | None = None
              ) -> list[tuple[float, float, str, str]]:
    """(low, high, basis, assumptions) of each evaluated row: ``indices`` into the grid,
    ``points`` as evaluated (with any selection on top), their point ``values`` and
    ``envelopes``; every bounds row's anchor must be among them. ``base``: the point's fitted
    values. The assumptions are named only on a ``bounds-if`` row, whose facts-only interval
    goes into ``facts_only`` (by grid index) when given."""
    pred = study.predictions
    assert pred is not None
    at = {i: k for k, i in enumerate(indices)}
    out: dict[int, tuple[float, float, str, str]] = {}
    for k, i in enumerate(indices):  # every row that is not extrapolated by bounds first: anchors are such rows
        basis = how.basis(i)
        if basis == "bounds":
            continue
        low, high = envelopes[k]
        if basis == "cross-validated":
            q = how.classes[min(how.steps[i][0], 2)].quantile
            lo, hi = band(values[k], q)
            low, high = min(low, lo), max(high, hi)
        out[i] = (low, high, basis, "")
    bounds = how.interval.bounds
    for k, i in enumerate(indices):
        if i in out:
            continue
        assert bounds is not None
        a = how.anchors[i]
        if a not in out:
            raise ModelError(f"row {pred.points[i].label()}: its anchor {pred.points[a].label()} was not evaluated")
        out[i] = _bounded(study, bounds, points[k], points[at[a]], out[a][:2], envelopes[k], base)
        if facts_only is not None and out[i][2] == BOUNDS_IF:
            facts_only[i] = _extrapolate(study, bounds, points[k], points[at[a]], out[a][:2], base, facts=True)[:2]
    return [_told(out[i]) for i in indices]


def _bounded(study: Study, bounds: Bounds, point: GridPoint, anchor: GridPoint, anchored: tuple[float, float],
             envelope: tuple[float, float], base: Mapping[str, Any]) -> tuple[float, float, str, str]:
    """A row beyond its anchor: ``bounds`` from the facts alone when the limits that rest on
    assumptions do not tighten it, else ``bounds-if`` with the tighter interval and those
    assumptions named (``simstack.studies.facts``); either united with the envelope."""
    f_low, f_high, _ = _extrapolate(study, bounds, point, anchor, anchored, base, facts=True)
    low, high, assumed = _extrapolate(study, bounds, point, anchor, anchored, base, facts=False)
    if not (math.isfinite(low) and math.isfinite(high)):
        raise ModelError(f"bounds: row {point.label()} differs from its anchor {anchor.label()} in more than the "
                         f"axes of along ({', '.join(bounds.along) or 'none'}) and no limit applies to it, so "
                         "nothing bounds it; declare a limit (bounds.limits) that applies to it",
                         file=str(study.path), path=f"{WHERE}.bounds")
    env_low, env_high = envelope
    if math.isfinite(f_low) and math.isfinite(f_high) and (f_low, f_high) == (low, high):
        return min(f_low, env_low), max(f_high, env_high), "bounds", ""
    tighter = {n: why for p in assumed if _tightens(p[0], bounds.sense, f_low, f_high) for n, why in p[1].items()}
    return min(low, env_low), max(high, env_high), BOUNDS_IF, "; ".join(f"${n} {why}" for n, why in tighter.items())


def _tightens(value: float, sense: str, f_low: float, f_high: float) -> bool:
    """Whether a limit (or the ideal-scaling end, as a value) lies inside the facts-only interval."""
    return value > f_low if sense == "lower" else value < f_high


def _extrapolate(study: Study, bounds: Bounds, point: GridPoint, anchor: GridPoint, anchored: tuple[float, float],
                 base: Mapping[str, Any], facts: bool) -> tuple[float, float, list[tuple[float, dict[str, str]]]]:
    """(low, high) from the anchor's interval by ``extrapolated``, with only what rests on facts
    (``facts``) or with everything declared; and each assumption-resting term that entered, as
    (its value, its assumptions)."""
    configured = _configured(study, point)
    assumed: list[tuple[float, dict[str, str]]] = []
    ratio = None
    if bounds.scale is not None and all(str(point.at[x]) == str(anchor.at[x]) for x in point.at
                                        if x not in bounds.along):
        mine = _value_at(study, bounds.scale, point.selection, base, f"{WHERE}.bounds.scale")
        theirs = _value_at(study, bounds.scale, anchor.selection, base, f"{WHERE}.bounds.scale")
        if not (mine > 0 and theirs > 0):
            raise ModelError(f"scale {bounds.scale!r} is {theirs:g} at {anchor.label()} and {mine:g} at "
                             f"{point.label()}: a parallelism must be > 0", file=str(study.path),
                             path=f"{WHERE}.bounds.scale")
        scale = _premises(study, bounds, bounds.scale, configured | _configured(study, anchor))
        if scale.factual or not facts:
            ratio = mine / theirs
        if not scale.factual and not facts:  # the ideal-scaling end rests on the scale's assumptions
            low, high = sorted(anchored)
            ideal = mine / theirs
            assumed.append((low / ideal if bounds.sense == "lower" else high * ideal, dict(scale.assumptions)))
    metric = study.metrics[point.metric or _spec_metric(study)]
    limits = []
    for j, lim in enumerate(bounds.limits):
        if not lim.applies(point.columns):
            continue
        rests = _premises(study, bounds, lim.value, configured)
        if facts and not rests.factual:
            continue
        value = _limit_at(study, lim.value, point.selection, base, metric, f"{WHERE}.bounds.limits[{j}]")
        limits.append(value)
        if not rests.factual:
            assumed.append((value, dict(rests.assumptions)))
    low, high = extrapolated(anchored, bounds.sense, ratio, limits)
    return low, high, assumed


def _spec_metric(study: Study) -> str:
    assert study.predictions is not None
    return study.predictions.metric


def _configured(study: Study, point: GridPoint) -> set[str]:
    """The parameters a grid point sets (its own, its what-if's, its scenario's): the row's
    configuration, the question asked."""
    sel = point.selection
    names = set(sel.parameters)
    if sel.whatif:
        names |= set(load_whatif(sel.whatif, study.folder, named_only=True).parameters)
    if sel.scenario:
        scenario = (read_yaml(study.folder / "model.yaml") or {}).get("scenarios", {}).get(sel.scenario) or {}
        names |= set(scenario.get("parameters") or {})
    return names


def _premises(study: Study, bounds: Bounds, text: str, configured: set[str]) -> Premises:
    """What ``text`` rests on (``simstack.studies.facts``), for the model as written and fitted."""
    declared = declared_parameters(read_yaml(study.folder / "model.yaml") or {})
    fitted = set(calibrated_parameters(study.folder)) | set(study.calibration.parameters if study.calibration else ())
    stated = {name: f.source for name, f in bounds.facts.items()}
    try:
        return premises(text, declared, stated, fitted, configured)
    except ModelError as exc:
        raise exc.at(file=str(study.path), path=f"{WHERE}.bounds") from None


def premises_record(study: Study, bounds: Bounds) -> dict[str, Any]:
    """The scale and each limit with what it rests on, as ``predictions_meta.json`` records them
    (a parameter any grid point sets counts as the row's configuration)."""
    pred = study.predictions
    assert pred is not None
    configured: set[str] = set()
    for p in pred.points:
        configured |= _configured(study, p)
    out: dict[str, Any] = {"sense": bounds.sense, "along": list(bounds.along), "scale": bounds.scale}
    if bounds.scale is not None:
        out["scale_rests_on"] = _premises(study, bounds, bounds.scale, configured).record()
    if bounds.facts:
        out["facts"] = {n: {"value": f.value, "source": f.source} for n, f in bounds.facts.items()}
    out["limits"] = [{"value": lim.value, "where": {k: list(v) for k, v in lim.where.items()},
                      **({"doc": lim.doc} if lim.doc else {}),
                      **_premises(study, bounds, lim.value, configured).record()} for lim in bounds.limits]
    return out


def _told(row: tuple[float, float, str, str]) -> tuple[float, float, str, str]:
    """A row's interval as written: an envelope of no width (no reading disagrees, and nothing
    else bounds the row) is no interval, and says so rather than claim the coverage at the
    point. It still anchors the bounds of the rows beyond it (``intervals``)."""
    low, high, basis, _ = row
    return (math.nan, math.nan, NONE, "") if basis == "alternatives" and not high > low else row


def _value_at(study: Study, text: str, selection: RunSelection, base: Mapping[str, Any], where: str) -> float:
    return _quantity_at(study, text, selection, base, where).value


def _quantity_at(study: Study, text: str, selection: RunSelection, base: Mapping[str, Any], where: str) -> Any:
    """An expression of the model's parameters as they are at a grid point under its fit;
    each parameter enters as a plain number in base units (seconds, bytes, bytes per second)."""
    choice = chosen(selection, base, study.folder)
    made = resolve_values(read_yaml(study.folder / "model.yaml") or {}, choice.scenario, choice.parameters,
                              choice.flags)

    stated = study.predictions.interval.bounds.facts if study.predictions and study.predictions.interval \
        and study.predictions.interval.bounds else {}

    def lookup(name: str) -> Any:
        """The value in base units as a plain number: a calibrated value is one already, and
        a model value such as 20us becomes 2e-05, so the two mix in one expression."""
        if name in stated:
            if name in made.parameters:
                raise ModelError(f"fact ${name} (bounds.facts) is also a parameter of the model; name it otherwise")
            return evaluate(stated[name].value, lambda other: lookup(other)).value
        if name not in made.parameters:
            raise ModelError(f"unknown parameter ${name}; parameters: {', '.join(made.parameters)}")
        value = made.parameters[name].value
        if isinstance(value, str):
            try:
                return evaluate(value, lambda other: lookup(other)).value
            except ModelError:
                raise ModelError(f"parameter ${name} is {value!r}, not a number or a quantity such as 2ms") from None
        return value
    try:
        return evaluate(text, lookup)
    except ModelError as exc:
        raise exc.at(file=str(study.path), path=where) from None


def _limit_at(study: Study, text: str, selection: RunSelection, base: Mapping[str, Any], metric: object,
              where: str) -> float:
    """A limit in the metric's base units (its dimension checked where the metric has one)."""
    q = _quantity_at(study, text, selection, base, where)
    want = (0, 0) if isinstance(metric, CapacityMetric) else \
        DIMENSIONS.get(metric.type) if isinstance(metric, RunMetric) else None
    if want is not None and q.dim not in (want, (0, 0)):  # parameters enter as plain numbers in base units
        raise ModelError(f"limit {text!r} is a {q.kind}, but metric {metric.name!r} is "  # type: ignore[attr-defined]
                         f"{'a number' if want == (0, 0) else 'a time' if want == (1, 0) else 'a rate'}",
                         file=str(study.path), path=where)
    return float(q.value)
