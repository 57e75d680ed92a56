"""Calibration through an analytic surrogate: fit hundreds of measured rows in minutes.

Simulating every measured configuration for every candidate parameter set would take
hours; approximate MVA of the same model file (``simstack.studies.analysis``) answers a whole
load curve in a fraction of a second. So ``calibration: {surrogate: mva, targets: {rows:
...}}`` fits the free parameters to CSV rows (``simstack.studies.evaluate.rowtargets``) with the solver
standing in for the simulator, then runs the study's checks once in the simulator with
the fitted values (the confirmation), so the gap between surrogate and simulator is
stated in ``calibrated.yaml`` beside the fit. How close the two are in general is what
a study's ``crosscheck`` section measures.

Two things keep it fast without anything model-specific: one solve per *series* (the MVA
population recursion passes through every smaller client count), and a cache keyed by
the free parameters each series actually depends on (found once by perturbing each and
comparing the resolved model), so a finite-difference column re-solves only the series
its parameter reaches.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simstack.engine.parallel import Workers
from simstack.errors import ModelError
from simstack.io.outputs import output_path, write_table
from simstack.io.progress import notes
from simstack.io.safeyaml import read_yaml
from simstack.lang.spec import ClosedWorkload, ModelSpec
from simstack.lang.units import quantity
from simstack.load.loader import build_spec
from simstack.studies.analysis.network import build_network
from simstack.studies.analysis.nodes import HoldNode, Network, Visit
from simstack.studies.analysis.solver import solve
from simstack.studies.evaluate.baselines import file_hash
from simstack.studies.evaluate.metrics import chosen
from simstack.studies.evaluate.rowtargets import Series, target_series
from simstack.studies.fit.candidate import as_written
from simstack.studies.fit.confirm import confirmation, residuals
from simstack.studies.fit.corrections import CheckBands, corrected_fit
from simstack.studies.fit.jacobians import BroydenJacobian
from simstack.studies.fit.seriescurves import SeriesCurves
from simstack.studies.schema.calibration import SurrogateCalibration
from simstack.studies.schema.study import Study


class MvaCurves:
    """Throughput curves of one request from the analytic solver, one solve per series."""

    def __init__(self, study: Study, request: str, population: str):
        self.model_dir = study.path.parent
        self.file = self.model_dir / "model.yaml"
        self.doc = read_yaml(self.file)
        self.request = request
        self.population = population
        self.solves = 0

    def spec(self, series: Series, values: Mapping[str, Any], clients: int | None) -> ModelSpec:
        sel = series.selection
        choice = chosen(sel, values, self.model_dir)
        params = choice.parameters
        if clients is not None:
            params[self.population] = clients
        try:
            return build_spec(self.doc, self.file, scenario=choice.scenario, parameters=params, flags=choice.flags)
        except ModelError as exc:
            raise exc.at(file=str(self.file)) from None

    def curve(self, series: Series, values: Mapping[str, Any]) -> dict[int, float]:
        """Throughput (per second) at each population of the series."""
        wanted = sorted(set(series.populations))
        spec = self.spec(series, values, wanted[-1])
        net = build_network(spec)
        names = [name for name, chain in net.chains.items() if chain.request == self.request]
        if not names:
            raise ModelError(f"request {self.request!r} is not reached by any workload in series {series.label}")
        closed = [c for c in net.chains.values() if c.closed and (c.population or 0) > 0]
        out: dict[int, float] = {}
        def keep(n: int, x: Mapping[str, float]) -> None:
            out[n] = sum(x[k] for k in names)

        small = build_network(self.spec(series, values, wanted[0])) if len(wanted) > 1 else net
        if len(closed) == 1:  # the recursion passes through every smaller population
            if len(wanted) == 1 or _same_but_population(net, small):
                solve(net, each_population=keep)
                self.solves += 1
                return {n: out[n] for n in wanted}
            at = _population_networks(spec, closed[0].name)
            if _same_but_population(at(wanted[0]), small):  # per-client data: moments per step
                solve(net, each_population=keep, before_population=lambda n: _copy_moments(at(n), net))
                self.solves += 1
                return {n: out[n] for n in wanted}
        scaled = _scaled_populations(net, small, wanted[0], wanted[-1])
        for n in wanted:  # one solve per population (several chains, or per-client data)
            sol = solve(scaled(n) if scaled is not None else build_network(self.spec(series, values, n)))
            self.solves += 1
            out[n] = sum(sol.chains[k].throughput for k in names)
        return out

    def value(self, series: Series, values: Mapping[str, Any]) -> float:
        """Throughput (per second) at the series' selection as it stands."""
        net = build_network(self.spec(series, values, None))
        sol = solve(net)
        self.solves += 1
        return sum(c.throughput for c in sol.chains.values() if c.request == self.request)

    def dependencies(self, series: Series, values: Mapping[str, float], names: list[str]) -> list[int]:
        """Which free parameters change this series' network (the others cannot move its
        solution): compared as the solver sees it, so a parameter the series resolves but
        never uses (a write cost in a read series, a disabled workload's) is not counted."""
        ends = sorted({min(series.populations), max(series.populations)})
        specs = [self.spec(series, values, n) for n in ends]
        base = [dataclasses.replace(s, parameters={}) for s in specs]
        nets: list[Network] = []
        out = []
        for j, name in enumerate(names):
            moved = {**values, name: values[name] * 1.37 if values[name] else 1e-6}
            changed = [self.spec(series, moved, n) for n in ends]
            if all(dataclasses.replace(c, parameters={}) == b for c, b in zip(changed, base, strict=True)):
                continue  # not even resolved differently
            nets = nets or [build_network(s) for s in specs]
            if any(build_network(c) != net for c, net in zip(changed, nets, strict=True)):
                out.append(j)
        return out


