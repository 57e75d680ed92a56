"""Figure builders by figure type: each builder module registers its ``build`` here.

The keys of each figure type are data of the study schema
(``simstack.studies.schema.report.FIGURES``); drawing one is the business of a builder
module of this folder, which registers itself with ``@builds(TYPE)``. ``simstack.report.figures``
imports every builder module, so a report build finds them all.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from simstack.studies.schema.report import FIGURES

if TYPE_CHECKING:
    from simstack.report.context import Context
    from simstack.studies.schema.report import FigureSpec

Builder = Callable[["Context", "FigureSpec"], list[Any]]
BUILDERS: dict[str, Builder] = {}


def builds(kind: str) -> Callable[[Builder], Builder]:
    """Register ``build(context, figure) -> parts`` as the builder of figure type ``kind``."""
    if kind not in FIGURES:
        raise ValueError(f"figure type {kind!r} has no keys in the study schema (FIGURES)")

    def register(build: Builder) -> Builder:
        BUILDERS[kind] = build
        return build
    return register
