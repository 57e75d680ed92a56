"""``read_yaml`` keeps a checked document by its text: a study that reads its model once per run
parses it once, every caller still gets data of its own, and a changed file is read anew."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import simstack.io.safeyaml as safeyaml
from simstack.io.safeyaml import read_yaml

TEXT = "name: m\nhosts:\n  h: {cores: 2}\nlist: &a [1, 2.5, x]\nagain: *a\n"


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts libyaml was asked to build a document from."""
    seen: list[str] = []
    real = safeyaml._load

    def counted(source: str) -> Any:
        seen.append(source)
        return real(source)
    monkeypatch.setattr(safeyaml, "_load", counted)
    return seen


def test_the_same_text_is_parsed_once_and_read_equal(tmp_path: Path, parses: list[str]) -> None:
    path = tmp_path / "model.yaml"
    path.write_text(TEXT + "# once\n", encoding="utf-8")
    first, second = read_yaml(path), read_yaml(path)
    assert first == second == {"name": "m", "hosts": {"h": {"cores": 2}}, "list": [1, 2.5, "x"],
                               "again": [1, 2.5, "x"]}
    assert len(parses) == 1
    assert second["list"] is second["again"]  # an alias is one object, as safe_load builds it


def test_a_changed_file_is_read_anew(tmp_path: Path, parses: list[str]) -> None:
    path = tmp_path / "model.yaml"
    path.write_text(TEXT + "size: 1\n", encoding="utf-8")
    assert read_yaml(path)["size"] == 1
    path.write_text(TEXT + "size: 2\n", encoding="utf-8")  # same length, maybe the same mtime
    assert read_yaml(path)["size"] == 2
    assert len(parses) == 2


def test_a_caller_changing_its_copy_changes_no_later_read(tmp_path: Path) -> None:
    path = tmp_path / "model.yaml"
    path.write_text(TEXT + "# mutated\n", encoding="utf-8")
    got = read_yaml(path)
    got["hosts"]["h"]["cores"] = 99
    got["list"].append("more")
    del got["name"]
    assert read_yaml(path) == {"name": "m", "hosts": {"h": {"cores": 2}}, "list": [1, 2.5, "x"],
                               "again": [1, 2.5, "x"]}


def test_a_kept_document_is_checked_again_under_a_lower_limit(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "model.yaml"
    path.write_text("values: [" + ", ".join(["1"] * 50) + "]\n", encoding="utf-8")
    assert len(read_yaml(path)["values"]) == 50
    monkeypatch.setattr(safeyaml, "MAX_VALUES", 10)
    with pytest.raises(safeyaml.ModelError, match="more than the 10 values"):
        read_yaml(path)


def test_a_kept_document_reads_as_safe_load_reads_it(tmp_path: Path) -> None:
    """Dates, sets, binary and nested aliases come back as the safe loader builds them."""
    import yaml

    text = "when: 2026-11-29\nat: 2026-11-29T03:10:00Z\ntags: !!set {a, b}\nraw: !!binary aGk=\n" \
           "base: &b {x: [1, {y: 2}]}\nother: *b\n"
    path = tmp_path / "model.yaml"
    path.write_text(text, encoding="utf-8")
    first, second = read_yaml(path), read_yaml(path)
    assert first == second == yaml.safe_load(text)
    assert second["base"] is second["other"] and second["base"] is not first["base"]


def test_a_new_text_goes_through_libyaml_twice_not_three_times(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Once to count its values (stopping early at the limit) and once composed, the document
    built from the nodes the checks walked: the document and the checks each composed it before."""
    import yaml

    passes: list[str] = []
    real = yaml.CSafeLoader

    class Counted(real):  # type: ignore[misc, valid-type]
        def __init__(self, stream: str) -> None:
            passes.append(stream)
            super().__init__(stream)
    monkeypatch.setattr(yaml, "CSafeLoader", Counted)
    path = tmp_path / "model.yaml"
    path.write_text(TEXT + "base: &b {x: 1}\nmerged: {<<: *b, y: 2}\n# passes\n", encoding="utf-8")
    assert read_yaml(path)["merged"] == {"x": 1, "y": 2}
    assert len(passes) == 2
    read_yaml(path)  # kept: not read by libyaml again
    assert len(passes) == 2
