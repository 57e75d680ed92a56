"""The workload registry: a ``type:`` is one registered class (its keys, their reading and
docs, its start), found by the loader, ``simstack kinds`` and the run alike; a workload spec
nothing registers is refused with its name, not left silently idle."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from simstack.errors import ModelError
from simstack.kinds.workloads import _BY_SPEC, REGISTRY, WorkloadType, is_finite, register, type_of
from simstack.lang.schema import Field
from simstack.lang.spec import Workload
from simstack.lang.units import parse_count, parse_time
from simstack.load.catalogue import catalogue
from simstack.load.loader import build_spec
from simstack.studies.analysis.network import build_network
from simstack.testing import run


def test_every_registered_type_names_itself() -> None:
    assert list(REGISTRY) == ["open", "closed", "periodic", "protocol", "map", "trace"]
    for name, wtype in REGISTRY.items():
        assert wtype.name == name and _BY_SPEC[wtype.spec] is wtype


@dataclass(frozen=True)
class BurstWorkload(Workload):
    size: int
    at: float


class Burst(WorkloadType):
    """A new type written as a user would: a burst of ``size`` requests at time ``at``."""

    name = "burst"
    spec = BurstWorkload
    docs = {"size": "requests in the burst", "at": "when it comes"}

    @classmethod
    def fields(cls, base_dir: Path | None) -> dict[str, Field]:
        return {"size": Field(lambda v: int(parse_count(v))), "at": Field(parse_time, 0.0)}

    @classmethod
    def read(cls, name: str, values: Mapping[str, Any], raw: Mapping[str, Any], where: str) -> Workload:
        return BurstWorkload(name, values["request"], values["size"], values["at"])

    @classmethod
    def start(cls, r: Any, wl: BurstWorkload, scope: Any) -> None:
        def go(_e: object) -> None:
            for i in range(wl.size):
                r.start(wl.request, wl.name, i, scope, None)
        r.env.timeout(wl.at).callbacks.append(go)

    @classmethod
    def finite(cls, wl: BurstWorkload) -> bool:
        return True


@pytest.fixture
def burst() -> Iterator[None]:
    register(Burst)
    yield
    del REGISTRY["burst"], _BY_SPEC[BurstWorkload]


def _burst_doc(**keys: Any) -> dict[str, Any]:
    return {"hosts": {"h": {"cores": 2}}, "requests": {"r": {"host": "h", "steps": [{"cpu": "1ms"}]}},
            "workloads": {"b": {"type": "burst", "request": "r", **keys}}}


def test_a_new_type_is_one_registered_class(burst: None) -> None:
    spec = build_spec(_burst_doc(size=5, at="2s"), None)
    assert spec.workloads["b"] == BurstWorkload("b", "r", 5, 2.0)
    assert is_finite(spec)
    res = run(_burst_doc(size=5, at="2s"), seed=1, replications=1, horizon=None)
    assert len(res.requests) == 5
    assert res.requests["start"].min() == pytest.approx(2.0)
    # 5 jobs of 1 ms shared by 2 cores (processor sharing): all end when the 5 ms of work is done
    assert res.requests["end"].max() == pytest.approx(2.0025)
    text = catalogue()
    assert "open, closed, periodic, protocol, map, trace or burst" in text
    assert "\n  burst:\n    size  default required   requests in the burst\n    at    default 0" in text


def test_a_new_type_is_read_with_the_located_errors_of_the_others(burst: None) -> None:
    with pytest.raises(ModelError, match=r"workloads\.b: missing required key 'size'"):
        build_spec(_burst_doc(), None)
    with pytest.raises(ModelError, match=r"workloads\.b\.sise: unknown key 'sise' \(did you mean 'size'\?\); "
                                         r"expected one of: type, request, doc, size, at"):
        build_spec(_burst_doc(sise=3), None)
    with pytest.raises(ModelError, match=r"types: open, closed, periodic, protocol, map, trace, burst"):
        build_spec({**_burst_doc(), "workloads": {"b": {"type": "bust", "request": "r"}}}, None)
    with pytest.raises(ModelError, match=r"workloads\.b: a burst workload"):
        build_network(build_spec(_burst_doc(size=1), None))


@dataclass(frozen=True)
class _Unknown:
    name: str
    request: str


def test_an_unregistered_workload_spec_is_refused_by_name() -> None:
    with pytest.raises(ModelError, match=r"workloads\.burst: no workload type runs _Unknown; types: closed, map, open"):
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
