"""``read_yaml`` parses with libyaml (its pure-Python scanner was a third of a GSI check's time)
and must give exactly what ``yaml.safe_load`` gives, refuse what it refuses with the pure
loader's words, and build no object from a tag either way."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from simstack.errors import ModelError
from simstack.io.safeyaml import read_yaml

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted(p for folder in ("models", "experiments") for p in (ROOT / folder).rglob("*.yaml"))


def test_every_shipped_file_reads_as_safe_load_reads_it() -> None:
    assert len(SHIPPED) > 20
    for path in SHIPPED:
        assert read_yaml(path) == yaml.safe_load(path.read_text(encoding="utf-8")), path


def test_the_parser_is_libyamls() -> None:
    if not yaml.__with_libyaml__:
        pytest.skip("PyYAML built without libyaml: the pure loader is the only one")
    import simstack.io.safeyaml as safeyaml

    calls: list[str] = []
    real = yaml.safe_load

    def pure(source: str) -> object:
        calls.append(source)
        return real(source)

    safeyaml.yaml.safe_load = pure  # type: ignore[assignment]
    try:
        assert safeyaml._load("a: [1, 2.5, x]\nb: {c: null}\n") == {"a": [1, 2.5, "x"], "b": {"c": None}}
    finally:
        safeyaml.yaml.safe_load = real
    assert calls == []


@pytest.mark.parametrize("text, words", [
    ("a: !!python/object/apply:os.system ['true']\n", "at line 1, column 4 is not allowed"),
    ("a: [1, 2\n", "expected ',' or ']'"),
    ("a: b: c\n", "mapping values are not allowed here"),
])
def test_a_refusal_reads_as_the_pure_loaders(tmp_path: Path, text: str, words: str) -> None:
    path = tmp_path / "model.yaml"
    path.write_text(text)
    with pytest.raises(ModelError, match=words):
        read_yaml(path)
