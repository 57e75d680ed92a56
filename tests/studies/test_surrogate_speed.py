"""The surrogate's faster solve gives the values the slower one gave: a handful of Tango
series (the population recursion, Java clients' two closed chains, the 2-socket server's
per-client data, a far pair) at two parameter sets, against values written by the solver
before it was made faster (tests/data/tango_surrogate_reference.json), within 1e-9.

The reference pins the Tango model files it was made from (their sha256): when the model
changes on purpose, the comparison no longer means anything and is skipped, saying so;
regenerate with ``python tests/test_surrogate_speed.py`` (on the solver you trust).
Also: the flat plan sums a tree's demands exactly as a walk of the tree does."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from simstack.io.paths import model_dir_of
from simstack.studies.analysis.nodes import Fanout, HoldNode, Network, Node, Visit
from simstack.studies.evaluate.rowtargets import target_series
from simstack.studies.fit.surrogate import MvaCurves
from simstack.studies.schema.study import load_study

pytestmark = pytest.mark.slow  # the Tango surrogate on 1,899 rows

REFERENCE = Path(__file__).resolve().parents[1] / "data" / "tango_surrogate_reference.json"
FILES = ("model.yaml", "data/placement.csv", "data/standard_tests.csv")
SECTIONS = (("predictions", "axes"), ("calibration", "targets"))  # what the surrogate reads of checks.yaml
LABELS = ("c5n.2xlarge | C++ | c5n.2xlarge | C++ | attribute_read | False",
          "c5n.xlarge | Java | c5n.xlarge | Java | attribute_read | False",
          "c5n.18xlarge | Python | c5n.18xlarge | Python | attribute_write | False",
          "c5n.large | Python | c5n.2xlarge | Python | attribute_write | True",
          "c5n.large | Java | c5n.18xlarge | Python | attribute_read | False")


def _hashes(model_dir: Path) -> dict[str, str]:
    out = {f: hashlib.sha256((model_dir / f).read_bytes()).hexdigest() for f in FILES}
    study = yaml.safe_load((model_dir / "checks.yaml").read_text())
    for section, key in SECTIONS:
        text = json.dumps(study[section][key], sort_keys=True, default=str)
        out[f"checks.yaml {section}.{key}"] = hashlib.sha256(text.encode()).hexdigest()
    return out


def _curves(model_dir: Path, parameter_sets: dict[str, dict[str, float]]) -> dict[str, dict[str, list[float]]]:
    study = load_study(model_dir)
    cal: Any = study.calibration
    assert study.predictions is not None
    metric: Any = study.metrics[cal.rows.metric]
    _, _, series = target_series(model_dir, cal.rows, study.predictions.axes, metric, "calibration.targets")
    by_label = {s.label: s for s in series}
    curves = MvaCurves(study, metric.request, cal.rows.population)
    out: dict[str, dict[str, list[float]]] = {}
    for name, values in parameter_sets.items():
        out[name] = {}
        for label in LABELS:
            curve = curves.curve(by_label[label], values)
            out[name][label] = [curve[n] for n in sorted(curve)]
    return out


def test_the_faster_solve_gives_the_reference_values() -> None:
    model_dir = model_dir_of("tango", None)
    ref = json.loads(REFERENCE.read_text())
    changed = [f for f, h in _hashes(model_dir).items() if ref["sha256"].get(f) != h]
    if changed:
        pytest.skip(f"the Tango model changed since the reference was made ({', '.join(changed)}); "
                    "regenerate it with python tests/test_surrogate_speed.py")
    got = _curves(model_dir, ref["parameters"])
    worst = 0.0
    for name, series in ref["values"].items():
        for label, values in series.items():
            want = np.array(values)
            assert len(got[name][label]) == len(want), label
            worst = max(worst, float(np.max(np.abs(np.array(got[name][label]) / want - 1))))
    assert worst <= 1e-9


def _walk_demands(nodes: list[Node], holds: dict[int, float], out: dict[str, float]) -> dict[str, float]:
    """The tree walk the plan replaces (the solver's former ``_demands``)."""
    for node in nodes:
        if isinstance(node, Visit):
            out[node.station] = out.get(node.station, 0.0) + node.mean
        elif isinstance(node, HoldNode):
            out[node.station] = out.get(node.station, 0.0) + holds.get(id(node), 0.0)
            _walk_demands(node.body, holds, out)
        else:
            for branch in node.branches:
                _walk_demands(branch, holds, out)
    return out


def test_the_plan_sums_demands_in_the_walks_order() -> None:
    from simstack.studies.analysis.nodes import Chain
    from simstack.studies.analysis.plan import Plan  # imported here: the script writes the reference on older code too

    rng = np.random.default_rng(5)
    def visits(k: int) -> list[Node]:
        return [Visit(f"s{rng.integers(4)}", float(rng.exponential(1e-4)), 0.0) for _ in range(k)]
    inner = HoldNode("lock", visits(3))
    body: list[Node] = [*visits(2), HoldNode("pool", [*visits(2), inner,
                                                      Fanout([visits(2), [HoldNode("lock", visits(1))]], 2.0)]),
                        *visits(3)]
    net = Network({}, {"c": Chain("c", "op", body, population=3)})
    holds = {id(body[2]): 3.3e-4, id(inner): 1.7e-5}
    plan = Plan(net)
    assert plan.demands("c", holds) == _walk_demands(body, holds, {})  # equal to the bit
    assert list(plan.demands("c", holds)) == list(_walk_demands(body, holds, {}))  # and in the same order


if __name__ == "__main__":  # write the reference from the solver on the path
    from simstack.io.safeyaml import read_yaml
    from simstack.lang.units import quantity
    from simstack.load.loader import build_spec

    tango = model_dir_of("tango", None)
    spec = build_spec(read_yaml(tango / "model.yaml"), tango / "model.yaml")
    free = [n for n, p in spec.parameters.items() if p.free is not None]
    fitted = yaml.safe_load((tango / "data" / "surrogate_fit.yaml").read_text())["parameters"]
    sets = {"model": {n: float(quantity(spec.parameters[n].value)) for n in free},
            "surrogate_fit": {n: float(quantity(fitted[n])) for n in free}}
    REFERENCE.write_text(json.dumps({"sha256": _hashes(tango), "parameters": sets,
                                     "values": _curves(tango, sets)}, indent=1) + "\n")
    print(f"wrote {REFERENCE}", file=sys.stderr)
