"""The command line: configs compose without the command line, overrides are checked,
and a real run writes its tables and metadata."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from hydra import compose, initialize_config_dir
from hydra.errors import ConfigCompositionException

from simstack.cli.main import CONFIG_DIR
from simstack.cli.overrides import check_overrides
from simstack.cli.run import run_settings
from simstack.cli.single import composable, compose_once
from simstack.errors import ConfigError, ModelError
from simstack.load.loader import MODELS_DIR
from simstack.load.precedence import stack_layers
from simstack.load.whatif import load_whatif

pytestmark = pytest.mark.slow  # most tests run the simstack command (2-3 s of start-up each)

ROOT = Path(__file__).resolve().parents[2]
WHATIFS = sorted(f"{p.parents[1].name}/{p.stem}" for p in MODELS_DIR.glob("*/whatif/*.yaml"))


def _compose(*overrides: str):
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
        return compose(config_name="config", overrides=list(overrides))


def test_every_model_folder_keeps_its_whatifs() -> None:
    assert len(WHATIFS) >= 30 and "pipeline/settings_cache" in WHATIFS
    assert not (Path(CONFIG_DIR) / "whatif").exists()


@pytest.mark.parametrize("whatif", WHATIFS)
def test_every_whatif_reads_and_names_only_real_parameters(whatif: str) -> None:
    import simstack

    cfg = _compose(f"whatif={whatif}")
    chosen = load_whatif(cfg.whatif)
    choice = stack_layers({}, chosen)  # the what-if's values, as the command line layers them
    params, flags = choice.parameters, choice.flags
    model = whatif.split("/")[0]
    spec = simstack.load_model(model, scenario=chosen.scenario, parameters=params, flags=flags)
    assert set(flags) <= spec.declared_flags


def test_a_whatif_is_found_by_bare_name_and_by_path() -> None:
    by_name = load_whatif("settings_cache", "pipeline")
    by_path = load_whatif(str(MODELS_DIR / "pipeline" / "whatif" / "settings_cache.yaml"))
    assert by_name == by_path and by_name.flags == {"cache": True}


def test_a_mistyped_whatif_lists_the_existing_ones() -> None:
    with pytest.raises(ModelError, match=r"unknown what-if 'pipeline/setings_cache' \(did you mean "
                       r"'settings_cache'\?\); what-ifs of pipeline: pipeline/double_consoles, "
                       r"pipeline/double_workers, pipeline/settings_cache"):
        load_whatif("pipeline/setings_cache")
    with pytest.raises(ModelError, match=r"what-if 'settings_cache' names no model; write "
                       r"whatif=<model>/settings_cache"):
        load_whatif("settings_cache")


def test_a_whatif_holds_only_parameters_flags_scenario_and_doc(tmp_path: Path) -> None:
    path = tmp_path / "w.yaml"
    path.write_text("parameters: {consoles: 4}\nsettings: {horizon: 3}\n")
    with pytest.raises(ModelError, match=r"w.yaml: settings: unknown key 'settings'; expected one of: "
                       r"parameters, flags, scenario, doc"):
        load_whatif(str(path))
    path.write_text("flags: {cache: yes please}\n")
    with pytest.raises(ModelError, match=r"w.yaml: flags: expected a mapping flag: true/false"):
        load_whatif(str(path))


def test_run_settings_fall_back_to_the_model_settings() -> None:
    cfg = _compose("sim.seed=7")
    settings = run_settings(cfg, {"horizon": "2min", "warmup": "10s"})
    assert settings["seed"] == 7
    assert settings["horizon"] == 120.0
    assert settings["warmup"] == 10.0


def test_an_override_that_names_nothing_is_refused() -> None:
    with pytest.raises(ConfigCompositionException, match=r"Could not override 'sim.sed'"):
        _compose("sim.sed=3")


REFUSED = [
    (["nonexistent=3"], r"^unknown setting 'nonexistent'; known settings are: .*\bsim\.seed\b.*\bmodel\b[^;]*$"),
    # issue 22 item 14: a + before a typo is the same typo (it ran with the default, silently)
    (["+sim.replicatons=3"], r"^unknown setting 'sim.replicatons' \(did you mean 'sim.replications'\?\); sim has: "
                             r"seed, replications, [^;]*$"),
    (["+foo.bar=1"], r"^unknown setting 'foo.bar': 'foo' is not a group of settings"),
    (["++anything=1"], r"^unknown setting 'anything'; known settings are: "),
    (["-m", "+sim.replicatons=3,4"], r"^unknown setting 'sim.replicatons'"),
    (["model=pipeline", "parameters.consoles=24"],
     r"^unknown setting 'parameters.consoles'; parameters has: \(none\); to add a new key, write "
     r"\+parameters.consoles=24$"),
    (["sim.sed=3"], r"^unknown setting 'sim.sed' \(did you mean 'sim.seed'\?\); sim has: seed, replications"),
    (["-m", "sim=quick,quik"], r"^unknown sim option 'quik' \(did you mean 'quick'\?\) in 'sim=quick,quik'; "
                               r"sim options: default, quick$"),
    (["model=[pipeline"], r"^cannot read the override 'model=\[pipeline' \(no viable alternative at input "
                          r"'\[pipeline'\); write key=value, \+key=value to add a key"),
    (["+model=pipeline"], r"^model is already a setting; write model=pipeline without the '\+'$"),
    (["~nothing"], r"^unknown setting 'nothing'"),
    # a deleted setting was a traceback (model, task, sim, parameters) or Hydra's own refusal, exit 1
    *[([f"~{key}"], rf"^cannot delete the setting '{key}' \('~{key}'\): every simstack setting has a value; "
                    rf"write {key}=VALUE, or leave it out for its default$")
      for key in ("model", "task", "sim", "sim.seed", "scenario", "parameters", "output.tables")],
    (["-m", "hydra/launcher=jobli"], r"^unknown hydra/launcher option 'jobli' \(did you mean 'joblib'\?\) in "
                                     r"'hydra/launcher=jobli'; hydra/launcher options: .*\bbasic\b.*\bjoblib\b"),
    (["+parameters.x=${oc.env:HOME}"], r"^parameters.x: interpolation '\$\{...\}' is not allowed"),
    (["+parameters.x=1", "parameters.x=2"], r"^unknown setting 'parameters.x'; .* write \+parameters.x=2$"),
]


@pytest.mark.parametrize(("argv", "message"), REFUSED)
def test_overrides_hydra_would_refuse_are_explained_first(argv: list[str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        check_overrides(argv, Path(CONFIG_DIR))


@pytest.mark.parametrize(("argv", "message"), [(a, m) for a, m in REFUSED if composable(a)])
def test_a_single_command_composed_once_is_refused_alike(argv: list[str], message: str) -> None:
    """A single command's check takes the config Hydra composed from its overrides (or none,
    when Hydra refused them) and composes the default only where it must: the same refusals."""
    with pytest.raises(ConfigError, match=message):
        check_overrides(argv, Path(CONFIG_DIR), compose_once(CONFIG_DIR, argv))


@pytest.mark.parametrize(("argv", "message"), [
    # Hydra's own settings: five lines and exit 1 (a key the launcher lacks, a value of the wrong type)
    (["-m", "sim.horizon=1,2", "hydra.launcher.foo=1"],
     r"^Could not override 'hydra.launcher.foo'; .*Key 'foo' not in 'BasicLauncherConf' "
     r"\(in 'hydra.launcher.foo=1'\)$"),
    (["-m", "hydra/launcher=joblib", "hydra.launcher.n_jobs=abc"],
     r"^Error merging override hydra.launcher.n_jobs=abc; Value 'abc' of type 'str' could not be converted to Integer"),
    (["-m", "hydra.sweeper.max_batch_size=abc"], r"override hydra.sweeper.max_batch_size=abc; Value 'abc'"),
    # ... and values refused only after the sweep's folder is claimed: a traceback (HYDRA_FULL_ERROR=1 by then)
    (["-m", "sim.horizon=1,2", "hydra.sweeper.max_batch_size=-1"],
     r"^hydra.sweeper.max_batch_size: must be a whole number of at least 1 \(or null\), got -1$"),
    (["-m", "hydra/launcher=joblib", "hydra.launcher.n_jobs=0"],
     r"^hydra.launcher.n_jobs: 0 jobs at once runs nothing"),
])
def test_hydras_own_settings_are_refused_in_one_line_before_the_sweep(argv: list[str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        check_overrides(argv, Path(CONFIG_DIR))


@pytest.mark.parametrize("argv", [
    ["model=pipeline", "+parameters.consoles=2,4", "-m", "sim.horizon=5"],
    ["hydra/launcher=joblib", "hydra.run.dir=x/${now:%H}", "sim=quick", "whatif=pipeline/settings_cache"],
    ["--help"], ["--cfg", "job", "task=check"], ["++parameters.x=1", "scenario=null", "+where.cores=32"],
    ["-m", "model=pipeline", "whatif=null,pipeline/settings_cache"],
    ["-m", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2", "hydra.sweep.dir=x", "hydra.job.chdir=false"],
])
def test_valid_overrides_pass_the_check(argv: list[str]) -> None:
    check_overrides(argv, Path(CONFIG_DIR))


@pytest.mark.parametrize(("argv", "once"), [
    (["task=check", "model=pipeline", "sim.seed=3", "+parameters.x=1"], True), (["hydra.run.dir=x"], True),
    (["~hydra.run.dir"], False), (["+hydra.run.dir=x"], False), (["hydra.job.chdir=true"], False),
    (["--cfg", "job"], False), (["-m", "sim.seed=1,2"], False), (["model@foo=pipeline"], False),
])
def test_only_plain_overrides_of_simstack_and_the_run_folder_are_composed_once(argv: list[str], once: bool) -> None:
    """Anything else goes through ``hydra.main``, which says itself what it refuses (a failed
    composition of ``~hydra.run.dir`` on both paths claimed two run folders)."""
    assert composable(argv) is once


@pytest.mark.parametrize("argv", [
    ["++parameters.x=1", "output.tables=false", "+where.cores=32"],
    ["model=pipeline", "whatif=[settings_cache,pipeline/double_workers]"],
    ["sim=quick", "model=tango", "hydra.run.dir=x", "models_dir=/nowhere"], ["whatif=pipeline/settings_cache"],
])
def test_a_single_command_composed_once_passes_alike(argv: list[str]) -> None:
    """The files a run will read are the same whether the check composed the default or not."""
    composed = compose_once(CONFIG_DIR, argv)
    assert composable(argv) and composed is not None
    assert check_overrides(argv, Path(CONFIG_DIR), composed) == check_overrides(argv, Path(CONFIG_DIR))


def _simstack(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).parent / "simstack"
    return subprocess.run([str(exe), *args], capture_output=True, text=True, cwd=cwd, timeout=300)


def test_a_run_prints_a_summary_and_writes_compact_tables(tmp_path: Path) -> None:
    out = tmp_path / "run"
    done = _simstack("model=pipeline", "sim.replications=2", "sim.horizon=10", "sim.progress=false",
                     f"hydra.run.dir={out}", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "trim" in done.stdout and "mean_ms" in done.stdout
    assert done.stdout.rstrip().endswith(f"outputs written to {out}")
    meta = json.loads((out / "run.json").read_text())
    assert meta["seed"] == 1 and meta["replications"] == 2 and meta["horizon"] == 10.0
    assert meta["config"]["sim"]["record_steps"] is False and meta["config"]["model"] == "pipeline"
    for table in ("summary.csv", "resources.csv", "requests.parquet"):
        assert (out / table).stat().st_size > 0
    requests = pd.read_parquet(out / "requests.parquet")
    summary = pd.read_csv(out / "summary.csv")
    trims = requests[(requests["request"] == "trim") & ~requests["warmup"] & requests["ok"]]
    assert len(trims) == int(summary.loc[summary["request"] == "trim", "count"].iloc[0])
    assert not (out / "steps.parquet").exists() and not list(out.glob("*.csv.*"))
    assert sum(f.stat().st_size for f in out.rglob("*") if f.is_file()) < 1_000_000


def test_steps_are_recorded_only_when_asked(tmp_path: Path) -> None:
    out = tmp_path / "run"
    done = _simstack("model=pipeline", "whatif=pipeline/settings_cache", "sim.record_steps=true",
                     "sim.replications=1", "sim.horizon=4", "sim.warmup=1", "sim.progress=false",
                     f"hydra.run.dir={out}", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "where the time goes" in done.stdout and "what-if settings_cache" in done.stdout
    steps = pd.read_parquet(out / "steps.parquet")
    assert {"request", "step", "start", "end"} <= set(steps.columns) and len(steps) > 0
    meta = json.loads((out / "run.json").read_text())
    assert meta["config"]["whatif"] == "pipeline/settings_cache" and "cache" in meta["flags"]
    assert meta["config"]["whatif_file"].endswith("settings_cache.yaml")


def test_an_unknown_parameter_is_a_clear_error_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "run"
    done = _simstack("model=pipeline", "+parameters.nope=3", f"hydra.run.dir={out}", cwd=tmp_path)
    assert done.returncode == 2
    assert "parameters (override): unknown parameter 'nope'; parameters: consoles" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (out / "summary.csv").exists()


def test_a_hydra_override_error_speaks_simstack_and_exits_2(tmp_path: Path) -> None:
    done = _simstack("nonexistent=3", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith("simstack: error: unknown setting 'nonexistent'; known settings are: ")
    assert "+nonexistent" not in done.stderr  # a + would not make it a setting (issue 22 item 14)
    assert "Traceback" not in done.stderr and "struct" not in done.stderr
    assert not (tmp_path / "outputs").exists()


def test_a_launcher_option_refused_after_the_claim_is_one_line_and_exit_2(tmp_path: Path) -> None:
    """joblib refuses n_jobs=0 only when the sweep starts, after its folder is claimed and Hydra
    hands on what escapes (HYDRA_FULL_ERROR=1): that was a ValueError traceback, exit 1."""
    done = _simstack("-m", "model=pipeline", "+parameters.consoles=2,4", "hydra/launcher=joblib",
                     "hydra.launcher.n_jobs=0", f"hydra.sweep.dir={tmp_path / 'sweep'}", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (2, "simstack: error: hydra.launcher.n_jobs: 0 jobs at once runs "
                                                 "nothing; write a number of at least 1 (or -1 for one per CPU)\n")
    assert not (tmp_path / "sweep").exists()


@pytest.mark.parametrize(("args", "message"), [
    (["check", "jobs=abc"], "jobs must be a whole number >= 1, got 'abc'"),
    (["check", "jobs=-3"], "jobs must be a whole number >= 1, got -3"),
    (["calibrate", "jobs=2.5"], "jobs must be a whole number >= 1, got 2.5"),
    (["predict", "sim.jobs=0"], "sim.jobs must be a whole number >= 1, got 0"),
])
def test_a_bad_process_count_is_a_clear_error(tmp_path: Path, args: list[str], message: str) -> None:
    """Before anything runs or is written: exit 2 and the key, not a ValueError's traceback."""
    done = _simstack(args[0], "model=pipeline", *args[1:], cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert f"simstack: error: {message}" in done.stderr and "Traceback" not in done.stderr


def test_a_mistyped_whatif_on_the_command_line_exits_2(tmp_path: Path) -> None:
    done = _simstack("model=pipeline", "whatif=pipeline/nope", cwd=tmp_path)
    assert done.returncode == 2
    assert "simstack: error: unknown what-if 'pipeline/nope'; what-ifs of pipeline: pipeline/double_consoles, " \
           "pipeline/double_workers, pipeline/settings_cache" in done.stderr


def test_a_sweep_is_gathered_into_one_table(tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    done = _simstack("-m", "model=pipeline", "sim.replications=1", "sim.horizon=8", "sim.warmup=1",
                     "sim.progress=false",
                     "+parameters.consoles=2,8", f"hydra.sweep.dir={sweep}", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    import pandas as pd

    table = pd.read_csv(sweep / "sweep_summary.csv")
    assert sorted(table["parameters.consoles"].unique()) == [2, 8]
    assert (sweep / "sweep_report.html").read_text().count("plotly") > 0


def test_help_explains_the_groups() -> None:
    done = _simstack("--help", cwd=ROOT)
    assert done.returncode == 0
    assert "whatif" in done.stdout and "sim" in done.stdout and "+parameters.NAME=VALUE" in done.stdout
