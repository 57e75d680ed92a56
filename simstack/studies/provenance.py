"""Provenance of a predictions file: what it was made from, so a stale file is detected.

``simstack predict`` writes ``<file>_meta.json`` beside each predictions CSV: SHA-256 hashes
of the model file, of the parts of the study file that decide a prediction (defaults,
metrics, predictions; not their ``doc`` prose, not the report section), of the fitted parameter values
(not the calibration date), of the what-ifs and of the baselines, plus the seed, the
simstack commit, the command and the date. ``inputs_sha256`` combines the hashes that decide
the numbers; the model's tests compare it with the current files. A study with an interval
adds the hash of what its acceptance rule reads (the checks and the calibration section:
tolerances and targets), with ``model_error`` that of the left-out rows its band is made of,
and with ``parameter_uncertainty`` that of the point fit's ranges (an alternative's are in its
file's hash).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from simstack.errors import ModelError
from simstack.io.paths import inside
from simstack.io.safeyaml import read_yaml
from simstack.studies.schema.study import Study

DECIDING_SECTIONS = ("defaults", "metrics", "predictions")


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, default=str).encode()


def input_hashes(study: Study, parameters: Mapping[str, Any]) -> dict[str, str | None]:
    """One hash per input of the predictions (None for an input the model does not have)."""
    model_dir = study.path.parent
    doc = read_yaml(study.path) or {}
    whatifs = sorted((model_dir / "whatif").glob("*.yaml")) if (model_dir / "whatif").is_dir() else []
    extra = sorted(model_dir / a.calibrated for a in (study.predictions.interval.alternatives
                                                      if study.predictions and study.predictions.interval else ())
                   if a.calibrated)
    hashes: dict[str, str | None] = {
        "model": _sha((model_dir / "model.yaml").read_bytes()),
        "study": _sha(_canonical(_without_doc({k: doc.get(k) for k in DECIDING_SECTIONS}))),
        "calibration": _sha(_canonical(dict(parameters))),
        "alternatives": _sha(b"".join(p.name.encode() + p.read_bytes() for p in extra if p.is_file()))
        if extra else None,
        "whatifs": _sha(b"".join(p.name.encode() + p.read_bytes() for p in whatifs)) if whatifs else None,
        "data": _sha(study.baselines.read_bytes()) if study.baselines and study.baselines.is_file() else None,
    }
    interval = study.predictions.interval if study.predictions else None
    if interval is not None:  # which alternatives are accepted depends on tolerances and targets
        hashes["acceptance"] = _sha(_canonical(_without_doc({k: doc.get(k) for k in ("checks", "calibration")})))
    lo = getattr(study.calibration, "leave_out", None)
    if interval is not None and interval.model_error and lo is not None:  # the left-out rows scored for the band
        path = model_dir / lo.write
        hashes["model_error"] = _sha(path.read_bytes()) if path.is_file() else None
    if interval is not None and interval.parameter_uncertainty:  # the ranges of the point's fit
        fit = read_yaml(model_dir / "calibrated.yaml") if (model_dir / "calibrated.yaml").is_file() else None
        hashes["uncertainty"] = _sha(_canonical(fit.get("uncertainty") if isinstance(fit, Mapping) else None))
    return hashes


# Keys that decide no predicted number: the prose, and whether an ordering check must be
# significant (a verdict on the check, not an input of any value or of the acceptance rule).
UNDECIDING = ("doc", "significant")


def _without_doc(value: Any) -> Any:
    """The prose (``doc`` keys) and an ordering's ``significant:`` decide no number: editing
    them leaves the hash alone."""
    if isinstance(value, Mapping):
        return {k: _without_doc(v) for k, v in value.items() if k not in UNDECIDING}
    if isinstance(value, list):
        return [_without_doc(v) for v in value]
    return value


def inputs_fingerprint(study: Study, parameters: Mapping[str, Any]) -> str:
    """What decides the numbers: model, study sections, fitted values, alternatives and what-ifs
    (the baselines only through the fitted values)."""
    hashes = input_hashes(study, parameters)
    return _sha(_canonical({k: v for k, v in hashes.items() if k != "data"}))


def git_commit(where: Path) -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True, cwd=where)
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def provenance(study: Study, parameters: Mapping[str, Any], seed: int, command: str,
               extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    return {"model": study.model, "inputs_sha256": inputs_fingerprint(study, parameters),
            "sha256": input_hashes(study, parameters), "seed": seed,
            "simstack_commit": git_commit(Path(__file__).parent), "command": command,
            "generated": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), **(extra or {})}


def meta_path(csv_path: Path) -> Path:
    return csv_path.with_name(f"{csv_path.stem}_meta.json")


def meta_text(meta: Mapping[str, Any]) -> str:
    return json.dumps(dict(meta), indent=2) + "\n"


def stale_calibration(model_dir: Path) -> str | None:
    """Why the model's ``calibrated.yaml`` may no longer fit its measurements (the baselines or
    rows it was fitted to have changed since, by their recorded SHA-256), or None."""
    path = model_dir / "calibrated.yaml"
    if not path.is_file():
        return None
    doc = read_yaml(inside(model_dir, "calibrated.yaml", "calibrated.yaml"))
    if not isinstance(doc, Mapping):
        return None
    for key in ("baselines", "rows"):
        record = doc.get(key)
        if not isinstance(record, Mapping) or not isinstance(record.get("file"), str) or not record.get("sha256"):
            continue
        try:
            measured = inside(model_dir, record["file"], f"calibrated.yaml: {key}.file")
        except ModelError:
            continue
        if not measured.is_file() or _sha(measured.read_bytes()) != record["sha256"]:
            when = f" on {doc['date']}" if doc.get("date") else ""
            return (f"calibrated.yaml was fitted to {record['file']} as it was{when}; that file has changed since: "
                    f"run simstack calibrate model={model_dir.name} again")
    return None