def _population_networks(spec: ModelSpec, workload: str) -> Callable[[int], Network]:
    """The network of ``spec`` with ``workload``'s clients set to n (nothing else re-resolved)."""
    def at(n: int) -> Network:
        w = spec.workloads[workload]
        assert isinstance(w, ClosedWorkload)  # the chain solved by the recursion is closed
        return build_network(dataclasses.replace(spec, workloads={**spec.workloads,
                                                                  workload: dataclasses.replace(w, clients=n)}))
    return at


def _scaled_populations(big: Network, small: Network, low: int, high: int) -> Callable[[int], Network] | None:
    """The network at n clients from the one at ``high``, when the ends differ only in the
    closed populations and each of those is the client count (several closed chains: a
    Java client's JVM background beside its requests); None otherwise. Rebuilding the model
    for every n gave the same networks and cost a third of such a series' solve."""
    if not _same_but_population(big, small):
        return None
    scaled = [name for name, c in big.chains.items() if c.population != small.chains[name].population]
    if any((big.chains[k].population, small.chains[k].population) != (high, low) for k in scaled):
        return None
    return lambda n: Network(big.stations, {name: dataclasses.replace(c, population=n) if name in scaled else c
                                            for name, c in big.chains.items()})


def _copy_moments(src: Network, dst: Network) -> None:
    """Visit means and variances of ``src`` into the same-shaped ``dst``, in place (the
    solver keys its state by node identity, so the nodes must stay the same objects)."""
    def walk(a: list[Any], b: list[Any]) -> None:
        for x, y in zip(a, b, strict=True):
            if isinstance(x, Visit):
                y.mean, y.var = x.mean, x.var
            elif isinstance(x, HoldNode):
                walk(x.body, y.body)
            else:
                for p, q in zip(x.branches, y.branches, strict=True):
                    walk(p, q)
    for name, chain in src.chains.items():
        walk(chain.body, dst.chains[name].body)


def _same_but_population(a: Network, b: Network) -> bool:
    """True when two networks differ at most in their closed populations. Per-client data
    (``indexed(FILE, column)`` by client, averaged over the clients present) makes the
    stations themselves depend on the population; then a smaller population is not a step
    of the larger one's recursion and needs its own solve."""
    return a.stations == b.stations and all(
        (c.request, c.body, c.think, c.rate, c.parent) == (d.request, d.body, d.think, d.rate, d.parent)
        for c, d in zip(a.chains.values(), b.chains.values(), strict=True)) and list(a.chains) == list(b.chains)


