"""The ``predictions.interval`` section: what a prediction interval is made of, and what it promises.

Every interval states its *coverage* (``coverage: 0.90``, the default): the share of true
values it is meant to hold. Each row gets its interval from one *basis*, written beside it:

- ``cross-validated``: the model's own error, measured by leaving rows out
  (``model_error: true`` reads the calibration's ``leave_out`` file): the quantile of the
  left-out errors of the row's *distance class* that the coverage needs
  (``simstack.studies.evaluate.conformal``), united with the envelope below;
- ``bounds``: where the rows cannot say how large the error is (too few left-out errors of
  the row's class, or no leave-out at all) and the row lies beyond the configurations the
  calibration saw: what operational analysis proves from the last validated row, within the
  physical limits the section declares that rest on facts alone (``bounds``;
  ``simstack.studies.analysis.bounds``, ``simstack.studies.facts``), united with the envelope;
- ``bounds-if``: the same row, when a declared limit that rests on an assumption (a fitted or
  chosen value) tightens it: that tighter interval, with the assumptions named in the row; it
  holds only if they do, so it is never called a bound;
- ``alternatives``: otherwise, the envelope of the point and of every accepted alternative
  reading (and, with ``parameter_uncertainty``, each fit with a parameter at an end of its range).

The distance class of a row counts steps along ``distance.axes`` (default: every axis) from
the configurations the calibration was fitted on, among those that share the row's
``distance.within`` columns: inside their range, one step beyond it, or further.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from simstack.errors import ModelError
from simstack.io.outputs import output_name
from simstack.lang.schema import Field, boolean, mapping, name_ref, names, one_of, read_fields, text
from simstack.lang.units import shown
from simstack.studies.schema.selection import RunSelection, merge, parse_selection

BASES = ("cross-validated", "bounds", "bounds-if", "alternatives")


@dataclass(frozen=True)
class Alternative:
    """One alternative reading of the model, for the interval's envelope."""

    name: str
    selection: RunSelection
    calibrated: str | None = None  # a file of fitted parameters beside the model, instead of calibrated.yaml

    def over(self, base: RunSelection | None = None) -> RunSelection:
        """This reading on top of ``base`` (a grid point's selection, or none for a calibration
        target): its scenario, what-if, flags and parameters win. Predict and calibrate both use it."""
        return merge(base or RunSelection(), self.selection)


@dataclass(frozen=True)
class Distance:
    """How a row's distance from the fitted configurations is counted."""

    axes: tuple[str, ...] = ()  # empty: every axis of the grid
    within: tuple[str, ...] = ()  # the fitted range of an axis is that of the rows sharing these columns


@dataclass(frozen=True)
class Limit:
    """A physical limit the model declares, as an expression of its parameters, in the metric's
    base units: a time the metric cannot beat (sense lower) or a rate it cannot exceed (higher)."""

    value: str
    where: Mapping[str, tuple[str, ...]] = field(default_factory=dict, hash=False)  # rows it applies to
    doc: str = ""

    def applies(self, columns: Mapping[str, Any]) -> bool:
        return all(str(columns.get(c)) in allowed for c, allowed in self.where.items())


@dataclass(frozen=True)
class Fact:
    """A number the study states, measured or read in its source (one thread's serial work,
    measured at one thread), for use in a limit as ``$name``."""

    value: str
    source: str


@dataclass(frozen=True)
class Bounds:
    """Operational-analysis bounds from the last validated row (``analysis.bounds.extrapolated``).
    Only limits that rest on facts bound a row; one that rests on an assumption (a fitted or
    chosen value) gives a ``bounds-if`` interval instead (``simstack.studies.facts``)."""

    sense: str  # lower: less is better (a time); higher: more is better (a rate, a capacity)
    along: tuple[str, ...] = ()  # axes along which ideal scaling from the anchor applies
    scale: str | None = None  # the parallelism a row can use: an expression of the model's parameters
    limits: tuple[Limit, ...] = ()
    facts: Mapping[str, Fact] = field(default_factory=dict, hash=False)


@dataclass(frozen=True)
class Interval:
    alternatives: tuple[Alternative, ...]
    low: str = "low"
    high: str = "high"
    parameter_uncertainty: bool = False  # also each fit's values at its parameters' uncertainty low and high
    coverage: float = 0.90
    basis: str = "basis"  # the column that says which basis each row's interval has
    model_error: bool = False  # cross-validated model error from the calibration's leave_out file
    distance: Distance = Distance()
    bounds: Bounds | None = None


