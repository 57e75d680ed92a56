"""Named experiments (``experiments/*.yaml``): every file is plain data that names a real model,
its what-ifs, scenarios, parameters and flags, and expands into overrides the command line
accepts; a hostile or mistyped file is refused with its file and key; ``simstack experiments``
lists one line each; and one small experiment runs end to end into one table and one report."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from simstack.cli.experiments import expand, experiments_dir, find_experiment, known_experiments, read_experiment
from simstack.cli.main import CONFIG_DIR
from simstack.cli.overrides import check_overrides
from simstack.errors import ConfigError, ModelError
from simstack.tables.answer_spec import Crossing, Ratio

pytestmark = pytest.mark.slow  # runs named experiments through the simstack command

ROOT = Path(__file__).resolve().parents[2]
SIMSTACK = Path(sys.executable).parent / "simstack"
FACILITIES = {"gsi_fair", "slac_bsa", "tango", "cms_conditions", "lhcb_hlt", "pipeline"}


def test_the_experiments_folder_is_the_checkouts_and_covers_every_facility() -> None:
    assert experiments_dir() == ROOT / "experiments"
    models = {read_experiment(path).model for path in known_experiments().values()}
    assert models == FACILITIES


@pytest.mark.parametrize("name", sorted(known_experiments()))
def test_every_experiment_is_valid_data_that_the_command_line_accepts(name: str) -> None:
    experiment = find_experiment(name)
    assert experiment.answers and experiment.jobs() >= 2
    overrides = experiment.overrides()
    assert overrides[:2] == [f"experiment={name}", f"model={experiment.model}"]
    chosen = check_overrides(["--multirun", *overrides], Path(CONFIG_DIR))  # raises on a key Hydra would refuse
    assert chosen["model"] == [experiment.model]


def test_expanding_adds_the_sweep_and_lets_the_command_line_win() -> None:
    argv = expand(["+experiment=pipeline_capacity", "sim.replications=1", "hydra/launcher=joblib"])
    assert argv[0] == "--multirun" and "sim.replications=1" in argv and "sim.replications=2" not in argv
    assert "+parameters.consoles=8,16,24,32,40,48,56,64" in argv and "+flags.cache=false,true" in argv
    assert "experiment=pipeline_capacity" in argv and "hydra/launcher=joblib" in argv
    assert expand(["-m", "model=pipeline", "+parameters.consoles=2,4"]) == ["-m", "model=pipeline",
                                                                          "+parameters.consoles=2,4"]
    assert expand(["-m", "experiment=cms_phases_threads"]).count("-m") == 1  # no second -m


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "mine.yaml"
    path.write_text(text)
    return path


ANSWER = "answer:\n  capacity: {axis: parameters.consoles, request: trim, metric: p95, at_most: 50ms}\n"
GOOD = "model: pipeline\nanswers: a question\n" + ANSWER + "axes:\n  parameters.consoles: [2, 4]\n"
RATIO = "answer:\n  ratio: {axis: flags.cache, numerator: false, denominator: true, request: trim}\n"
BOTH = GOOD.replace(ANSWER, "") + "  flags.cache: [false, true]\n"


@pytest.mark.parametrize(("text", "message"), [
    (GOOD + "hydra:\n  run: {dir: /tmp}\n", "key 'hydra' at line 7 is not allowed"),
    (GOOD.replace("a question", "${oc.env:HOME}"), "interpolation"),
    (GOOD + "settings:\n  task: predict\n", "settings.task: unknown setting 'task'"),
    (GOOD + "settings:\n  hydra.launcher.n_jobs: 2\n", "settings.hydra.launcher.n_jobs: unknown setting"),
    (GOOD.replace("consoles", "consols"), "axes.parameters.consols: model 'pipeline' has no parameter 'consols' "
                                          "(did you mean 'consoles'?)"),
    (GOOD.replace("[2, 4]", "[2]"), "axes: an experiment sweeps at least one axis over two or more values"),
    (GOOD.replace("[2, 4]", "[2, 2]"), "axes.parameters.consoles: a value is listed twice"),
    (GOOD + "  flags.cache: [true, {x: 1}]\n", "axes.flags.cache[1]: expected a number, a word or true/false"),
    (GOOD + "  whatif: [pipeline/nope]\n", "unknown what-if"),
    (GOOD.replace("model: pipeline", "model: pipelin"), "unknown model 'pipelin'"),
    ("model: pipeline\naxes: {parameters.consoles: [2, 4]}\n", "missing required key 'answers'"),
    # the answer: what the sweep's number is, checked against the axes and the model
    (GOOD.replace(ANSWER, ""), "missing required key 'answer' (how the sweep answers: capacity, ratio or crossing)"),
    (GOOD.replace("capacity:", "capasity:"), "answer: expected exactly one of capacity, ratio, crossing, got capasity "
                                             "(did you mean 'capacity'?)"),
    (GOOD.replace("axis: parameters.consoles", "axis: parameters.workers"),
     "answer.capacity.axis: expected one of the swept axes (parameters.consoles), got 'parameters.workers'"),
    (GOOD.replace("request: trim", "request: trimm"), "answer.capacity.request: expected a request class of the "
                                                      "model (trim, write_audit), got 'trimm' (did you mean 'trim'?)"),
    (GOOD.replace("metric: p95", "metric: p97"), "answer.capacity.metric: expected one of mean, median, p90, p95"),
    (GOOD.replace("50ms", "50"), "answer.capacity.at_most: expected a time with its unit, such as 50ms, got 50"),
    (GOOD.replace("p95, at_most: 50ms", "failed, at_most: 1"), "answer.capacity.at_most: expected a percentage"),
    (BOTH + RATIO.replace("numerator: false", "numerator: maybe"),
     "answer.ratio.numerator: expected one of the axis's levels (false, true), got 'maybe'"),
    (BOTH + "answer:\n  crossing: {axis: parameters.consoles, request: trim, lines: {flags.cache: [false]}}\n",
     "answer.crossing.lines: expected one other axis with two of its levels"),
    (GOOD + "cost: {wall_s: -3, measured: today}\n", "cost.wall_s: expected the wall time in seconds, a number > 0"),
])
def test_a_bad_experiment_file_is_refused_naming_its_file_and_key(tmp_path: Path, text: str, message: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(ModelError) as refused:
        read_experiment(path)
    assert message in str(refused.value)
    assert str(path) in str(refused.value)


def test_a_bad_experiment_on_the_command_line_is_one_line_and_exit_2(tmp_path: Path) -> None:
    path = _write(tmp_path, GOOD + "settings:\n  task: predict\n")
    done = subprocess.run([str(SIMSTACK), "-m", f"+experiment={path}"], capture_output=True, text=True,
                          cwd=tmp_path, timeout=120)
    assert done.returncode == 2
    assert done.stderr.startswith("simstack: error: ") and done.stderr.count("\n") == 1
    assert not (tmp_path / "multirun").exists()
    unknown = subprocess.run([str(SIMSTACK), "-m", "+experiment=pipeline_capasity"], capture_output=True,
                             text=True, cwd=tmp_path, timeout=120)
    assert unknown.returncode == 2 and "did you mean 'pipeline_capacity'?" in unknown.stderr


def test_simstack_experiments_lists_one_line_each_with_its_jobs_and_last_wall_time(tmp_path: Path) -> None:
    done = subprocess.run([str(SIMSTACK), "experiments"], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    for name, path in known_experiments().items():
        mine = [line for line in lines if line.startswith(f"{name} ")]
        experiment = read_experiment(path)
        assert len(mine) == 1 and experiment.answers in mine[0] and "INVALID" not in mine[0]
        assert experiment.cost is not None and experiment.answer is not None, name  # every shipped one is timed
        assert f", {experiment.jobs()} jobs, last ran in {experiment.cost.wall_s:.0f} s ({experiment.cost.measured})" \
            in mine[0]


def test_a_ratio_and_a_crossing_are_read_from_the_file(tmp_path: Path) -> None:
    ratio = read_experiment(_write(tmp_path, BOTH + RATIO)).answer
    assert ratio == Ratio("flags.cache", "false", "true", "trim", "mean")
    crossing = read_experiment(_write(tmp_path, BOTH + "answer:\n  crossing: {axis: parameters.consoles, "
                                                       "request: write_audit, metric: p99, "
                                                       "lines: {flags.cache: [true, false]}}\n")).answer
    assert crossing == Crossing("parameters.consoles", ("flags.cache", "true", "false"), "write_audit", "p99")


@pytest.mark.long  # make test-long: CI's 20 minutes
def test_an_experiment_runs_end_to_end_into_one_table_and_one_report(tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    done = subprocess.run([str(SIMSTACK), "-m", "+experiment=cms_phases_threads", f"hydra.sweep.dir={sweep}"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "7 of 7 jobs ok" in done.stdout
    table = pd.read_csv(sweep / "sweep_summary.csv")
    assert sorted(table["parameters.threads"].unique()) == [1, 2, 4, 8, 16, 32, 100]
    assert "answer: load_global_tag mean at parameters.threads=1 over parameters.threads=8: " in done.stdout
    phases = {"load_global_tag / load_iovs", "load_global_tag / fetch_payloads", "load_global_tag / deserialise"}
    assert phases | {"load_global_tag"} == set(table["request"])
    for threads, job in table.groupby("parameters.threads"):  # the phases add up to the total
        by = job.set_index("request")["mean_ms"]
        assert by[sorted(phases)].sum() == pytest.approx(by["load_global_tag"], rel=1e-6), threads
    serial = table[table["request"] == "load_global_tag / load_iovs"]["mean_ms"]
    assert serial.max() == pytest.approx(serial.min(), rel=1e-9)  # one thread whatever the pool: Amdahl
    totals = table[table["request"] == "load_global_tag"]  # the last load's end, from requests.parquet
    assert (totals["end_max_s"] * 1e3 >= totals["mean_ms"] * totals["count"] * 0.999).all()  # ten loads in a row
    page = (sweep / "sweep_report.html").read_text()
    assert "experiment cms_phases_threads: CMS seed 003" in page


def _axes(count: int, values: int) -> str:
    """``count`` axes of ``values`` values each, on keys the pipeline model has."""
    keys = ["parameters.consoles", "sim.seed", "sim.replications", "sim.horizon", "sim.warmup", "flags.cache"]
    return "".join(f"  {key}: [{', '.join(str(10 + v) for v in range(values))}]\n" for key in keys[:count])


def test_an_experiment_of_a_million_jobs_is_refused_when_read(tmp_path: Path) -> None:
    path = _write(tmp_path, "model: pipeline\nanswers: a question\n" + ANSWER + "axes:\n" + _axes(6, 10))
    with pytest.raises(ModelError) as refused:
        read_experiment(path)
    assert (f"{path}: axes: the sweep has 1,000,000 jobs (10 x 10 x 10 x 10 x 10 x 10 values), above the limit of "
            "10,000 jobs an experiment may ask for; give --max-jobs 1000000 on the command line") in str(refused.value)
    smaller = _write(tmp_path, "model: pipeline\nanswers: a question\n" + ANSWER + "axes:\n" + _axes(4, 10))
    assert read_experiment(smaller, max_jobs=10_000).jobs() == 10_000
    with pytest.raises(ModelError, match="above the limit of 9,999 jobs"):
        read_experiment(smaller, max_jobs=9_999)


def test_only_the_command_line_raises_the_limit_of_jobs(tmp_path: Path) -> None:
    path = _write(tmp_path, "model: pipeline\nanswers: a question\n" + ANSWER + "axes:\n" + _axes(5, 7))  # 16,807 jobs
    with pytest.raises(ModelError, match="16,807 jobs"):
        expand(["-m", f"+experiment={path}"])
    argv = expand(["-m", f"+experiment={path}", "--max-jobs", "20000"])
    assert "--max-jobs" not in argv and "20000" not in argv and "+parameters.consoles=10,11,12,13,14,15,16" in argv
    assert expand(["-m", f"+experiment={path}", "--max-jobs=16807"]) == argv
    for bad in (["--max-jobs=0"], ["--max-jobs", "1e6"], ["--max-jobs"]):
        with pytest.raises(ConfigError, match="--max-jobs must be a whole number >= 1"):
            expand(["-m", f"+experiment={path}", *bad])
    with pytest.raises(ConfigError, match="--max-jobs raises the jobs an experiment may ask for"):
        expand(["-m", "model=pipeline", "--max-jobs=5"])


@pytest.mark.parametrize("where", ["settings:\n  sim.jobs: {n}\n", "  sim.jobs: [1, {n}]\n"])
def test_an_experiment_asks_for_no_more_processes_than_the_machine_has(tmp_path: Path, where: str) -> None:
    cpus = os.cpu_count() or 1
    with pytest.raises(ModelError) as refused:
        read_experiment(_write(tmp_path, GOOD + where.format(n=cpus + 30)))
    assert (f"sim.jobs{'[1]' if where.startswith(' ') else ''}: {cpus + 30} processes is more than this machine's "
            f"{cpus} CPUs; an experiment file may ask for at most {cpus} (more only on the command line: "
            f"sim.jobs={cpus + 30})") in str(refused.value)
    assert read_experiment(_write(tmp_path, GOOD + where.format(n=cpus))).jobs() >= 2
    one = _write(tmp_path, GOOD + "settings:\n  sim.jobs: 1\n")
    argv = expand(["-m", f"+experiment={one}", f"sim.jobs={cpus + 30}"])
    assert f"sim.jobs={cpus + 30}" in argv and "sim.jobs=1" not in argv  # the command line may ask for more


@pytest.mark.parametrize("name", ["a,b", "a b", "x=y", "a'b"])
def test_an_experiment_name_hydra_would_split_is_refused(tmp_path: Path, name: str) -> None:
    path = tmp_path / f"{name}.yaml"
    path.write_text(GOOD)
    with pytest.raises(ModelError) as refused:
        read_experiment(path)
    assert str(refused.value).startswith(f"{path}: an experiment's name is its file name") and repr(name) in str(
        refused.value)


def test_the_model_an_experiment_names_is_one_value_to_hydra(tmp_path: Path) -> None:
    folder = tmp_path / "two,models"
    shutil.copytree(ROOT / "models" / "pipeline", folder)
    experiment = read_experiment(_write(tmp_path, GOOD.replace("model: pipeline", f"model: {folder}")))
    assert f"model='{folder}'" in experiment.overrides()


def test_the_expanded_command_line_reaches_the_terminal_escaped(tmp_path: Path) -> None:
    """A value a received experiment sweeps reaches standard error three times: in the expanded
    command line, in its job's line and in the outcome line; each escaped."""
    path = _write(tmp_path, GOOD.replace("[2, 4]", '[2, "\\e]0;pwned\\a"]'))
    done = subprocess.run([str(SIMSTACK), "-m", f"+experiment={path}", "sim.replications=1", "sim.horizon=4",
                           "sim.warmup=0", f"hydra.sweep.dir={tmp_path / 'sweep'}"], capture_output=True, text=True,
                          cwd=tmp_path, timeout=300)
    assert done.returncode == 1, done.stderr
    shown = done.stdout + done.stderr
    assert "\x1b" not in shown and "\x07" not in shown
    expanded, = [line for line in done.stderr.splitlines() if line.startswith("simstack -m ")]
    outcome, = [line for line in done.stderr.splitlines() if line.startswith("1 of 2 jobs ok")]
    job, = [line for line in done.stdout.splitlines() if line.startswith("job 1 ")]
    assert all("\\x1b]0;pwned\\x07" in line for line in (expanded, outcome, job)), (expanded, outcome, job)