def calibrate_with_surrogate(study: Study, cal: SurrogateCalibration, progress: bool = True,
                             alternative: Any = None, jobs: int = 1) -> dict[str, Any]:
    """Fit ``cal``'s free parameters to its rows through MVA; confirm with the simulator.
    ``alternative`` (``simstack.studies.schema.prediction_grid.Alternative``) goes on top of every series.
    ``jobs`` workers solve each candidate's curves and each Jacobian's side by side
    (``simstack.studies.fit.seriescurves``: the same fit)."""
    with Workers(jobs) as workers:
        return _calibrate(study, cal, progress, alternative, workers)


def _calibrate(study: Study, cal: SurrogateCalibration, progress: bool, alternative: Any,
               workers: Workers) -> dict[str, Any]:
    assert cal.rows is not None and study.predictions is not None
    model_file = study.path.parent / "model.yaml"
    model = build_spec(read_yaml(model_file), model_file)
    names = [n for n, p in model.parameters.items() if p.free is not None] if cal.parameters == ("free",) \
        else list(cal.parameters)
    for name in names:
        param = model.parameters.get(name)
        if param is None or param.free is None:
            raise ModelError(f"calibration parameter {name!r} must be declared in model.yaml with free: [low, high]",
                             file=str(study.path), path="calibration.parameters")
    low = np.array([quantity(model.parameters[n].free[0]) for n in names])  # type: ignore[index]
    high = np.array([quantity(model.parameters[n].free[1]) for n in names])  # type: ignore[index]
    x0 = np.clip([quantity(model.parameters[n].value) for n in names], low, high)
    metric: Any = study.metrics[cal.rows.metric]
    table, measured, series = target_series(study.path.parent, cal.rows, study.predictions.axes, metric,
                                            "calibration.targets")
    if alternative is not None:
        series = [dataclasses.replace(s, selection=alternative.over(s.selection)) for s in series]
    curves = MvaCurves(study, metric.request or "", cal.rows.population)
    started = time.perf_counter()
    say = notes(progress)
    say(f"calibrating {study.model}: {len(names)} parameters on {len(table)} rows ({len(series)} series) "
        f"through {cal.surrogate}")
    start_values = dict(zip(names, x0, strict=True))
    solved = SeriesCurves(curves, series, names, len(table), workers)
    solved.find_dependencies(start_values)
    predicted = solved.predicted

    calls = 0
    scale = np.where(x0 != 0, np.abs(x0), (high - low) * 1e-3)

    bands = None
    if cal.check_weight > 0:  # the checks' rows held inside their tolerance (simstack.studies.fit.corrections)
        bands = CheckBands.of(study, table, curves.request, cal.check_weight, alternative)
        say(f"  check_weight {cal.check_weight:g}: {len(bands.rows)} checks' rows held within "
            f"{bands.margin:g} x their tolerance")

    def fitted(start: np.ndarray, multipliers: np.ndarray) -> Any:
        """The least-squares fit from ``start`` of the surrogate times ``multipliers`` (per row)."""
        def residuals(x: np.ndarray) -> np.ndarray:
            nonlocal calls
            calls += 1
            solved.solve_ahead([x])
            pred = np.maximum(predicted(x) * multipliers, 1e-300)
            if calls % 10 == 1:
                say(f"  evaluation {calls}: {curves.solves} solves, {time.perf_counter() - started:.0f} s")
            out = np.log(pred / measured) if cal.residual == "log" else pred / measured - 1
            return out if bands is None else np.concatenate([out, bands.penalties(pred / measured - 1)])

        fun: Any = residuals
        jac: Any = "2-point"
        side_by_side = solved.jacobian_map()  # a Jacobian's columns solved in one map
        if cal.jacobian == "broyden":  # one finite-difference pass, then rank-one updates (fit.jacobians)
            jac = BroydenJacobian(residuals, low, high, scale)
            fun, side_by_side = jac.fun, None
        from scipy import optimize  # here: a check or prediction needs no optimiser at start-up

        return optimize.least_squares(fun, start, jac=jac, bounds=(low, high), loss=cal.loss, f_scale=cal.f_scale,
                                      x_scale=scale, diff_step=1e-3, max_nfev=cal.max_evaluations,
                                      ftol=cal.tolerance, xtol=cal.tolerance, workers=side_by_side)

    fit = fitted(x0, np.ones(len(table)))
    x_fit, multipliers, rounds = fit.x, np.ones(len(table)), None
    if cal.corrections and cal.confirm and study.checks:
        written = {n: model.parameters[n].value for n in names}
        x_fit, multipliers, rounds = corrected_fit(study, cal, table, curves, written, fit, fitted, alternative, say,
                                                   workers)
    values = dict(zip(names, map(float, x_fit), strict=True))
    pred = predicted(x_fit) * multipliers
    took = time.perf_counter() - started
    evaluations = int(fit.nfev) + sum(int(r["evaluations"]) for r in rounds or [] if r["round"])
    say(f"  {fit.message if rounds is None else rounds[-1]['stopped']} ({evaluations} evaluations, "
        f"{curves.solves} solves, {took:.0f} s)")
    if cal.write_rows:  # an alternative's rows beside the point's (fit_rows_orb_pool.csv), never over them
        rows_file = Path(cal.write_rows)
        if alternative is not None:
            rows_file = rows_file.with_name(f"{rows_file.stem}_{alternative.name}{rows_file.suffix}")
        _write_rows(output_path(study.folder, rows_file.as_posix(), "calibration.write_rows"), table,
                    pred * cal.rows.scale, measured * cal.rows.scale)
    result: dict[str, Any] = {
        "parameters": {n: as_written(model.parameters[n].value, v) for n, v in values.items()},
        "method": f"least squares ({cal.loss}, f_scale {cal.f_scale:g}) on {cal.residual} errors of "
                  f"{len(table)} rows, model solved by approximate MVA (simstack.studies.analysis)",
        "surrogate": cal.surrogate,
        "seed": cal.seed,
        "evaluations": evaluations,
        "jacobian": cal.jacobian,
        "converged": bool(fit.status > 0),  # a tolerance was met (0: the evaluation budget ran out)
        "stopped": str(fit.message),
        "solves": curves.solves,
        "seconds": round(took, 1),
        "fit": _summary(table, pred, measured, cal.summary_by),
        "start": _summary(table, predicted(x0), measured, ()),  # the model file's values (cached)
        "at_bounds": [n for n, v, lo, hi in zip(names, x_fit, low, high, strict=True)
                      if np.isclose(v, lo, rtol=1e-6, atol=1e-15) or np.isclose(v, hi, rtol=1e-6, atol=1e-15)],
        "rows": {"file": cal.rows.rows, "count": len(table), "series": len(series),
                 "sha256": file_hash(study.path.parent / cal.rows.rows)},
        "residuals": [],
        "date": dt.date.today().isoformat(),
    }
    if rounds is not None:  # the adopted round's confirmation, and every round's
        result["residuals"] = [{k: r[k] for k in ("check", "predicted", "measured", "rel_error")}
                               for r in rounds[-1]["confirmation"]]
        result["corrections"] = rounds
        if len(rounds) > 1:  # the adopted parameters are the last round's fit
            result.update(converged=rounds[-1]["converged"], stopped=rounds[-1]["stopped"])
    elif cal.confirm and study.checks:
        result["residuals"] = residuals(confirmation(study, cal.seed, values, alternative, workers))
    if alternative is not None:
        result["alternative"] = alternative.name
    return result


def _summary(table: pd.DataFrame, pred: np.ndarray, measured: np.ndarray, by: tuple[str, ...]) -> dict[str, Any]:
    err = pred / measured - 1
    out: dict[str, Any] = {"median_abs_rel_error": round(float(np.median(np.abs(err))), 4),
                           "p90_abs_rel_error": round(float(np.quantile(np.abs(err), 0.9)), 4),
                           "median_signed_rel_error": round(float(np.median(err)), 4)}
    if by:
        groups = table.assign(_err=np.abs(err)).groupby(list(by))["_err"].median()
        out["median_abs_rel_error_by"] = {" / ".join(k if isinstance(k, tuple) else (k,)): round(float(v), 4)
                                          for k, v in groups.items()}
    return out


def _write_rows(path: Path, table: pd.DataFrame, pred: np.ndarray, measured: np.ndarray) -> None:
    out = table.assign(surrogate=np.round(pred, 1), rel_error=np.round(pred / measured - 1, 5))
    write_table(path, out)


