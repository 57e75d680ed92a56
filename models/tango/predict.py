"""Write ``predictions.csv``: the simulator's 15 s counts for every configuration of the paper.

    .venv/bin/python models/tango/predict.py            # about 15-25 minutes on 2 cores

The paper's configurations (33 instance/language combinations x 2 operations x 14 client
counts = 924 rows):

* server side (Figs. 3-6): Python clients on c5n.18xlarge against servers c5n.large ...
  c5n.18xlarge in Python, C++ and Java (c5n.9xlarge, and C++/Java on c5n.18xlarge, are held
  out: never fitted, predicted);
* client side (Figs. 7-8): clients c5n.large ... c5n.9xlarge in Python, C++ and Java (and
  Python on c5n.18xlarge) against the Python server on c5n.18xlarge.

Each row is one simulation through the study machinery (``simstack.predict.predict`` on the
``predictions`` section of checks.yaml, restricted to these points): calibrated parameters,
seed and replications of checks.yaml's defaults, the model's settings (20 ms warm-up, 0.2 s
window), scaled x 15.  ``tests/test_model_tango.py`` recomputes a few rows and requires this
file to match.  ``simstack predict model=tango`` would simulate the full 6 x 3 x 6 x 3 x 2 x 14
product (9,072 points); this script keeps the 924 the paper has.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from simstack.predict import predict, prediction_path
from simstack.study import load_study

HERE = Path(__file__).resolve().parent
SIZES = ["large", "xlarge", "2xlarge", "4xlarge", "9xlarge", "18xlarge"]
LANGS = ["Python", "C++", "Java"]
COLUMNS = ["client_instance", "client_language", "server_instance", "server_language", "operation",
           "clients", "predicted_count_15s"]


def paper_configurations() -> set[tuple[str, str, str, str]]:
    """(client_instance, client_language, server_instance, server_language)."""
    server_side = {("c5n.18xlarge", "Python", f"c5n.{s}", lang) for s in SIZES for lang in LANGS}
    client_side = {(f"c5n.{s}", lang, "c5n.18xlarge", "Python") for s in SIZES[:-1] for lang in LANGS}
    return server_side | client_side


def held_out(server_instance: str, server_language: str) -> bool:
    return server_instance == "c5n.9xlarge" or (server_instance == "c5n.18xlarge"
                                                and server_language in ("C++", "Java"))


def keep_paper(point: Mapping[str, str]) -> bool:
    return (point["client_instance"], point["client_language"], point["server_instance"],
            point["server_language"]) in paper_configurations()


def order(table: pd.DataFrame) -> pd.DataFrame:
    table = table.assign(clients=table["clients"].astype(int))
    return table.sort_values(COLUMNS[:6]).reset_index(drop=True)[COLUMNS]


def main() -> int:
    study = load_study(HERE)
    t0 = time.time()
    table = order(predict(study, keep=keep_paper, progress=True))
    table["predicted_count_15s"] = table["predicted_count_15s"].round().astype(int)
    path = prediction_path(study)
    table.to_csv(path, index=False)
    print(f"wrote {path}: {len(table)} rows in {time.time() - t0:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
