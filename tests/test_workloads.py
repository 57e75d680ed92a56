"""The workload registry: every ``type:`` the loader reads has a registered runtime, and a
workload spec nothing registers is refused with its name, not left silently idle."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from simstack.errors import ModelError
from simstack.loader import WORKLOAD_TYPES, build_spec
from simstack.workloads import REGISTRY, is_finite, type_of


def test_every_type_the_loader_reads_is_registered() -> None:
    assert set(REGISTRY) == set(WORKLOAD_TYPES)
    for name, wtype in REGISTRY.items():
        assert wtype.name == name


@dataclass(frozen=True)
class _Unknown:
    name: str
    request: str


def test_an_unregistered_workload_spec_is_refused_by_name() -> None:
    with pytest.raises(ModelError, match=r"workloads\.burst: no workload type runs _Unknown; types: closed, open"):
        type_of(_Unknown("burst", "r"))  # type: ignore[arg-type]


def _spec(workload: dict) -> object:
    return build_spec({"hosts": {"h": {"cores": 1}}, "requests": {"r": {"host": "h", "steps": [{"cpu": "1ms"}]}},
                       "workloads": {"w": {"request": "r", **workload}}}, None)


@pytest.mark.parametrize(("workload", "finite"), [
    ({"type": "open", "rate": "10Hz"}, False),
    ({"type": "open", "rate": "10Hz", "count": 5}, True),
    ({"type": "closed", "clients": 2, "count": 3}, True),
    ({"type": "periodic", "frequency": "1Hz"}, False),
    ({"type": "protocol", "repeat": 3}, True),
])
def test_finite_asks_each_type(workload: dict, finite: bool) -> None:
    assert is_finite(_spec(workload)) is finite  # type: ignore[arg-type]
