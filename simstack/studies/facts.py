"""What a bound rests on: facts, or assumptions.

A bound beyond the measured rows claims "whatever the true mechanism, the value lies here".
That holds only if every number in it is a *fact*: stated or measured in the source (the cores
of the machine, the bytes to move, a line rate, one thread's serial work measured at one
thread). A number the calibration fitted, or one the modeller chose, is an *assumption*: a
mechanism that fits the same rows differently (a database whose capacity grows with its
sessions) can break a limit built on it.

Each ``$name`` of a limit (or of the ``scale``) is classified here, following parameters
whose value is an expression of others down to what they are made of:

- the row's own configuration (a parameter the grid point or its what-if sets): a fact, it
  is the question asked;
- a fact the study states (``bounds.facts``: a measured value and its source): a fact;
- a parameter the calibration fits (``calibrated.yaml``, the calibration's parameters, any
  ``free:`` range): an assumption, always;
- a model parameter declared ``fact: <source>``: a fact;
- any other model value: an assumption (chosen).

Numbers written in the limit itself are the study's own statement; its ``doc`` says where
they come from.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Set
from dataclasses import dataclass, field

from simstack.errors import ModelError
from simstack.lang.spec import Parameter

_REF = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
CONFIGURED = "the row's configuration"
FITTED = "fitted by the calibration"
CHOSEN = "a value chosen in model.yaml"


@dataclass(frozen=True)
class Premises:
    """The facts (name -> source) and assumptions (name -> why) an expression rests on."""

    facts: Mapping[str, str] = field(default_factory=dict, hash=False)
    assumptions: Mapping[str, str] = field(default_factory=dict, hash=False)

    @property
    def factual(self) -> bool:
        return not self.assumptions

    def named(self) -> str:
        """The assumptions in one line, as a row names them: ``$db_bandwidth fitted; ...``."""
        return "; ".join(f"${name} {why}" for name, why in self.assumptions.items())

    def record(self) -> dict[str, object]:
        return {"rests_on": "facts" if self.factual else "assumptions", "facts": dict(self.facts),
                **({"assumptions": dict(self.assumptions)} if self.assumptions else {})}


def premises(text: str, declared: Mapping[str, Parameter], stated: Mapping[str, str],
             fitted: Set[str], configured: Set[str]) -> Premises:
    """Classify every parameter ``text`` names. ``declared``: the model's parameters as written;
    ``stated``: the study's facts (name -> source); ``fitted``: the names a calibration sets;
    ``configured``: the names the row sets."""
    facts: dict[str, str] = {}
    assumptions: dict[str, str] = {}

    def walk(expression: str, chain: tuple[str, ...]) -> None:
        for name in _REF.findall(expression):
            if name in chain or name in facts or name in assumptions:
                continue
            if name in configured:
                facts[name] = CONFIGURED
            elif name in stated:
                facts[name] = stated[name]
            elif name in fitted or (name in declared and declared[name].free is not None):
                assumptions[name] = FITTED
            elif name not in declared:
                raise ModelError(f"unknown parameter ${name}; parameters: {', '.join(declared)}")
            elif declared[name].fact:
                facts[name] = declared[name].fact
            elif isinstance(declared[name].value, str) and "$" in declared[name].value:
                walk(declared[name].value, chain + (name,))  # a formula: what it is made of decides
            else:
                assumptions[name] = CHOSEN
    walk(text, ())
    return Premises(facts, assumptions)