def coverage(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.5 <= value < 1:
        raise ModelError(f"expected a share in [0.5, 1), such as 0.90, got {value!r}")
    return float(value)


def _distance(raw: object) -> Distance:
    d = read_fields(raw, {"axes": Field(names, ()), "within": Field(names, ()), "doc": Field(text, "")}, "")
    return Distance(d["axes"], d["within"])


def _limit(raw: object, path: str) -> Limit:
    if isinstance(raw, str):
        return Limit(raw)
    lim = read_fields(raw, {"value": Field(text), "where": Field(mapping, {}), "doc": Field(text, "")}, path)
    where = {str(k): tuple(str(v) for v in (vs if isinstance(vs, list) else [vs])) for k, vs in lim["where"].items()}
    return Limit(lim["value"], where, lim["doc"])


def _facts(raw: object, path: str) -> dict[str, Fact]:
    out = {}
    for name, item in raw.items():  # type: ignore[attr-defined]
        where = f"{path}.facts.{name}"
        f = read_fields(item, {"value": Field(text), "source": Field(text), "doc": Field(text, "")}, where)
        if not f["source"].strip():
            raise ModelError("expected where the value is measured or stated, such as 'baselines.csv: deser_1thr'",
                             path=f"{where}.source")
        out[name_ref(name)] = Fact(f["value"], f["source"].strip())
    return out


def _bounds(raw: object, path: str) -> Bounds:
    b = read_fields(raw, {"sense": Field(one_of("lower", "higher")), "along": Field(names, ()),
                          "scale": Field(text, None), "limits": Field(list, []), "facts": Field(mapping, {}),
                          "doc": Field(text, "")}, path)
    if b["along"] and b["scale"] is None:
        raise ModelError("along: needs scale: (the parallelism a row can use, e.g. min($threads, $cores))",
                         path=f"{path}.along")
    limits = tuple(_limit(item, f"{path}.limits[{i}]") for i, item in enumerate(b["limits"]))
    return Bounds(b["sense"], b["along"], b["scale"], limits, _facts(b["facts"], path))


def parse_interval(raw: object, path: str) -> Interval:
    i = read_fields(raw, {"alternatives": Field(mapping, {}), "low": Field(str, "low"), "high": Field(str, "high"),
                          "parameter_uncertainty": Field(boolean, False), "coverage": Field(coverage, 0.90),
                          "basis": Field(name_ref, "basis"), "model_error": Field(boolean, False),
                          "distance": Field(_distance, Distance()), "bounds": Field(lambda v: v, None),
                          "doc": Field(str, "")}, path)
    alts = []
    for name, sel in i["alternatives"].items():
        where = f"{path}.alternatives.{name}"
        if sel is not None and not isinstance(sel, Mapping):  # dict("ab") is a ValueError, dict(3) a TypeError
            raise ModelError(f"expected a mapping of parameters/flags/scenario/whatif/calibrated, got {shown(sel)}",
                             path=where)
        sel = dict(sel or {})
        calibrated = sel.pop("calibrated", None)
        if calibrated is not None:
            if not isinstance(calibrated, str) or "/" in calibrated or "\\" in calibrated:
                raise ModelError(f"expected the name of a file beside the model (no directories), got {calibrated!r}",
                                 path=f"{where}.calibrated")
            try:
                output_name("fit")(calibrated)
            except ModelError as exc:
                raise exc.at(path=f"{where}.calibrated") from None
        alts.append(Alternative(name_ref(name), parse_selection(sel, where), calibrated))
    bounds = None if i["bounds"] is None else _bounds(i["bounds"], f"{path}.bounds")
    if not alts and not i["model_error"] and bounds is None:
        raise ModelError("expected at least one alternative, model_error: true or bounds", path=f"{path}.alternatives")
    columns = [i["low"], i["high"], i["basis"]]
    if len(set(columns)) < 3:
        raise ModelError(f"low, high and basis need three different column names, got {columns}", path=path)
    return Interval(tuple(alts), i["low"], i["high"], i["parameter_uncertainty"], i["coverage"], i["basis"],
                    i["model_error"], i["distance"], bounds)


def check_axes(interval: Interval, axes: Mapping[str, Any], columns: tuple[str, ...], path: str) -> None:
    """Every axis the section names is an axis of the grid; every column a column of the file."""
    named = [(f"{path}.distance.axes", interval.distance.axes), (f"{path}.bounds.along",
                                                                 interval.bounds.along if interval.bounds else ())]
    for where, listed in named:
        for axis in listed:
            if axis not in axes:
                raise ModelError(f"{axis!r} is not an axis of the grid; axes: {', '.join(axes)}", path=where)
    wanted = [(f"{path}.distance.within", c) for c in interval.distance.within]
    for j, lim in enumerate(interval.bounds.limits if interval.bounds else ()):
        wanted += [(f"{path}.bounds.limits[{j}].where", c) for c in lim.where]
    for where, column in wanted:
        if column not in columns:
            raise ModelError(f"{column!r} is not a column of the predictions; columns: {', '.join(columns)}",
                             path=where)
    if interval.basis in columns:
        raise ModelError(f"basis column {interval.basis!r} is also a grid column; name it otherwise",
                         path=f"{path}.basis")
