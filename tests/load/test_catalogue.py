"""``simstack kinds`` lists the whole vocabulary and cannot drift from what the loader accepts:
every registered kind, field and call option, every step action and modifier, and the
host and workload keys the loader reads inline (compared here with the loader's own
refusal messages, which list what it accepts)."""

from __future__ import annotations

import re
import subprocess
import sys
from typing import Any

import pytest
import yaml

from simstack import ModelError
from simstack.kinds import REGISTRY
from simstack.kinds.workloads import REGISTRY as WORKLOAD_TYPES
from simstack.load.catalogue import (
    DISCIPLINES,
    HOST_FIELDS,
    MODIFIER_DOCS,
    STEPS,
    WORKLOAD_COMMON,
    catalogue,
    default_text,
    workload_keys,
)
from simstack.load.loader import build_spec
from simstack.load.sections import SETTINGS
from simstack.load.steps.requests import ACTIONS, MODIFIERS

TEXT = catalogue()


def lines_of(section: str) -> str:
    start = TEXT.index(section)
    end = TEXT.find("\n\n", start)
    return TEXT[start:end if end > 0 else None]


def test_every_registered_kind_with_its_fields_and_call_options_is_listed() -> None:
    kinds = lines_of("COMPONENT KINDS")
    for name, kind in REGISTRY.items():
        assert f"  {name}: {kind.doc}" in kinds
        block = kinds[kinds.index(f"  {name}: "):]
        nxt = re.search(r"\n  \S", block[3:])
        block = block[: nxt.start() + 3] if nxt else block
        for field_name, field in {**kind.fields, **kind.call_options}.items():
            if field_name == "kind":
                continue
            assert re.search(rf"\n\s+{field_name}\s+default {re.escape(default_text(field.default))}\s+\S", block), \
                (name, field_name)
            assert field.help, f"{name}.{field_name} has no help text for simstack kinds"


def test_every_step_action_and_modifier_is_listed_with_a_doc() -> None:
    steps = lines_of("STEPS")
    for action in ACTIONS:
        assert action in STEPS, f"step {action!r} has no line in catalogue.STEPS"
        assert re.search(rf"\n  {action}( \[[^\]]*\])?: {re.escape(STEPS[action])}", steps)
    for modifier in MODIFIERS:
        assert modifier in MODIFIER_DOCS, f"modifier {modifier!r} has no line in catalogue.MODIFIER_DOCS"
        assert f"    {modifier}" in steps


def test_settings_are_listed() -> None:
    for name in SETTINGS:
        assert re.search(rf"\n  {name}\s+default", lines_of("SETTINGS"))


def _accepted(doc_change: dict[str, Any]) -> set[str]:
    """The keys the loader accepts where ``doc_change`` puts an unknown key 'zzz'."""
    doc: dict[str, Any] = {"hosts": {"h": {"cores": 1}}, "requests": {"r": [{"delay": 1}]},
                           "workloads": {"w": {"type": "open", "rate": 1, "request": "r"}}}
    doc.update(doc_change)
    with pytest.raises(ModelError) as caught:
        build_spec(doc, None)
    message = str(caught.value)
    assert "unknown key 'zzz'" in message, message
    return set(message.split("expected one of: ")[1].split(", "))


def test_host_keys_and_defaults_match_the_loader() -> None:
    accepted = _accepted({"hosts": {"h": {"cores": 1, "zzz": 1}}})
    assert accepted | {"replicas"} == set(HOST_FIELDS)
    host = build_spec({"hosts": {"h": {"cores": 1}}, "requests": {"r": [{"delay": 1}]},
                       "workloads": {"w": {"type": "open", "rate": 1, "request": "r"}}}, None).hosts["h"]
    assert (str(host.speed), host.discipline) == (HOST_FIELDS["speed"][0], HOST_FIELDS["discipline"][0])
    with pytest.raises(ModelError) as caught:
        build_spec({"hosts": {"h": {"cores": 1, "discipline": "zzz"}}}, None)
    listed = str(caught.value).split("expected one of ")[1].split(", got")[0]
    assert set(listed.split(", ")) == set(DISCIPLINES)


@pytest.mark.parametrize("kind", WORKLOAD_TYPES)
def test_workload_keys_match_the_loader(kind: str) -> None:
    accepted = _accepted({"workloads": {"w": {"type": kind, "request": "r", "zzz": 1}}})
    listed = set(workload_keys(WORKLOAD_TYPES[kind])) | set(WORKLOAD_COMMON) - {"enabled"}
    assert accepted | ({"replicas"} if kind == "open" else set()) == listed


@pytest.mark.parametrize("kind", WORKLOAD_TYPES)
def test_workload_defaults_are_listed_as_a_model_file_would_write_them(kind: str) -> None:
    """Each default shown, read back as a model file's value, is the default the loader uses."""
    fields = WORKLOAD_TYPES[kind].fields(None)
    for key, (shown, doc) in workload_keys(WORKLOAD_TYPES[kind]).items():
        assert doc, (kind, key)
        if key not in fields or shown in ("required", "-"):
            continue
        assert fields[key].parse(yaml.safe_load(shown)) == fields[key].default, (kind, key, shown)
    block = lines_of("WORKLOADS")
    assert re.search(rf"\n  type\s+default required\s+.*\b{kind}\b", block)
    assert f"\n  {kind}:\n" in block


def test_simstack_kinds_prints_the_catalogue() -> None:
    out = subprocess.run([sys.executable, "-c", "import sys; sys.argv = ['simstack', 'kinds']; "
                          "from simstack.cli.main import main; main()"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == TEXT.strip()
