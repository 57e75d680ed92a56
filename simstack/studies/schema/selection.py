"""Which simulation a study reads: a run selection.

A metric, a grid point, a report figure or a calibration target each names one run of the
model: a scenario, a what-if, parameter and flag overrides and run settings. Selections
stack: ``merge(base, top)`` is ``top`` over ``base`` (its scenario and what-if if set, its
values over the base's), which is how a grid point's axes, an alternative reading and a
figure's own runs combine.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from simstack.errors import ModelError
from simstack.lang.schema import Field, mapping, name_ref, read_fields
from simstack.studies.schema.run_keys import run_setting_values

SELECTION_KEYS = ("scenario", "whatif", "parameters", "flags", "settings")


@dataclass(frozen=True)
class RunSelection:
    """Which simulation a metric reads: scenario, what-if, overrides and run settings."""

    scenario: str | None = None
    whatif: str | None = None
    parameters: Mapping[str, Any] = field(default_factory=dict, hash=False)
    flags: Mapping[str, bool] = field(default_factory=dict, hash=False)
    settings: Mapping[str, Any] = field(default_factory=dict, hash=False)


def merge(base: RunSelection, top: RunSelection) -> RunSelection:
    """``top`` over ``base``: its scenario / what-if if set, its values over ``base``'s."""
    return RunSelection(top.scenario or base.scenario, top.whatif or base.whatif,
                        {**base.parameters, **top.parameters}, {**base.flags, **top.flags},
                        {**base.settings, **top.settings})


_FIELDS = {"scenario": Field(name_ref, None), "whatif": Field(name_ref, None), "parameters": Field(mapping, {}),
           "flags": Field(mapping, {}), "settings": Field(run_setting_values, {})}


def parse_selection(raw: object, path: str = "") -> RunSelection:
    """A mapping that is only a selection (a figure's run, a grid point's extras); none is the model as it is."""
    return RunSelection(**read_fields(raw if raw is not None else {}, _FIELDS, path))


def selection_within(raw: Mapping[str, Any], path: str) -> RunSelection:
    """The selection keys of a larger mapping (a metric's, an axis value's); the rest is the caller's."""
    return parse_selection({k: raw[k] for k in SELECTION_KEYS if k in raw}, path)


def selections(raw: object) -> dict[str, RunSelection]:
    """``{label: selection}``; a list of what-if names is short for ``{name: {whatif: name}}``."""
    if isinstance(raw, list):
        raw = {str(name): {"whatif": name} for name in raw}
    out = {}
    for label, sel in labelled(raw).items():
        try:
            out[str(label)] = parse_selection(sel)
        except ModelError as exc:
            raise exc.at(path=str(label)) from None
    if not out:
        raise ModelError("expected at least one run")
    return out


def labelled(value: object) -> dict[str, Any]:
    """A mapping of labels (names or numbers, as a table or legend shows them) to values;
    YAML's ``yes:`` and ``~:`` keys (true, null) are refused rather than shown as ``True``."""
    if not isinstance(value, Mapping):
        raise ModelError(f"expected a mapping, got {value!r}")
    odd = [k for k in value if isinstance(k, bool) or not isinstance(k, str | int | float)]
    if odd:
        raise ModelError(f"expected names or numbers as keys, got {odd[0]!r} (quote it: '{odd[0]}')")
    return {str(k): v for k, v in value.items()}
