"""Leave one value out: how far a calibration carries to a configuration it never saw.

A benchmark campaign usually covers a knob at several values (server sizes, node counts).
Fitting every row and then predicting a new value says nothing about how well the model
extrapolates; fitting all rows but one value's, then simulating that value's rows, does.
``calibration.leave_out`` in a surrogate calibration names the column::

    leave_out:
      column: server_instance        # a match column of the targets
      fallback: {rt_srv_4xlarge: $rt_srv_2xlarge, remote_speed_read: 1000}
      write: data/leave_out.csv      # every left-out row: measured, surrogate, simulated
      by: [server_language, operation]
      settings: {replications: 1}    # run settings of the simulations (optional)
      where: {test_series: [new]}    # only these left-out rows are simulated (optional)

``simstack calibrate model=M holdout=VALUE`` (or ``holdout=all``) fits the other values'
rows through the surrogate, from the model file's values, then simulates the left-out
rows with that fit. A free parameter that no remaining row depends on (the left-out
size's own latency offset) cannot be fitted from the others; it takes its ``fallback``,
another parameter (``$NAME``) or a value, stated beside the result, never the value fitted
on all rows. ``calibrated.yaml`` is left alone; the rows go to ``write`` (one fold's rows
replaced, the others kept) and the fits to the same name with ``.yaml``.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simstack.engine.parallel import Workers
from simstack.errors import ModelError
from simstack.io.outputs import FileGroup, csv_text, output_path, yaml_text
from simstack.io.progress import bar, notes
from simstack.io.safeyaml import read_yaml
from simstack.lang.units import quantity
from simstack.load.loader import build_spec
from simstack.studies.evaluate.metrics import Evaluator
from simstack.studies.evaluate.rowtargets import target_series
from simstack.studies.fit.surrogate import MvaCurves, calibrate_with_surrogate
from simstack.studies.schema.calibration import LEAVE_OUT as WHERE
from simstack.studies.schema.calibration import LeaveOut, SurrogateCalibration
from simstack.studies.schema.selection import RunSelection, merge
from simstack.studies.schema.study import Study


def leave_out(study: Study, which: str, progress: bool = True, jobs: int = 1) -> pd.DataFrame:
    """Fit without each chosen value's rows, simulate them (``jobs`` side by side); returns
    (and writes) the rows."""
    cal = study.calibration
    if not isinstance(cal, SurrogateCalibration) or cal.leave_out is None or cal.rows is None:
        raise ModelError("holdout= needs a surrogate calibration with a leave_out section",
                         file=str(study.path), path="calibration")
    lo: LeaveOut = cal.leave_out
    assert study.predictions is not None
    model_dir = study.path.parent
    metric: Any = study.metrics[cal.rows.metric]
    table, measured, series = target_series(model_dir, cal.rows, study.predictions.axes, metric,
                                            "calibration.targets")
    for key, columns in (("by", lo.by), ("where", tuple(lo.where))):
        missing = [c for c in columns if c not in table.columns]
        if missing:
            raise ModelError(f"{cal.rows.rows} has no column {missing[0]!r}; columns: {', '.join(table.columns)}",
                             file=str(study.path), path=f"{WHERE}.{key}")
    values = list(dict.fromkeys(table[lo.column]))
    folds = values if which == "all" else [which]
    if which != "all" and which not in values:
        raise ModelError(f"holdout={which!r} is not a value of column {lo.column!r} in {cal.rows.rows}; "
                         f"values: all, {', '.join(values)}")
    model = build_spec(read_yaml(model_dir / "model.yaml"), model_dir / "model.yaml")
    names = [n for n, p in model.parameters.items() if p.free is not None] if cal.parameters == ("free",) \
        else list(cal.parameters)
    start = {n: quantity(model.parameters[n].value) for n in names}
    curves = MvaCurves(study, metric.request or "", cal.rows.population)
    say = notes(progress)
    say(f"leave-out {lo.column}: finding which parameters each of {len(series)} series depends on")
    deps = [set(curves.dependencies(s, start, names)) for s in series]
    out_path = output_path(model_dir, lo.write, f"{WHERE}.write")
    fits_path = output_path(model_dir, Path(lo.write).with_suffix(".yaml").as_posix(), f"{WHERE}.write")
    rows = pd.read_csv(out_path, dtype={lo.column: str}) if out_path.exists() else pd.DataFrame()
    fits: dict[str, Any] = dict(read_yaml(fits_path)) if fits_path.exists() else {}
    plan = {}
    for value in folds:  # every fold's parameters checked before anything is fitted
        rest = [i for i, s in enumerate(series) if table.at[s.rows[0], lo.column] != value]
        if not rest:  # one row, or rows that all share the value: nothing is left to fit on
            raise ModelError(f"leaving out {lo.column} {value} leaves no row to fit on: every row of "
                             f"{cal.rows.rows} has it; leave-out needs rows at two values of {lo.column} or more",
                             file=str(study.path), path=f"{WHERE}.column")
        used = set().union(*(deps[i] for i in rest))
        plan[value] = [n for j, n in enumerate(names) if j in used]
        lacking = [n for n in names if n not in plan[value] and n not in lo.fallback]
        if lacking:
            raise ModelError(f"leaving out {lo.column} {value}: no remaining row depends on {', '.join(lacking)}; "
                             "give each a fallback (a value, or $PARAMETER)", file=str(study.path),
                             path=f"{WHERE}.fallback")
    for value, fitted in plan.items():
        say(f"leave-out {lo.column} = {value}: fitting {len(fitted)} parameters on the other rows")
        fold_cal = dataclasses.replace(
            cal, parameters=tuple(fitted), confirm=False, write_rows=None,
            max_evaluations=lo.max_evaluations or cal.max_evaluations, jacobian=lo.jacobian or cal.jacobian,
            rows=dataclasses.replace(cal.rows, exclude=((lo.column, value),)))
        result = calibrate_with_surrogate(study, fold_cal, progress, jobs=jobs)
        params = _with_fallbacks(result["parameters"], names, lo.fallback, model)
        started = time.perf_counter()
        held = _held_out_rows(study, table, measured, series, value, lo, curves, params, progress, jobs)
        rows = pd.concat([rows[rows[lo.column] != value] if not rows.empty else rows, held], ignore_index=True)
        fits[value] = {"parameters": params, "fallback": {n: lo.fallback[n] for n in names if n not in fitted},
                       "evaluations": result["evaluations"], "jacobian": result.get("jacobian"),
                       "converged": result.get("converged"),
                       "fit": result["fit"], "fit_seconds": result["seconds"],
                       "simulated_rows": int(held["simulated"].notna().sum()),
                       "simulation_seconds": round(time.perf_counter() - started, 1), "date": result["date"]}
        with FileGroup() as group:  # the rows and the fits of the folds so far: both or neither
            group.add(out_path, csv_text(rows))
            group.add(fits_path, yaml_text(fits))
    return rows


def _with_fallbacks(fitted: Mapping[str, Any], names: list[str], fallback: Mapping[str, Any],
                    model: Any) -> dict[str, Any]:
    """The fold's values: fitted ones, then each unfitted one from its fallback."""
    out = dict(fitted)
    for name in names:
        if name in out:
            continue
        spec = fallback[name]
        if isinstance(spec, str) and spec.startswith("$"):
            ref = spec[1:]
            if ref not in out and ref not in model.parameters:
                raise ModelError(f"fallback {spec!r} of {name} is not a parameter", path=f"{WHERE}.fallback.{name}")
            out[name] = out[ref] if ref in out else model.parameters[ref].value
        else:
            out[name] = spec
    return out


