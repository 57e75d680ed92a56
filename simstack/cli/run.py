"""``simstack model=NAME ...``: one run of a model, its tables printed and its files written.

The model as the command line chose it (file, what-if, the calibrated values, parameter and
flag overrides, the scenario) is simulated with the run settings Hydra composed; the tables
are printed and the run's files (small CSV tables, per-request records as Parquet, a
``run.json`` with the settings, seed, commit and wall time) go to Hydra's run directory.

With a what-if (``whatif=W``, or a list ``whatif=[W1,W2]``) the run answers "what does it
change?": the model as written and each what-if run on common random numbers and compared
pair by pair (``simstack.studies.compare``), printed before and after with the difference and
the ratio, and written as ``comparison_*.csv``. A sweep's job runs its what-if alone.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

from simstack.cli.options import asked_jobs, given_settings, plain, switch
from simstack.engine.precise import simulate_until_precise
from simstack.engine.simulate import RunResult, simulate
from simstack.errors import ConfigError
from simstack.io.outputs import FileGroup, csv_text
from simstack.lang.spec import ClosedWorkload, ModelSpec, PeriodicWorkload, ProtocolWorkload, Workload
from simstack.load import precedence
from simstack.load.loader import resolve_model_path
from simstack.load.precedence import calibrated_parameters, load_chosen
from simstack.load.whatif import WhatIf, load_whatif
from simstack.studies.compare import COLUMNS, Comparison, compare
from simstack.studies.provenance import git_commit, stale_calibration
from simstack.tables.console import format_table, number, run_header, summary_text
from simstack.tables.stations import stations
from simstack.tables.stopping import Precision, precision_from, stop_record
from simstack.tables.windows import over_time, windows_of

RUN_KEYS = ("seed", "replications", "horizon", "warmup")  # what the model's settings and the command line both set


def run_settings(cfg: DictConfig, model_settings: Mapping[str, Any]) -> dict[str, Any]:
    """The plain keyword arguments of ``simulate`` from a composed config. Seed, replications,
    horizon and warm-up: the built-in defaults (``sim/default.yaml``: 5 replications, seed 1,
    no horizon) under the model file's own ``settings`` (as its scenario left them) under what
    the command line gave (``given_settings``: ``sim.seed=1`` wins even where it equals the
    default), the order every study task keeps. Processes: ``sim.jobs`` or ``jobs``."""
    sim = plain(cfg.sim, "sim")
    assert isinstance(sim, dict)
    given = given_settings(cfg)
    return {
        **precedence.run_settings({k: sim.get(k) for k in RUN_KEYS}, model_settings,
                                  {k: given[k] for k in RUN_KEYS if k in given}),
        "record_steps": switch(sim.get("record_steps"), "sim.record_steps", False),
        "progress": switch(sim.get("progress"), "sim.progress", False),
        "record": sim.get("record", "full"), "jobs": asked_jobs(cfg) or 1,
    }


def settings_from(cfg: DictConfig, *model_settings: Mapping[str, Any]) -> dict[str, str]:
    """Where each of seed, replications, horizon and warm-up came from (``command line``,
    ``model`` when a model's ``settings`` state it, else ``default``), for ``run.json``."""
    given = given_settings(cfg)
    return {k: "command line" if k in given else
            "model" if any(s.get(k) is not None for s in model_settings) else "default" for k in RUN_KEYS}


def say_model_settings(kwargs: Mapping[str, Any], sources: Mapping[str, str]) -> None:
    """One line when the model file's own seed or replications stand in for the defaults, so a
    run of 3 replications where 5 are documented is no surprise."""
    own = [k for k in ("seed", "replications") if sources.get(k) == "model"]
    if own:
        print(f"from the model's settings: {', '.join(f'{k} {kwargs[k]}' for k in own)} (the command line's "
              f"{', '.join(f'sim.{k}=N' for k in own)} go{'es' if len(own) == 1 else ''} over it)")


def precision_setting(cfg: DictConfig) -> tuple[Precision | None, dict[str, Any]]:
    """``sim.precision``: the request (None when neither relative nor absolute nor any other of
    its keys is set) and the keys as given, for ``run.json``."""
    raw = plain(cfg.sim.get("precision"), "sim.precision")
    if raw is None:
        return None, {}
    if not isinstance(raw, Mapping):
        raise ConfigError(f"sim.precision must be a mapping (sim.precision.relative=0.02, ...), got {raw!r}")
    given = {k: v for k, v in raw.items() if v is not None and v != []}
    return (precision_from(given, "sim.precision") if given else None), given


def chosen_whatifs(cfg: DictConfig, model_file: Path) -> list[WhatIf]:
    """The what-ifs named by ``whatif=``: one (``MODEL/NAME``, a name of the chosen model, or a
    path) or a list of them (``whatif=[NAME,NAME]``); none when it is null."""
    ref = plain(cfg.get("whatif"), "whatif")
    refs = ref if isinstance(ref, list) else [] if ref is None or ref == "" else [ref]
    models_dir = plain(cfg.get("models_dir"), "models_dir")
    whatifs = [load_whatif(str(one), model_file.parent, models_dir) for one in refs]
    names = [w.name for w in whatifs]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ConfigError(f"whatif: {', '.join(twice)} named twice in {ref!r}; name each what-if once")
    return whatifs


def chosen_whatif(cfg: DictConfig, model_file: Path) -> WhatIf | None:
    """The one what-if named by ``whatif=`` (None for none); a list is refused here, where one run is meant."""
    whatifs = chosen_whatifs(cfg, model_file)
    if len(whatifs) > 1:
        raise ConfigError(f"whatif names {len(whatifs)} what-ifs ({', '.join(w.name for w in whatifs)}); "
                          "this task takes one: whatif=NAME (a run compares several: simstack model=M "
                          "whatif=[A,B])")
    return whatifs[0] if whatifs else None


def chosen_spec(cfg: DictConfig) -> tuple[ModelSpec, Path, WhatIf | None, str | None]:
    """The model as the command line chose it: file, what-if, calibrated values, overrides."""
    models_dir = plain(cfg.get("models_dir"), "models_dir")
    model_file = resolve_model_path(str(plain(cfg.model, "model")), models_dir)
    whatif = chosen_whatif(cfg, model_file)
    scenario = plain(cfg.scenario, "scenario")
    spec = load_chosen(model_file, calibrated_parameters(model_file.parent), whatif, scenario=scenario,
                       parameters=plain(cfg.parameters, "parameters"), flags=plain(cfg.flags, "flags"))
    return spec, model_file, whatif, scenario or (whatif.scenario if whatif else None)


def write_run(result: RunResult, settings: Mapping[str, Any], out_dir: Path, tables: bool) -> None:
    """All files of one run, written only after the run succeeded: small CSV tables
    (``summary.csv`` is what a sweep gathers), per-request records as Parquet (a third of
    the CSV size, typed), per-step records only when they were recorded."""
    out_dir.mkdir(parents=True, exist_ok=True)
    meta = {"model": result.model.name, "model_file": str(result.model.file), "seed": result.seed,
            "replications": result.replications, "horizon": result.horizon, "warmup": result.warmup,
            "stopped": None if result.stopped is None else result.stopped.stopped,
            "precision": None if result.stopped is None or result.precision is None else
            stop_record(result.precision, result.stopped),
            "wall_time_s": result.wall_time, "git_commit": git_commit(Path(__file__).parent),
            "parameters": {k: p.value for k, p in result.model.parameters.items()},
            "flags": sorted(result.model.flags),
            "config": dict(settings)}
    with FileGroup() as group:  # every file whole, the set complete, even in a folder two runs share
        group.add(out_dir / "summary.csv", csv_text(result.summary()))
        group.add(out_dir / "latency_cdf.csv", csv_text(result.latency_cdf()))
        stages = result.stage_summary()
        if not stages.empty:  # steps were recorded: a sweep gathers the phases (simstack.cli.sweep)
            group.add(out_dir / "stages.csv", csv_text(stages))
        group.add(out_dir / "resources.csv", csv_text(result.resources))
        group.add(out_dir / "stations.csv", csv_text(stations(result)))  # per resource and class
        group.add(out_dir / "deadlines.csv", csv_text(result.deadlines))
        windows = windows_of(result) if not result.requests.empty else None
        if windows:  # the load or a capacity follows time: results per cycle or window (tables.windows)
            group.add(out_dir / "over_time.csv", csv_text(over_time(result.requests, windows, result.replications)))
        if not result.table("memory_peaks").empty:  # the model takes memory (simstack.resources.memory)
            group.add(out_dir / "memory_peaks.csv", csv_text(result.table("memory_peaks")))
        if tables:
            frames = {"requests": result.requests, "steps": result.steps, "memory": result.table("memory"),
                      "store_load": result.table("store_load")}
            for name, frame in frames.items():
                if name == "requests" or not frame.empty:
                    frame.to_parquet(group.stage(out_dir / f"{name}.parquet"), index=False, compression="zstd")
        group.add(out_dir / "run.json", json.dumps(meta, indent=2, default=str))


def print_summary(result: RunResult) -> None:
    text = summary_text(result)
    ends = run_end(result)
    if ends:  # below the run's header, which names the horizon when there is one
        header = run_header(result)
        text = f"{header}\n{ends}{text[len(header):]}" if text.startswith(header) else f"{ends}\n{text}"
    print(text)
    print_blocked(result)


def run_end(result: RunResult) -> str:
    """What ends a run with no horizon: its workloads' own requests (None with a horizon)."""
    if result.horizon is not None:
        return ""
    planned = [f"{name}: {requests_planned(wl)}" for name, wl in result.model.workloads.items()]
    return f"no horizon: the run ends when its workloads' requests end ({'; '.join(planned) or 'none'})"


def requests_planned(wl: Workload) -> str:
    """How many requests a finite workload starts, in words."""
    if isinstance(wl, ProtocolWorkload):
        return f"{wl.warmup + wl.repeat} {wl.request} requests ({wl.warmup} warm-up, {wl.repeat} recorded)"
    if isinstance(wl, ClosedWorkload):
        return f"{wl.clients} clients x {number(wl.count)} {wl.request} requests"
    if isinstance(wl, PeriodicWorkload) and wl.copies > 1:
        return f"{number(wl.count)} ticks x {wl.copies} {wl.request} requests"
    count = getattr(wl, "count", math.inf)
    return f"{number(count)} {wl.request} requests"


def print_blocked(result: RunResult, shown: int = 5) -> None:
    """Warn about requests stuck at the end of the run (what they wait for, since when)."""
    blocked = result.blocked
    if blocked.empty:
        return
    print(f"warning: {len(blocked)} request(s) still blocked at the end with no progress (waiting for at least "
          "half the run, or for ever); first ones:", file=sys.stderr)
    for row in blocked.head(shown).itertuples(index=False):
        print(f"  replication {row.rep}: {row.request} #{row.id} waits for {row.waits_for} at step "
              f"{row.step!r} since t = {row.since:.6g} s", file=sys.stderr)


def say_calibration(model_file: Path) -> None:
    fitted = calibrated_parameters(model_file.parent)
    if fitted:  # said, so that the same command on a calibrated copy is not a surprise
        print(f"calibrated: {', '.join(sorted(fitted))} from {model_file.parent.name}/calibrated.yaml")
    stale = stale_calibration(model_file.parent)
    if stale:
        print(f"warning: {stale}", file=sys.stderr)


def say_raised(spec: ModelSpec) -> None:
    """The limits the model raises for itself, one warning line each (issue 30.14)."""
    for line in spec.warnings:
        print(f"warning: {line}", file=sys.stderr)


def run(cfg: DictConfig) -> int:
    """The ``run`` task: simulate, print the tables, write the run's files. With a what-if (or
    a list of them) outside a sweep, the baseline too, and the comparison (``run_comparison``)."""
    models_dir = plain(cfg.get("models_dir"), "models_dir")
    model_file = resolve_model_path(str(plain(cfg.model, "model")), models_dir)
    whatifs = chosen_whatifs(cfg, model_file)
    if whatifs and HydraConfig.get().mode == RunMode.RUN:  # a sweep's job runs its what-if alone
        return run_comparison(cfg, model_file, whatifs)
    spec, model_file, whatif, scenario = chosen_spec(cfg)
    say_calibration(model_file)
    say_raised(spec)
    if whatif:
        print(f"what-if {whatif.name} ({whatif.file})")
    kwargs = run_settings(cfg, spec.settings)
    sources = settings_from(cfg, spec.settings)
    say_model_settings(kwargs, sources)
    precision, asked = precision_setting(cfg)
    tables = switch(cfg.output.get("tables"), "output.tables", True)  # refused before the run, not after
    result = simulate(spec, **kwargs) if precision is None else simulate_until_precise(spec, precision, **kwargs)
    settings = _settings(cfg, model_file, scenario, whatif, kwargs, asked, sources)
    out_dir = Path(HydraConfig.get().runtime.output_dir)
    write_run(result, settings, out_dir, tables)  # the results first: printing may meet a closed pipe
    print_summary(result)
    if (out_dir / "over_time.csv").is_file():
        print("the load or a capacity follows time: results per cycle or window, with 95 % intervals across "
              f"replications, in {out_dir / 'over_time.csv'}")
    print(f"outputs written to {out_dir}")
    return 0


def _settings(cfg: DictConfig, model_file: Path, scenario: str | None, whatif: WhatIf | None,
              kwargs: Mapping[str, Any], asked: Mapping[str, Any], sources: Mapping[str, str]) -> dict[str, Any]:
    """The settings of one run as ``run.json`` records them, with where the run settings came
    from (``sim_from``: command line, model or default)."""
    return {"model": str(plain(cfg.model, "model")), "model_file": str(model_file),
            "models_dir": plain(cfg.get("models_dir"), "models_dir"), "scenario": scenario,
            "whatif": None if whatif is None else _whatif_ref(cfg, whatif),
            "whatif_file": None if whatif is None else str(whatif.file),
            "parameters": plain(cfg.parameters, "parameters"), "flags": plain(cfg.flags, "flags"),
            "sim": {**kwargs, **({"precision": dict(asked)} if asked else {})}, "sim_from": dict(sources),
            "output": plain(cfg.output, "output")}


def _whatif_ref(cfg: DictConfig, whatif: WhatIf) -> Any:
    """The what-if as the command line named it (one of a list: that one)."""
    ref = plain(cfg.get("whatif"), "whatif")
    if not isinstance(ref, list):
        return ref
    return next((r for r in ref if Path(str(r)).stem == whatif.name), whatif.name)


def run_comparison(cfg: DictConfig, model_file: Path, whatifs: list[WhatIf]) -> int:
    """``simstack model=M whatif=W`` (or ``whatif=[W1,W2]``): the baseline and each what-if on
    common random numbers, compared pair by pair (``simstack.studies.compare``)."""
    say_calibration(model_file)
    scenario = plain(cfg.scenario, "scenario")
    fitted = calibrated_parameters(model_file.parent)
    overrides = {"parameters": plain(cfg.parameters, "parameters"), "flags": plain(cfg.flags, "flags")}
    before = load_chosen(model_file, fitted, None, scenario=scenario, **overrides)
    say_raised(before)
    after = {w.name: load_chosen(model_file, fitted, w, scenario=scenario, **overrides) for w in whatifs}
    for w in whatifs:
        print(f"what-if {w.name} ({w.file})")
    kwargs = alike_settings(cfg, before, after, whatifs)
    sources = settings_from(cfg, before.settings, *(spec.settings for spec in after.values()))
    say_model_settings(kwargs, sources)
    precision, asked = precision_setting(cfg)
    tables = switch(cfg.output.get("tables"), "output.tables", True)
    comparison = compare(before, after, kwargs, precision)
    out_dir = Path(HydraConfig.get().runtime.output_dir)
    write_comparison(cfg, model_file, scenario, whatifs, comparison, kwargs, asked, sources, out_dir, tables)
    if len(whatifs) == 1:  # the what-if's own tables, as a run of it alone prints them
        print(f"the what-if {whatifs[0].name} alone:")
        print_summary(comparison.after[whatifs[0].name])
        print()
    print(comparison_text(comparison, run_header(comparison.before)))
    print(f"outputs written to {out_dir}")
    return 0


def alike_settings(cfg: DictConfig, before: ModelSpec, after: Mapping[str, ModelSpec],
                   whatifs: list[WhatIf]) -> dict[str, Any]:
    """The run settings the baseline and every what-if share. A what-if that sets the run itself
    (an 8-hour horizon for its open arrivals) sets it for the baseline too, and says so; what-ifs
    that set it differently cannot be compared alike and are refused."""
    base = run_settings(cfg, before.settings)
    owns = {w.name: run_settings(cfg, after[w.name].settings) for w in whatifs}
    changing = [w for w in whatifs if owns[w.name] != base]
    if not changing:
        return base
    first = owns[changing[0].name]
    for w in whatifs:
        if owns[w.name] != first:
            changed = ", ".join(f"{k} {first[k]} -> {owns[w.name][k]}" for k in first if owns[w.name][k] != first[k])
            raise ConfigError(f"what-if {w.name} ({w.file}) runs differently from what-if {changing[0].name} "
                              f"({changed}); a comparison runs every configuration alike: set it on the command "
                              "line (sim.horizon=...)")
    changed = ", ".join(f"{k} {base[k]} -> {first[k]}" for k in base if first[k] != base[k])
    print(f"what-if {changing[0].name} sets the run itself ({changed}): the baseline runs with it too, alike "
          "(the command line's sim.* settings override both)")
    return first


def write_comparison(cfg: DictConfig, model_file: Path, scenario: str | None, whatifs: list[WhatIf],
                     comparison: Comparison, kwargs: Mapping[str, Any], asked: Mapping[str, Any],
                     sources: Mapping[str, str], out_dir: Path, tables: bool) -> None:
    """The comparison's tables (``comparison_*.csv``), and each configuration's run: the
    baseline's in ``before/``; one what-if's in the folder itself (as a run of it alone writes
    it), several what-ifs' each in ``after/NAME/`` (a what-if may be called ``baseline``)."""
    where = {w.name: Path() if len(whatifs) == 1 else Path("after", w.name) for w in whatifs}
    record = {"before": "before/", "after": {name: f"{path}/" for name, path in where.items()},
              "replications": comparison.replications, "level": comparison.level,
              "files": [f"comparison_{n}.csv" for n in ("requests", "resources", "replications")],
              "precision": None if comparison.stopped is None or comparison.precision is None else
              stop_record(comparison.precision, comparison.stopped)}
    out_dir.mkdir(parents=True, exist_ok=True)
    with FileGroup() as group:
        group.add(out_dir / "comparison_requests.csv", csv_text(comparison.requests))
        group.add(out_dir / "comparison_resources.csv", csv_text(comparison.resources))
        group.add(out_dir / "comparison_replications.csv", csv_text(comparison.per_replication))
        group.add(out_dir / "comparison.json", json.dumps(record, indent=2, default=str))
    write_run(comparison.before, _settings(cfg, model_file, scenario, None, kwargs, asked, sources), out_dir / "before",
              tables)
    for w in whatifs:
        settings = _settings(cfg, model_file, scenario or w.scenario, w, kwargs, asked, sources)
        write_run(comparison.after[w.name], settings, out_dir / where[w.name], tables)


def comparison_text(comparison: Comparison, header: str) -> str:
    """Before, after, difference and ratio per what-if, request class and resource, as printed."""
    level = f"{comparison.level * 100:g} %"
    n = comparison.replications
    parts = [f"before (baseline) and after (what-if), {n} paired replication{'s' if n != 1 else ''} on common "
             f"random numbers: difference = after - before and ratio = after / before, each with its {level} "
             "interval across the pairs", f"baseline: {header}"]
    parts += comparison.notes
    if comparison.stopped is not None and comparison.precision is not None:
        stop = stop_record(comparison.precision, comparison.stopped)
        met = sum(s["met"] for s in stop["statistics"].values())
        parts.append(f"precision: stopped by {stop['stopped']} after {stop['replications']} replications, "
                     f"{met} of {len(stop['statistics'])} paired differences within the target")
    numbers = tuple(c for c in COLUMNS if c != "statistic" and not c.startswith(("before_", "after_")))
    for whatif, requests in comparison.requests.groupby("whatif", sort=False):
        shown = requests[["request", "statistic", *numbers]].drop(columns="replications")
        parts += ["", f"what-if {whatif}, per request class:", format_table(shown, mixed=numbers)]
        resources = comparison.resources[comparison.resources["whatif"] == whatif]
        busy = (resources["before"].abs().fillna(1) + resources["after"].abs().fillna(1)) > 0
        idle = sorted(set(resources["resource"]) - set(resources.loc[busy, "resource"]))
        shown = resources.loc[busy, ["resource", "kind", "statistic", *numbers]].drop(columns="replications")
        parts += [f"what-if {whatif}, per resource:", format_table(shown, mixed=numbers)]
        if idle:
            parts.append(f"idle in both, not shown: {', '.join(idle)}")
        if (~busy & ~resources["resource"].isin(idle)).any():
            parts.append("rows that are 0 before and after are not shown (comparison_resources.csv has them)")
    return "\n".join(parts)
