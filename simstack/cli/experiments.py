"""Named experiments: a sweep written down once, as data, with the question it answers.

A facility team reruns the same sweeps: a seed's figure reproduced (trim time per
optimisation iteration, BSA capacity against cores), a capacity question answered (how
many consoles one pipeline serves). Each is a small YAML file in ``experiments/`` (a
checkout's, else the installed package's copy), read as plain data
(``simstack.io.safeyaml``: no Hydra directive, no interpolation, no code)::

    model: pipeline
    answers: How many consoles can one trim pipeline serve before a trim waits?
    doc: optional longer text
    axes:                          # swept: every combination is one job
      parameters.consoles: [4, 8, 12, 16, 20, 24]
    settings:                      # the same for every job
      sim.replications: 3
    answer:                        # the number that answers it (simstack.tables.answer_spec)
      capacity: {axis: parameters.consoles, request: trim, metric: p95, at_most: 50ms}
    cost: {wall_s: 88, measured: "2026-11-28", how: ...}   # the sweep's last measured wall time

``simstack -m +experiment=NAME`` (Hydra's own spelling for choosing an experiment) becomes
the sweep ``model=M axis=a,b,... setting=v ... experiment=NAME``, checked like any command
line, run by whichever launcher is chosen (``hydra/launcher=joblib`` or ``=ray``) and
gathered into one table and one report (``simstack.cli.sweep``). An override on the command
line wins over the experiment's own for the same key (``sim.replications=1`` for a quick
look). ``simstack experiments`` lists them, one line each, with their jobs and last
measured wall time: a note kept in the file, since the listing runs with no sweep at hand.

An experiment file may be someone else's, so what it can ask of this machine is bounded when
it is read: at most ``MAX_JOBS`` jobs (six axes of ten values were a million jobs that hung
Hydra before the first one; more only with ``--max-jobs N`` on the command line), ``sim.jobs``
no more than this machine's CPUs (more only as ``sim.jobs=N`` on the command line), and a
name (its file name) that Hydra reads as one word, not as a sweep (``a,b.yaml``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from simstack.errors import ConfigError, ModelError
from simstack.io.paths import config_dir
from simstack.io.safeyaml import read_yaml
from simstack.lang.schema import Field, mapping, read_fields, suggest, text
from simstack.tables.answer_spec import Answer, read_answer

if TYPE_CHECKING:
    from simstack.lang.spec import ModelSpec

SIM_KEYS = ("seed", "replications", "horizon", "warmup", "record_steps", "record", "jobs")
PLAIN_KEYS = ("scenario", "whatif", "output.tables", *(f"sim.{k}" for k in SIM_KEYS))
ADDED_PREFIXES = ("parameters.", "flags.")  # keys the default config lacks: given with '+'
_SAFE = re.compile(r"^[A-Za-z0-9_./:+\-]+$")  # a value Hydra's grammar reads as written
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$")  # an experiment's name: its file name, one word to Hydra
MAX_JOBS = 10_000  # jobs an experiment file may ask for; more with --max-jobs N on the command line


def experiments_dir() -> Path:
    """Beside the Hydra configs: the checkout's ``experiments/``, else the installed package's copy."""
    return config_dir().parent / "experiments"


@dataclass(frozen=True)
class Cost:
    """The last measured wall time of the whole sweep, when, and how it was run."""

    wall_s: float
    measured: str
    how: str = ""

    def text(self) -> str:
        return f"{self.wall_s:.0f} s ({self.measured})"


@dataclass(frozen=True)
class Experiment:
    name: str
    file: Path
    model: str
    answers: str
    doc: str = ""
    axes: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)
    settings: Mapping[str, Any] = field(default_factory=dict)
    answer: Answer | None = None
    cost: Cost | None = None

    def jobs(self) -> int:
        count = 1
        for values in self.axes.values():
            count *= len(values)
        return count

    def overrides(self, given: Sequence[str] = ()) -> list[str]:
        """The sweep's overrides, those ``given`` on the command line for the same key left out."""
        mine = {_bare(o) for o in given}
        # a file of experiments/ by its name, any other by its path, so the gathering reads its answer
        known = known_experiments().get(self.name)
        ref = self.name if known is not None and known.resolve() == self.file.resolve() else str(self.file.resolve())
        out = [f"experiment={_value(ref)}"] + ([] if "model" in mine else [f"model={_value(self.model)}"])
        for key, values in self.axes.items():
            if key not in mine:
                out.append(f"{_typed(key)}={','.join(_value(v) for v in values)}")
        for key, value in self.settings.items():
            if key not in mine:
                out.append(f"{_typed(key)}={_value(value)}")
        return out


def _bare(override: str) -> str:
    return override.partition("=")[0].lstrip("+~")


def _typed(key: str) -> str:
    return f"+{key}" if key.startswith(ADDED_PREFIXES) else key