def _held_out_rows(study: Study, table: pd.DataFrame, measured: np.ndarray, series: list[Any], value: str,
                   lo: LeaveOut, curves: Any, params: Mapping[str, Any], progress: bool,
                   processes: int = 1) -> pd.DataFrame:
    """The left-out rows with the fold's surrogate and simulated values (x the targets' scale);
    the rows simulated side by side in ``processes`` workers (each its own run, seed and value)."""
    cal: Any = study.calibration
    targets = cal.rows
    numeric = {n: quantity(v) for n, v in params.items()}
    records, jobs = [], []
    for s in series:
        if table.at[s.rows[0], lo.column] != value:
            continue
        curve = curves.curve(s, numeric)
        for n, i in zip(s.populations, s.rows, strict=True):
            row = table.iloc[i]
            simulate = all(str(row[c]) in allowed for c, allowed in lo.where.items())
            records.append({**{c: row[c] for c in (*targets.match, *lo.by, *targets.flags.values())
                               if c in table.columns},
                            targets.population: int(n), "measured": measured[i] * targets.scale,
                            "surrogate": round(curve[n] * targets.scale, 1), "simulated": np.nan})
            if simulate:
                jobs.append((len(records) - 1, merge(s.selection, RunSelection(
                    parameters={targets.population: int(n)}, settings=dict(lo.settings)))))
    with Workers(processes) as workers, bar(total=len(jobs), desc=f"simulating {lo.column} = {value}",
                                            shown=progress) as runs:
        simulated = workers.map(_left_out_value, [(study, params, targets.metric, sel) for _, sel in jobs],
                                on_done=lambda _i, _v: runs.update(1))
        for (k, _), found in zip(jobs, simulated, strict=True):
            records[k]["simulated"] = round(found * targets.scale, 1)
    out = pd.DataFrame.from_records(records)
    out.insert(0, "left_out", value)
    out[lo.column] = value
    out["surrogate_rel_error"] = (out["surrogate"] / out["measured"] - 1).round(5)
    out["simulated_rel_error"] = (out["simulated"] / out["measured"] - 1).round(5)
    return out


def _left_out_value(study: Study, params: Mapping[str, Any], metric: str, selection: RunSelection) -> float:
    """One left-out row simulated with the fold's fit (in a worker: its own evaluator)."""
    return Evaluator(study, parameters=params).value(metric, selection)


def error_table(rows: pd.DataFrame, column: str, by: tuple[str, ...], value: str = "simulated_rel_error"
                ) -> pd.DataFrame:
    """Median |relative error| per left-out value (rows) and ``by`` group (columns), with counts."""
    done = rows[rows[value].notna()]
    err = done.assign(_e=done[value].abs())
    keys = [" / ".join(map(str, k)) if isinstance(k, tuple) else str(k) for k in err.groupby(list(by)).groups] \
        if by else []
    table = err.groupby([column, *by])["_e"].median().unstack(list(by)) if by else \
        err.groupby(column)["_e"].median().to_frame("all")
    if by:  # label the unstacked columns by their own keys (their order need not be the groups')
        table.columns = [" / ".join(map(str, k)) if isinstance(k, tuple) else str(k) for k in table.columns]
        table = table.reindex(columns=keys)
    table["all"] = err.groupby(column)["_e"].median()
    table["rows"] = err.groupby(column)["_e"].size()
    overall = pd.DataFrame([{**({k: float(v) for k, v in zip(keys, err.groupby(list(by))["_e"].median(),
                                                                  strict=True)} if by else {}),
                             "all": float(err["_e"].median()), "rows": len(err)}], index=["all left out"])
    return pd.concat([table, overall])
