"""What-if files: names as keys, read with the one mapping validator of ``lang/schema``."""

from __future__ import annotations

from pathlib import Path

import pytest

from simstack.errors import ModelError
from simstack.load.whatif import read_whatif


@pytest.mark.parametrize(("text", "message"), [
    # YAML reads yes: as true and ~: as null; a what-if names parameters and flags by their names
    ("parameters: {yes: 2}\n", r"w\.yaml: parameters: expected names as keys, got True \(quote it: 'True'\)"),
    ("parameters: {~: 2}\n", r"w\.yaml: parameters: expected names as keys, got None"),
    ("parameters: {1: 2}\n", r"w\.yaml: parameters: expected names as keys, got 1"),
    ("flags: {~: true}\n", r"w\.yaml: flags: expected names as keys, got None"),
    ("parameters: [1, 2]\n", r"w\.yaml: parameters: expected a mapping, got \[1, 2\]"),
])
def test_a_whatif_with_keys_that_are_not_names_is_refused_with_its_key(tmp_path: Path, text: str,
                                                                      message: str) -> None:
    path = tmp_path / "w.yaml"
    path.write_text(text)
    with pytest.raises(ModelError, match=message):
        read_whatif(path)


def test_a_whatif_reads_parameters_flags_and_scenario(tmp_path: Path) -> None:
    path = tmp_path / "w.yaml"
    path.write_text("parameters: {consoles: 4}\nflags: [cache]\nscenario: busy\n")
    whatif = read_whatif(path)
    assert (whatif.name, dict(whatif.parameters), dict(whatif.flags), whatif.scenario) == \
        ("w", {"consoles": 4}, {"cache": True}, "busy")
    path.write_text("parameters:\nflags:\n")  # written with nothing after them: empty
    assert (dict(read_whatif(path).parameters), dict(read_whatif(path).flags)) == ({}, {})