def _value(value: Any) -> str:
    """A value as Hydra's override grammar reads it back: booleans lower case, odd text quoted."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    written = str(value)
    if _SAFE.match(written):
        return written
    return "'" + written.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _key(key: object, where: str) -> str:
    if not isinstance(key, str) or not (key in PLAIN_KEYS or (key.startswith(ADDED_PREFIXES)
                                                             and key.count(".") == 1 and key.split(".")[1])):
        raise ModelError(f"unknown setting {key!r}{suggest(key, PLAIN_KEYS)}; an experiment may set scenario, whatif, "
                         f"parameters.NAME, flags.NAME, output.tables and sim.{{{','.join(SIM_KEYS)}}} (the model "
                         "is its own key, and where it runs is chosen on the command line)", path=where)
    return key


def _scalar(value: object, where: str, key: str) -> Any:
    if isinstance(value, bool | int | float | str) and value != "":
        return value
    if value is None and key in ("whatif", "scenario"):  # the model as it is, beside its what-ifs
        return None
    raise ModelError(f"expected a number, a word or true/false, got {value!r}", path=where)


def _processes(value: object, where: str) -> None:
    """``sim.jobs`` from a file: no more processes than this machine has CPUs (the command
    line may ask for more). The experiment's side of the rule for files; ``simstack.engine.parallel``
    is to hold the general one."""
    cpus = os.cpu_count() or 1
    if isinstance(value, int) and not isinstance(value, bool) and value > cpus:
        raise ModelError(f"{value} processes is more than this machine's {cpus} CPUs; an experiment file may ask "
                         f"for at most {cpus} (more only on the command line: sim.jobs={value})", path=where)


def _bounded(experiment: Experiment, max_jobs: int) -> None:
    jobs = experiment.jobs()
    if jobs > max_jobs:
        sizes = " x ".join(str(len(v)) for v in experiment.axes.values())
        raise ModelError(f"the sweep has {jobs:,} jobs ({sizes} values), above the limit of {max_jobs:,} jobs "
                         f"an experiment may ask for; give --max-jobs {jobs} on the command line to run it",
                         path="axes")


def read_experiment(path: Path, max_jobs: int = MAX_JOBS) -> Experiment:
    """An experiment file, checked: its name, keys, values, size, model, what-ifs, parameters and flags."""
    if not _NAME.match(path.stem):
        raise ModelError(f"an experiment's name is its file name, of letters, digits, '_', '-' and '.', got "
                         f"{path.stem!r} (Hydra would read a ',' as a sweep of names)", file=str(path))
    doc = read_yaml(path)
    try:
        top = read_fields(doc, {"model": Field(text), "answers": Field(text), "doc": Field(text, ""),
                                "axes": Field(mapping), "settings": Field(mapping, {}),
                                "answer": Field(mapping, help="how the sweep answers: capacity, ratio or crossing"),
                                "cost": Field(mapping, None)}, "")
        axes: dict[str, tuple[Any, ...]] = {}
        for key, values in top["axes"].items():
            where = f"axes.{key}"
            _key(key, where)
            if not isinstance(values, list) or not values:
                raise ModelError(f"expected a list of the values to sweep, got {values!r}", path=where)
            axes[key] = tuple(_scalar(v, f"{where}[{i}]", key) for i, v in enumerate(values))
            if len(set(map(str, axes[key]))) != len(axes[key]):
                raise ModelError(f"a value is listed twice in {list(values)!r}", path=where)
        if not any(len(v) > 1 for v in axes.values()):
            raise ModelError("an experiment sweeps at least one axis over two or more values", path="axes")
        settings = {_key(k, f"settings.{k}"): _scalar(v, f"settings.{k}", k) for k, v in top["settings"].items()}
        both = sorted(set(axes) & set(settings))
        if both:
            raise ModelError(f"{both[0]!r} is both an axis and a setting", path=f"settings.{both[0]}")
        for i, value in enumerate(axes.get("sim.jobs", ())):
            _processes(value, f"axes.sim.jobs[{i}]")
        _processes(settings.get("sim.jobs"), "settings.sim.jobs")
        cost = _cost(top["cost"]) if top["cost"] is not None else None
        experiment = Experiment(path.stem, path, top["model"], top["answers"], top["doc"], axes, settings,
                                cost=cost)
        _bounded(experiment, max_jobs)
        spec = _check_model(experiment)
        experiment = replace(experiment, answer=read_answer(top["answer"], axes, spec.requests))
    except ModelError as exc:
        raise (exc if exc.file else exc.at(file=str(path))) from None
    return experiment


def _cost(raw: Mapping[str, Any]) -> Cost:
    """``cost: {wall_s: 312, measured: 2026-11-28, how: ...}``: the sweep's last measured wall time."""
    top = read_fields(raw, {"wall_s": Field(_seconds), "measured": Field(text), "how": Field(text, "")}, "cost")
    return Cost(top["wall_s"], top["measured"], top["how"])


