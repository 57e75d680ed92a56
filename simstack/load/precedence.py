"""Which value wins, decided in one place for the command line, studies, reports and calibration.

A run is a model file plus layers written elsewhere, and each caller used to stack them
itself. The order, earliest first:

- model parameters: the model file, its chosen scenario (``simstack.load.parameters``), the
  calibrated values (``calibrated.yaml``, or a calibration candidate), the what-if, then
  explicit overrides (``+parameters.NAME`` on the command line, a metric's own);
- flags: the model file, its scenario, the what-if, then explicit overrides;
- the scenario: the one named explicitly, else the what-if's;
- run settings (horizon, warm-up, seed, replications): each layer over the ones before it,
  where a null leaves the earlier value (the command line: the model's ``settings``, then
  ``sim.*``; a study: its ``defaults``, the model's ``settings``, then a run's own).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simstack.errors import ConfigError, ModelError
from simstack.io.paths import inside
from simstack.io.safeyaml import read_yaml
from simstack.lang.schema import mapping
from simstack.lang.spec import ModelSpec
from simstack.lang.units import parse_time
from simstack.load.whatif import WhatIf


@dataclass(frozen=True)
class ModelChoice:
    """What ``load_model`` is given: a scenario, parameter and flag overrides."""

    scenario: str | None
    parameters: dict[str, Any] = field(default_factory=dict, hash=False)
    flags: dict[str, bool] = field(default_factory=dict, hash=False)


def stack_layers(base: Mapping[str, Any], whatif: WhatIf | None = None, *, scenario: str | None = None,
                 parameters: Mapping[str, Any] | None = None, flags: Mapping[str, bool] | None = None
                 ) -> ModelChoice:
    """The layers stacked into what ``load_model`` is given: ``base`` parameters (calibrated
    values), then the what-if's, then explicit ones; the scenario named, else the what-if's."""
    params = {**base, **(whatif.parameters if whatif else {}), **(parameters or {})}
    chosen_flags = {**(whatif.flags if whatif else {}), **(flags or {})}
    return ModelChoice(scenario or (whatif.scenario if whatif else None), params, chosen_flags)


def load_chosen(model_file: Path, calibrated: Mapping[str, Any], whatif: WhatIf | None, *,
                scenario: str | None = None, parameters: Mapping[str, Any] | None = None,
                flags: Mapping[str, bool] | None = None) -> ModelSpec:
    """The model with its layers applied (``stack_layers``). When that fails, the layers are tried
    one at a time so that the error names the file it comes from (``calibrated.yaml``, the
    what-if) instead of the model file that merely received the value. Only a failure pays for
    the extra loads; every task that loads a model (a run, a study's runs) goes through here, so
    each names the same file."""
    from simstack.load.loader import load_model

    choice = stack_layers(calibrated, whatif, scenario=scenario, parameters=parameters, flags=flags)
    try:
        return load_model(model_file, scenario=choice.scenario, parameters=choice.parameters, flags=choice.flags)
    except ModelError as exc:
        before = stack_layers({})
        for source, partial in _layers(model_file, calibrated, whatif):
            try:
                load_model(model_file, scenario=partial.scenario, parameters=partial.parameters, flags=partial.flags)
            except ModelError as inner:
                if source is None:
                    raise exc from None
                raise _in_layer(model_file, inner, source, before, partial) from None
            before = partial
        raise exc from None


def _in_layer(model_file: Path, error: ModelError, source: Path, before: ModelChoice,
              failed: ModelChoice) -> ModelError:
    """``error`` named in ``source``, the layer that turned the loadable ``before`` into
    ``failed``; under the key of the layer's one parameter that alone is refused when the
    model refuses it where it uses it (a what-if's ``workers: -4`` as ``components.workers.size``)."""
    from simstack.load.loader import load_model

    if not (error.path or "").startswith("parameters"):
        for key, value in failed.parameters.items():
            if key in before.parameters and before.parameters[key] == value:
                continue
            try:
                load_model(model_file, scenario=before.scenario, parameters={**before.parameters, key: value},
                           flags=before.flags)
            except ModelError as one:
                where = f" (as {one.path})" if one.path else ""
                return ModelError(f"{one.reason}{where}", file=str(source), path=f"parameters.{key}")
    return ModelError(error.reason, file=str(source), path=error.path)


def _layers(model_file: Path, calibrated: Mapping[str, Any],
            whatif: WhatIf | None) -> list[tuple[Path | None, ModelChoice]]:
    """The layers a failed load is retried with, each over the ones before it, and the file each
    adds (None: the model file itself). Of ``calibrated``, the values ``calibrated.yaml`` holds
    are its layer; any others (a calibration candidate, drawn from the model's ``free`` ranges)
    are the model file's, so a study's candidate is never blamed on a file that lacks it."""
    try:
        written = calibrated_parameters(model_file.parent) if calibrated else {}
    except ModelError:  # a malformed file cannot have supplied the values
        written = {}
    own = {k: v for k, v in calibrated.items() if k in written and written[k] == v}
    layers: list[tuple[Path | None, ModelChoice]] = [(None, stack_layers({}))]
    if own:
        layers.append((model_file.parent / "calibrated.yaml", stack_layers(own)))
    if len(own) < len(calibrated):
        layers.append((None, stack_layers(calibrated)))
    if whatif is not None:
        layers.append((whatif.file, stack_layers(calibrated, whatif)))
    return layers


def calibrated_parameters(model_dir: Path) -> dict[str, Any]:
    """Fitted parameter values stored beside the model (empty when not calibrated)."""
    path = model_dir / "calibrated.yaml"
    if not path.is_file():
        return {}
    doc = read_yaml(inside(model_dir, "calibrated.yaml", "calibrated.yaml")) or {}  # not through a link out
    values = doc.get("parameters") if isinstance(doc, Mapping) else None
    if not isinstance(values, Mapping):
        raise ModelError("expected a 'parameters' mapping", file=str(path))
    try:
        return mapping(values)  # parameter names, never yes: or ~:
    except ModelError as exc:
        raise exc.at(file=str(path), path="parameters") from None


def run_settings(*layers: Mapping[str, Any]) -> dict[str, Any]:
    """``simulate``'s seed, replications, horizon and warm-up (seconds, or ``"mser5"``) and,
    when one is asked for, the load ``trace``, from layers of settings, later over earlier; a
    null in a layer leaves the earlier value."""
    merged: dict[str, Any] = {}
    for layer in layers:
        merged.update({k: v for k, v in layer.items() if v is not None})
    horizon = merged.get("horizon")
    warmup = merged.get("warmup", 0)
    return {"seed": merged.get("seed", 1), "replications": merged.get("replications", 1),
            "horizon": None if horizon is None else _setting_time(horizon, "sim.horizon"),
            "warmup": warmup if warmup == "mser5" else _setting_time(warmup, "sim.warmup", "or 'mser5'"),
            **({"trace": merged["trace"]} if "trace" in merged else {})}


def _setting_time(value: object, key: str, other: str = "") -> float:
    """A run setting in seconds, or an error naming the setting (and what else it may be)."""
    try:
        return parse_time(value)
    except ModelError as exc:
        raise ConfigError(f"{key}: {exc}" + (f" ({other})" if other else "")) from None


__all__ = ["ModelChoice", "calibrated_parameters", "load_chosen", "run_settings", "stack_layers"]
