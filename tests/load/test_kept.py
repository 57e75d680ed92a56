"""One command's loads share what they read (``simstack.load.kept``): its hosts and components
once for every flag set, and a flag set's model once. The LHCb check loaded its farm nine times,
reading and checking its 1,482 hosts and 5,988 components each time; the runs it loads must be
the very models a load outside a command gives, and every error must still be raised."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from simstack import ModelError
from simstack.load import kept, sections
from simstack.load.loader import load_model

MODEL = """
parameters: {nodes: 6, think: 1s}
flags: [fast]
hosts:
  node: {cores: 2, discipline: ps, replicas: $nodes}
components:
  nfs: {kind: fileserver, threads: 4, latency: 1ms, bandwidth: 1GB/s}
  worker: {kind: threads, host: node, size: 3, replicas: $nodes}
  cache: {kind: cache, host: node, backing: nfs, bandwidth: 2GB/s, replicas: $nodes}
requests:
  job:
    - hold: "worker[item]"
      steps:
        - {read: {from: "cache[item]", file: lib, bytes: 1MB}, unless: fast}
        - {cpu: 10ms}
workloads:
  arrivals: {type: closed, clients: $nodes, think: $think, request: job}
settings: {horizon: 20s}
"""


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "farm" / "model.yaml"
    path.parent.mkdir()
    path.write_text(MODEL, encoding="utf-8")
    return path


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many components each reading of a components section read and checked."""
    seen: list[int] = []
    real = sections.components

    def counted(raw: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(len(raw))
        return real(raw, *args, **kwargs)
    monkeypatch.setattr(sections, "components", counted)
    return seen


def test_flag_sets_of_one_command_read_the_components_once(model: Path, reads: list[int]) -> None:
    choices: list[dict[str, Any]] = [{}, {"fast": True}, {"fast": False}]
    alone = [load_model(model, flags=flags) for flags in choices]
    assert len(reads) == 3
    with kept.one_command():
        shared = [load_model(model, flags=flags) for flags in choices]
    assert len(reads) == 4  # one more reading for the three flag sets
    for one, other in zip(alone, shared, strict=True):
        assert (one.hosts, one.components, one.requests, one.workloads, one.flags, one.replicas) == \
            (other.hosts, other.components, other.requests, other.workloads, other.flags, other.replicas)
        assert list(one.components) == list(other.components) and list(one.hosts) == list(other.hosts)
        assert sorted(one.graph.edges(data=True)) == sorted(other.graph.edges(data=True))  # type: ignore[union-attr]
    assert shared[0].requests != shared[1].requests  # the flag still changes the request class
    assert shared[0].components is not shared[1].components  # each model its own mapping


def test_a_flag_set_loaded_again_is_not_built_again(model: Path, reads: list[int]) -> None:
    with kept.one_command():
        first = load_model(model, flags={"fast": True}, parameters={"think": "2s"})
        again = load_model(model, flags={"fast": True}, parameters={"think": "2s"})
        other = load_model(model, flags={"fast": True}, parameters={"think": 2})  # 2 is not "2s": its own load
    assert again is first and other is not first
    assert len(reads) == 1  # think is no host's or component's: read once
    assert load_model(model, flags={"fast": True}, parameters={"think": "2s"}) is not first  # outside: loaded


def test_a_parameter_of_the_components_reads_them_again(model: Path, reads: list[int]) -> None:
    with kept.one_command():
        small, large = load_model(model), load_model(model, parameters={"nodes": 9})
    assert reads == [13, 19] and len(large.hosts) == 9 and len(small.hosts) == 6


def test_an_error_is_raised_every_time_inside_a_command(model: Path) -> None:
    with kept.one_command():
        errors = []
        for _ in range(2):
            with pytest.raises(ModelError) as caught:
                load_model(model, parameters={"nodes": "many"})
            errors.append(str(caught.value))
        assert errors[0] == errors[1]
        assert str(model) in errors[0] and "hosts.node.replicas" in errors[0]


def test_a_changed_model_file_is_read_anew_inside_a_command(model: Path) -> None:
    with kept.one_command():
        before = load_model(model)
        model.write_text(MODEL.replace("size: 3", "size: 5"), encoding="utf-8")
        after = load_model(model)
    assert before.components["worker[0]"].settings["size"] == 3
    assert after.components["worker[0]"].settings["size"] == 5

