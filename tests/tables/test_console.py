"""What the command line prints: one number format, units in headers, the run header on a
line of its own whether or not a progress bar ran before it."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from simstack import simulate
from simstack.engine.precise import simulate_until_precise
from simstack.load.loader import build_spec
from simstack.resources import hotpath
from simstack.tables.console import format_table, number, precision_text, resource_table, summary_text
from simstack.tables.stopping import Precision, Target
from simstack.testing.terminal import run_in_terminal, run_logged

SCIENTIFIC = re.compile(r"\d[eE][+-]?\d")

MODEL = {
    "name": "tiny",
    "hosts": {"h": {"cores": 1, "discipline": "ps"}},
    "components": {"dev": {"kind": "lock", "per": "device"},
                   "pool": {"kind": "threads", "host": "h", "size": 2}},
    "requests": {"r": {"host": "h", "steps": [
        {"hold": "pool", "steps": [{"cpu": "exp(2ms)", "name": "work"},
                                   {"hold": "dev", "key": "item", "steps": [{"delay": "50us"}]}]}]}},
    "workloads": {"w": {"type": "open", "request": "r", "rate": "100/s"}},
}


@pytest.mark.parametrize(("value", "text"), [
    (0.06632, "0.06632"), (0.295, "0.2950"), (9.99996, "10.00"), (-1e-4, "-0.0001000"),
    (8.5127, "8.513"), (1234.5, "1234"), (12.0, "12"),
    (np.int64(30429), "30429"), (float("nan"), "-"), (3.98e-6, "0.000003980"), (2.5e-8, "2.500e-08"),
    (4.2e10 + 0.5, "4.200e+10"), (4.2e10, "42000000000"), ("fifo", "fifo"), (True, "True"),
])
def test_number_is_plain_with_four_significant_digits(value: object, text: str) -> None:
    assert number(value) == text


def test_a_column_spanning_decades_keeps_four_significant_digits_in_plain_notation() -> None:
    """The case pandas prints as 6.632e-02 beside 0.295; aligned decimals would print the
    smallest as 0.0001 (issue 29: ``mean_queue 0.000000``)."""
    table = pd.DataFrame({"resource": ["a", "b", "c"], "mean_queue": [0.06632, 8.928e-05, 0.131],
                          "drops": [0.0, 2.0, 0.0]})
    lines = format_table(table).splitlines()
    assert lines[0].split() == ["resource", "mean_queue", "drops"]
    assert [line.split()[1] for line in lines[1:]] == ["0.06632", "0.00008928", "0.1310"]
    assert [line.split()[2] for line in lines[1:]] == ["0", "2", "0"]
    assert len({len(line) for line in lines}) == 1  # right-aligned columns


def test_a_check_table_gives_mixed_columns_significant_digits_and_keeps_four_in_the_rest() -> None:
    table = pd.DataFrame({"check": ["a", "b", "c"], "predicted": [9.99999999996, 3.98e-6, 52842.5],
                          "rel_error_%": [-3.997e-12, 0.2238, -14.17]})
    lines = format_table(table, mixed=("predicted",)).splitlines()
    assert [line.split()[1] for line in lines[1:]] == ["10.00", "0.000003980", "52842"]
    assert [line.split()[2] for line in lines[1:]] == ["0", "0.2238", "-14.17"]  # no "-0.00", no 1e-12


def test_missing_values_and_empty_tables() -> None:
    assert format_table(pd.DataFrame({"x": [1.5, np.nan]})).splitlines()[2].strip() == "-"
    assert format_table(pd.DataFrame({"request": [], "mean_ms": []})).endswith("(no rows)")


def test_printed_summary_has_units_in_headers_and_no_scientific_notation(capsys: pytest.CaptureFixture[str]
                                                                         ) -> None:
    result = simulate(build_spec(MODEL, None), seed=1, replications=2, horizon=5.0, warmup=0.5)
    print(summary_text(result))
    out = capsys.readouterr().out
    assert out.splitlines()[0] == ("model tiny: 2 replications, seed 1, horizon 5 s, warm-up 0.5 s, "
                                   f"wall {result.wall_time:.2f} s, hot path {hotpath.label()}, kernel {result.kernel}")
    assert not SCIENTIFIC.search(out), out
    for header in ("mean_ms", "p95_ms", "ci_low_ms", "failed_%", "utilisation_%", "mean_queue"):
        assert header in out
    resources = resource_table(result).set_index("resource")
    assert np.isfinite(resources["utilisation_%"]).all()  # the per-key lock included
    assert 0 < resources.loc["dev", "utilisation_%"] < 100


def _cli(tmp_path: Path, tty: bool) -> str:
    model = tmp_path / "tiny.yaml"
    model.write_text(yaml.safe_dump(MODEL))
    args = [f"model={model}", "sim.horizon=2", "sim.replications=3", "sim.progress=true",
            f"hydra.run.dir={tmp_path / 'out'}"]
    code, out = run_in_terminal(args) if tty else run_logged(args)
    assert code == 0, out
    return out


def test_in_a_log_there_is_no_bar_and_the_header_is_the_first_line(tmp_path: Path) -> None:
    out = _cli(tmp_path, tty=False)
    assert "\r" not in out
    assert out.splitlines()[0].startswith("model tiny: 3 replications")


def test_on_a_terminal_the_bar_is_cleared_and_the_header_starts_its_own_line(tmp_path: Path) -> None:
    out = _cli(tmp_path, tty=True)
    assert "simulating tiny" in out  # the bar was shown
    before, header = out.split("model tiny: 3 replications", 1)
    last_line = before.replace("\r\n", "\n").split("\n")[-1]
    assert last_line.split("\r")[-1] == ""  # nothing left of the bar on the header's line
    assert f" s, hot path {hotpath.label()}, kernel " in header.split("\n")[0]  # all on that line


def test_the_precision_line_of_a_model_without_a_time_unit_has_no_ms() -> None:
    """An imported LQN model's times have no unit (``time_unit: none``): its precision line and
    table are in model time units (``tu``), never ms; a timed model keeps ms (issue 29.10)."""
    model = {"name": "plain", "hosts": {}, "components": {"station": {"kind": "server", "servers": 1,
                                                                      "service": "exp(1)"}},
             "requests": {"job": [{"call": "station"}]},
             "workloads": {"w": {"type": "open", "request": "job", "rate": 0.5}}}
    target = Precision(Target(relative=0.2, absolute=0.5))
    texts = {}
    for clock in ("none", "s"):
        spec = build_spec({**model, "settings": {"time_unit": clock}}, None)
        result = simulate_until_precise(spec, target, replications=3, seed=1, horizon=200.0, warmup=10.0,
                                        record_steps=False)
        texts[clock] = precision_text(result)
    assert "ms" not in texts["none"] and "0.5 tu" in texts["none"] and "estimate_tu" in texts["none"], texts
    assert "500 ms" in texts["s"] and "estimate_ms" in texts["s"], texts