def _seconds(value: object) -> float:
    """A wall time: a finite number > 0 (a whole number of 190 digits overflowed ``float``)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 1e15:
        shown = f"a number of {len(str(value))} characters" if len(str(value)) > 40 else repr(value)
        raise ModelError(f"expected the wall time in seconds, a number > 0 and below 1e15, got {shown}")
    return float(value)


def _check_model(experiment: Experiment) -> ModelSpec:
    """The model exists, and every what-if, scenario, parameter and flag the sweep names is its."""
    from simstack.load.loader import load_model, resolve_model_path
    from simstack.load.whatif import load_whatif

    file = resolve_model_path(experiment.model, None)
    spec = load_model(file)
    every = {**{k: list(v) for k, v in experiment.axes.items()}, **{k: [v] for k, v in experiment.settings.items()}}
    for key, values in every.items():
        where = f"axes.{key}" if key in experiment.axes else f"settings.{key}"
        name = key.partition(".")[2]
        if key.startswith("parameters.") and name not in spec.parameters:
            raise ModelError(f"model {spec.name!r} has no parameter {name!r}{suggest(name, spec.parameters)}",
                             path=where)
        if key.startswith("flags.") and name not in spec.declared_flags:
            raise ModelError(f"model {spec.name!r} has no flag {name!r}{suggest(name, spec.declared_flags)}",
                             path=where)
        for value in values:
            if key == "whatif" and value is not None:
                load_whatif(str(value), file.parent)
            if key == "scenario" and value is not None:
                load_model(file, scenario=str(value))
    return spec


def find_experiment(name: str, max_jobs: int = MAX_JOBS) -> Experiment:
    """``NAME`` (a file of ``experiments/``) or a path to an experiment's ``.yaml``."""
    path = Path(name)
    if path.suffix in (".yaml", ".yml"):
        if not path.is_file():
            raise ModelError(f"experiment file {name!r} not found")
        return read_experiment(path, max_jobs)
    known = known_experiments()
    if name not in known:
        raise ModelError(f"unknown experiment {name!r}{suggest(name, known)}; experiments: "
                         f"{', '.join(known) or '(none)'} (simstack experiments lists them)")
    return read_experiment(known[name], max_jobs)


def known_experiments() -> dict[str, Path]:
    folder = experiments_dir()
    return {p.stem: p for p in sorted(folder.glob("*.yaml"))} if folder.is_dir() else {}


def expand(argv: list[str]) -> list[str]:
    """``+experiment=NAME`` (or ``experiment=NAME``) in ``argv`` replaced by its sweep's
    overrides, ``-m`` added when missing; other command lines are returned as they are."""
    max_jobs, argv = _max_jobs_option(argv)
    chosen = [a for a in argv if _bare(a) == "experiment" and "=" in a]
    if not chosen:
        if max_jobs is not None:
            raise ConfigError("--max-jobs raises the jobs an experiment may ask for: simstack -m +experiment=NAME "
                              "--max-jobs N")
        return argv
    if len(chosen) > 1:
        raise ModelError(f"one experiment at a time, got {', '.join(chosen)}")
    experiment = find_experiment(chosen[0].partition("=")[2], MAX_JOBS if max_jobs is None else max_jobs)
    rest = [a for a in argv if a is not chosen[0]]
    given = [a for a in rest if "=" in a and not a.startswith("-")]
    multirun = [] if any(a in ("-m", "--multirun") for a in rest) else ["--multirun"]
    return [*multirun, *rest, *experiment.overrides(given)]


def _max_jobs_option(argv: list[str]) -> tuple[int | None, list[str]]:
    """``--max-jobs N`` / ``--max-jobs=N`` taken out of ``argv`` (the command line's own word:
    a file cannot raise its own limit)."""
    rest, value, i = [], None, 0
    while i < len(argv):
        if argv[i] == "--max-jobs":
            value, i = (argv[i + 1] if i + 1 < len(argv) else ""), i + 2
            continue
        if argv[i].startswith("--max-jobs="):
            value = argv[i].partition("=")[2]
        else:
            rest.append(argv[i])
        i += 1
    if value is None:
        return None, argv
    if not value.isascii() or not value.isdigit() or int(value) < 1:
        raise ConfigError(f"--max-jobs must be a whole number >= 1, got {value!r}")
    return int(value), rest


def listing() -> list[str]:
    """One line per experiment: name, model, jobs, last measured wall time, what it answers."""
    rows = []
    for name, path in known_experiments().items():
        try:
            e = read_experiment(path)
            cost = f", last ran in {e.cost.text()}" if e.cost else ", not yet timed"
            rows.append((name, f"{e.model}, {e.jobs()} jobs{cost}", e.answers))
        except ModelError as exc:
            rows.append((name, "INVALID", str(exc)))
    width = max((len(n) for n, _, _ in rows), default=0)
    middle = max((len(m) for _, m, _ in rows), default=0)
    return [f"{n:<{width}}  {m:<{middle}}  {a}" for n, m, a in rows]


def main(argv: list[str]) -> int:
    """``simstack experiments``: the named experiments, one line each."""
    import sys

    if argv:
        print("usage: simstack experiments   (then: simstack -m +experiment=NAME [hydra/launcher=joblib|ray] "
              "[override ...])", file=sys.stderr)
        return 2
    lines = listing()
    print("\n".join(lines) if lines else f"no experiments in {experiments_dir()}")
    print("run one: simstack -m +experiment=NAME  (hydra/launcher=joblib or =ray for parallel jobs)")
    return 0
