"""The ``report:`` section of a study file: which standard figures a model's page shows.

A report is data like the rest of the study: a title, an intro, short run settings that
every simulated figure uses (so a page builds in minutes, not hours), and a list of
figures, each ``{type: NAME, title: ..., <keys of that type>}``. The keys of each figure
type are declared by its builder module (``simstack.report.figures``); an unknown type or
key is refused with its key path, before anything runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from simstack.errors import ModelError
from simstack.lang.schema import Field, read_fields, suggest, text


@dataclass(frozen=True)
class FigureSpec:
    """One figure: its type, heading, note and the keys its builder declared, parsed."""

    type: str
    title: str
    doc: str
    options: Mapping[str, Any] = field(hash=False)
    path: str = ""


@dataclass(frozen=True)
class ReportSpec:
    title: str | None
    intro: str
    settings: Mapping[str, Any] = field(hash=False)
    figures: tuple[FigureSpec, ...]
    out: str | None = None


def mapping(value: object) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise ModelError(f"expected a mapping, got {value!r}")
    return dict(value)


def _figure(raw: object, path: str) -> FigureSpec:
    from simstack.report.figures import BUILDERS

    if not isinstance(raw, Mapping) or "type" not in raw:
        raise ModelError(f"a figure needs a type: one of {', '.join(BUILDERS)}", path=path)
    kind = raw["type"]
    if kind not in BUILDERS:
        raise ModelError(f"unknown figure type {kind!r}{suggest(kind, BUILDERS)}; figure types: "
                         f"{', '.join(BUILDERS)}", path=f"{path}.type")
    fields: dict[str, Field] = {"type": Field(str), "title": Field(text, ""), "doc": Field(text, ""),
                                **BUILDERS[kind].FIELDS}
    values = read_fields(raw, fields, path)
    options = {k: v for k, v in values.items() if k not in ("type", "title", "doc")}
    return FigureSpec(kind, values["title"], values["doc"], options, path)


def parse_report(raw: object) -> ReportSpec:
    """The section as read from YAML; errors are located relative to ``report``."""
    values = read_fields(raw, {"title": Field(text, None), "intro": Field(text, ""),
                               "settings": Field(mapping, {}), "figures": Field(list),
                               "out": Field(text, None)}, "")
    if not values["figures"]:
        raise ModelError("expected a non-empty list of figures", path="figures")
    figures = tuple(_figure(f, f"figures[{i}]") for i, f in enumerate(values["figures"]))
    return ReportSpec(values["title"], values["intro"], values["settings"], figures, values["out"])


def report_field() -> Field:
    """The study file's ``report`` key, for the study reader (validated when a study loads)."""
    return Field(parse_report, None)
