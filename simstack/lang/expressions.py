"""Derived values in a model file: a small arithmetic on parameters and quantities.

An engineer writes what a value *is*, not what it came to on a calculator:
``match_deadline: 1 / $fiducial_rate`` instead of ``2777.7778us``, ``$bytes / 10MB/s`` for
a transfer time, ``max($a, 2ms)``. The grammar is whitelisted and parsed by hand (no
``eval``, no Python syntax tree): numbers with units, ``$name`` parameters, ``+ - * / **``,
unary minus, parentheses, ``min`` and ``max``. Nothing else is a name, so an expression
can compute a value and do nothing more.

A quantity keeps its dimension (powers of time and size): ``1 / 360Hz`` is a time,
``$bytes / 10MB/s`` a time, ``2ms + 3MB`` an error. The result is written back in base
units (``0.0027777777777777779s``, ``1000000.0B/s``), so the field that receives it parses
it with its usual unit rules and a rate given where a time belongs is refused there.

Where a string is an expression: it starts with ``=`` (``= 1 / 360Hz``), or it refers to a
parameter (``$``) and is more than one whole ``$name``. In a distribution such as
``exp(1 / $rate)`` each argument is read that way.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from simstack.errors import ModelError
from simstack.lang.units import HZ_UNITS, SIZE_UNITS, TIME_UNITS, as_float, shown

MAX_LENGTH = 2000  # characters: a derived value is one line, not a program
MAX_DEPTH = 40  # nested parentheses, unary signs and powers
MAX_POWER = 64  # |n| in x ** n when x has a dimension

Dim = tuple[int, int]  # powers of (time, size)
_NAMES = {(0, 0): "number", (1, 0): "time", (-1, 0): "rate", (0, 1): "size", (-1, 1): "bandwidth"}
_UNITS: dict[str, tuple[float, Dim]] = {
    **{u: (f, (1, 0)) for u, f in TIME_UNITS.items()},
    **{u: (f, (0, 1)) for u, f in SIZE_UNITS.items()},
    **{u: (f, (-1, 0)) for u, f in HZ_UNITS.items()},
}
_NUMBER = r"(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?"  # ASCII digits (\d takes every script's)
_TIME = "|".join(sorted(map(re.escape, TIME_UNITS), key=len, reverse=True))
# A number, its unit, and a "/time unit" written right after it: 10MB/s, 3.2/s, 10 MB/s.
# With spaces (10MB / s) the "/" is a division and a bare unit is refused, because
# $x / 2 / s would otherwise silently mean $x / (2/s).
_QUANTITY = re.compile(rf"({_NUMBER})(?:\s*([A-Za-zµ]+))?(?:/({_TIME})(?![A-Za-z0-9_µ(]))?")
_TOKEN = re.compile(r"\s*(?:(\*\*|[-+*/(),])|(\$[A-Za-z_][A-Za-z0-9_]*)|([A-Za-z_][A-Za-z0-9_]*)|(\S))")
_REF = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
_CALL = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*\((.*)\)\s*$", re.S)
_KEYWORD = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=(?!=)(.*)$", re.S)
FUNCTIONS = ("min", "max")
TIME_FUNCTIONS = ("sin", "cos", "abs")  # only in an expression of time (``time_expression``)


@dataclass(frozen=True)
class Quantity:
    """A value in base units (seconds, bytes) and its dimension."""

    value: float
    dim: Dim = (0, 0)

    @property
    def kind(self) -> str:
        return dim_name(self.dim)


def dim_name(dim: Dim) -> str:
    if dim in _NAMES:
        return _NAMES[dim]
    parts = [f"{name}^{power}" if power != 1 else name
             for name, power in (("time", dim[0]), ("size", dim[1])) if power]
    return " * ".join(parts)


Lookup = Callable[[str], Any]


class _Parser:
    """Recursive descent over the token list; every error says where in the text."""

    def __init__(self, text: str, lookup: Lookup, names: dict[str, Quantity] | None = None,
                 tokens: list[tuple[str, Any, int]] | None = None):
        self.text = text
        self.lookup = lookup
        self.names = names or {}  # bare names of an expression of time (t, pi)
        self.tokens = tokens if tokens is not None else _tokens(text)
        self.i = 0
        self.depth = 0

    def fail(self, message: str, at: int | None = None) -> ModelError:
        column = self.tokens[min(self.i, len(self.tokens) - 1)][2] if at is None else at
        return ModelError(f"in expression {_shown(self.text)}: {message} (at column {column + 1})")

    def peek(self) -> str:
        return self.tokens[self.i][0]

    def take(self, kind: str) -> tuple[str, Any, int]:
        token = self.tokens[self.i]
        if token[0] != kind:
            shown = "the end" if token[0] == "end" else repr(token[1])
            raise self.fail(f"expected {kind!r}, found {shown}")
        self.i += 1
        return token

    def parse(self) -> Quantity:
        result = self.sum()
        if self.peek() != "end":
            found = self.text[self.tokens[self.i][2]:].split()[0]
            raise self.fail(f"unexpected {_shown(found)} after a complete value; an expression combines values "
                            "with + - * / ** and min(...), max(...)")
        return result

    def sum(self) -> Quantity:
        left = self.product()
        while self.peek() in ("+", "-"):
            op, _, at = self.take(self.peek())
            right = self.product()
            left = self.combine(op, left, right, at)
        return left

    def product(self) -> Quantity:
        left = self.unary()
        while self.peek() in ("*", "/"):
            op, _, at = self.take(self.peek())
            right = self.unary()
            left = self.combine(op, left, right, at)
        return left

    def unary(self) -> Quantity:
        if self.peek() in ("-", "+"):
            op, _, _ = self.take(self.peek())
            with _Deeper(self):
                inner = self.unary()
            return Quantity(-inner.value, inner.dim) if op == "-" else inner
        return self.power()

    def power(self) -> Quantity:
        base = self.atom()
        if self.peek() != "**":
            return base
        _, _, at = self.take("**")
        with _Deeper(self):
            exponent = self.unary()  # right-associative, and 2 ** -1 is allowed
        return self.combine("**", base, exponent, at)

    def atom(self) -> Quantity:
        kind, value, at = self.tokens[self.i]
        if kind == "quantity":
            self.i += 1
            return value  # type: ignore[no-any-return]
        if kind == "param":
            self.i += 1
            return self.parameter(value, at)
        if kind == "(":
            self.i += 1
            with _Deeper(self):
                inner = self.sum()
            self.take(")")
            return inner
        if kind == "name" and value in self.names and self.tokens[self.i + 1][0] != "(":
            self.i += 1
            return self.names[value]
        if kind == "name":
            return self.call(value, at)
        if kind == "end":
            raise self.fail("the expression ends where a value was expected")
        raise self.fail(f"expected a value (a number such as 2ms, a $parameter, min(...), max(...) or "
                        f"parentheses), found {shown(value)}")

    def call(self, name: str, at: int) -> Quantity:
        known = FUNCTIONS + TIME_FUNCTIONS if self.names else FUNCTIONS
        if name not in known:
            unit = " (a unit goes right after a number: 1s, 2ms)" if name in _UNITS else ""
            extra = f", and the names {', '.join(self.names)}" if self.names else ""
            raise self.fail(f"unknown name {name!r}{unit}; parameters are written $name and the only "
                            f"functions are {', '.join(known)}{extra}", at)
        self.i += 1
        self.take("(")
        args = []
        with _Deeper(self):
            args.append(self.sum())
            while self.peek() == ",":
                self.take(",")
                args.append(self.sum())
        self.take(")")
        if name in TIME_FUNCTIONS:
            return self.unary_function(name, args, at)
        for arg in args[1:]:
            if arg.dim != args[0].dim:
                raise self.fail(f"{name} of a {args[0].kind} and a {arg.kind}: its arguments must be of one "
                                "kind", at)
        pick = min if name == "min" else max
        return pick(args, key=lambda q: q.value)

    def unary_function(self, name: str, args: list[Quantity], at: int) -> Quantity:
        if len(args) != 1:
            raise self.fail(f"{name} takes one argument, got {len(args)}", at)
        if name == "abs":
            return Quantity(abs(args[0].value), args[0].dim)
        if args[0].dim != (0, 0):
            raise self.fail(f"{name} takes a plain number (an angle in radians, such as 2*pi*t/60s), got a "
                            f"{args[0].kind}", at)
        return Quantity(math.sin(args[0].value) if name == "sin" else math.cos(args[0].value))

    def parameter(self, ref: str, at: int) -> Quantity:
        name = ref[1:]
        value = self.lookup(name)
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise self.fail(f"parameter ${name} is {shown(value)}, not a number or a quantity such as 2ms", at)
        if isinstance(value, int | float):
            return _finite(as_float(value), (0, 0), self, at)
        if len(value) > MAX_LENGTH:
            raise self.fail(f"parameter ${name} is longer than {MAX_LENGTH} characters", at)
        try:
            return _Parser(value, _no_parameters).parse()
        except ModelError:
            raise self.fail(f"parameter ${name} is {shown(value)}, not a number or a quantity such as 2ms "
                            "(a distribution cannot take part in arithmetic)", at) from None

    def combine(self, op: str, a: Quantity, b: Quantity, at: int) -> Quantity:
        if op in ("+", "-"):
            if a.dim != b.dim:
                verb = "add" if op == "+" else "subtract"
                raise self.fail(f"cannot {verb} a {a.kind} and a {b.kind}", at)
            return _finite(a.value + b.value if op == "+" else a.value - b.value, a.dim, self, at)
        if op == "*":
            return _finite(a.value * b.value, (a.dim[0] + b.dim[0], a.dim[1] + b.dim[1]), self, at)
        if op == "/":
            if b.value == 0:
                raise self.fail("division by zero", at)
            return _finite(a.value / b.value, (a.dim[0] - b.dim[0], a.dim[1] - b.dim[1]), self, at)
        return self.raise_to(a, b, at)

    def raise_to(self, a: Quantity, b: Quantity, at: int) -> Quantity:
        if b.dim != (0, 0):
            raise self.fail(f"an exponent must be a plain number, got a {b.kind}", at)
        whole = b.value == int(b.value)
        if a.dim != (0, 0) and not (whole and abs(b.value) <= MAX_POWER):
            raise self.fail(f"a {a.kind} can only be raised to a whole power up to {MAX_POWER}, got {b.value:g}",
                            at)
        if a.value < 0 and not whole:
            raise self.fail(f"a negative number to a fractional power ({a.value:g} ** {b.value:g}) is not real",
                            at)
        if a.value == 0 and b.value < 0:
            raise self.fail("zero to a negative power is a division by zero", at)
        try:
            value = math.pow(a.value, b.value)
        except OverflowError:
            raise self.fail(f"{a.value:g} ** {b.value:g} is too large", at) from None
        power = int(b.value) if whole else 0
        return _finite(value, (a.dim[0] * power, a.dim[1] * power), self, at)


class _Deeper:
    """Counts nesting so that ``((((...))))`` or ``- - - - 1`` fails instead of recursing away."""

    def __init__(self, parser: _Parser):
        self.parser = parser

    def __enter__(self) -> None:
        self.parser.depth += 1
        if self.parser.depth > MAX_DEPTH:
            raise self.parser.fail(f"nested more than {MAX_DEPTH} levels deep")

    def __exit__(self, *_exc: object) -> None:
        self.parser.depth -= 1


def _finite(value: float, dim: Dim, parser: _Parser, at: int) -> Quantity:
    if not math.isfinite(value):
        raise parser.fail("the value is too large to represent", at)
    return Quantity(value, dim)


def _shown(text: str, limit: int = 60) -> str:
    """The text as written, cut short: an error about a 2,000-character line need not echo it all."""
    return repr(text if len(text) <= limit else text[:limit] + "...")


def _no_parameters(name: str) -> Any:
    raise ModelError(f"${name} inside a parameter's quantity")


def _time_only(name: str) -> Any:
    raise ModelError(f"${name} in an expression of time: it takes numbers with units, t and pi, not parameters")


def _tokens(text: str) -> list[tuple[str, Any, int]]:
    """(kind, value, column) triples, ending with ("end", None, len)."""
    out: list[tuple[str, Any, int]] = []
    pos = 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos == len(text):
            out.append(("end", None, pos))
            return out
        number = _QUANTITY.match(text, pos)
        if number:
            out.append(("quantity", _quantity(text, number), pos))
            pos = number.end()
            continue
        match = _TOKEN.match(text, pos)
        assert match is not None  # the last alternative matches any non-space character
        op, param, name, other = match.groups()
        start = match.start(match.lastindex or 0)
        if other is not None:
            raise ModelError(f"in expression {_shown(text)}: unexpected character {other!r} (at column {start + 1}); "
                             "an expression holds numbers with units, $parameters, + - * / **, parentheses, "
                             "min and max")
        if op is not None:
            out.append((op, op, start))
        elif param is not None:
            out.append(("param", param, start))
        else:
            out.append(("name", name, start))
        pos = match.end()


def _quantity(text: str, match: re.Match[str]) -> Quantity:
    number, unit, per = match.group(1), match.group(2) or "", match.group(3)
    value = float(number)
    dim: Dim = (0, 0)
    if unit:
        if unit not in _UNITS:
            known = ", ".join(_UNITS)
            raise ModelError(f"in expression {_shown(text)}: unknown unit {unit!r} after {number} (at column "
                             f"{match.start(2) + 1}); known units: {known}")
        factor, dim = _UNITS[unit]
        value *= factor
    if per is not None:
        value /= TIME_UNITS[per]
        dim = (dim[0] - 1, dim[1])
    if not math.isfinite(value):
        raise ModelError(f"in expression {_shown(text)}: the number {_shown(match.group(0))} is too large to "
                         "represent")
    return Quantity(value, dim)


def evaluate(text: str, lookup: Lookup) -> Quantity:
    """The quantity an expression stands for; ``lookup(name)`` gives a parameter's value."""
    if len(text) > MAX_LENGTH:
        raise ModelError(f"an expression is at most {MAX_LENGTH} characters, got {len(text)}")
    if not text.strip():
        raise ModelError("an empty expression; write a value such as 1 / $rate after '='")
    return _Parser(text, lookup).parse()


def time_expression(text: str) -> Callable[[float], Quantity]:
    """An expression of simulated time ``t`` (and ``pi``, ``sin``, ``cos``, ``abs``), such as
    ``10/s * (1 + 0.5*sin(2*pi*t/60s))``: tokenised once, its names and units checked at t = 0,
    then worked out at any t by the same whitelisted parser (no eval)."""
    if len(text) > MAX_LENGTH:
        raise ModelError(f"an expression is at most {MAX_LENGTH} characters, got {len(text)}")
    tokens = _tokens(text)

    def at(t: float) -> Quantity:
        return _Parser(text, _time_only, {"t": Quantity(t, (1, 0)), "pi": Quantity(math.pi)}, tokens).parse()

    at(0.0)
    return at


def render(quantity: Quantity) -> Any:
    """The value a model field receives: a plain number, or text in base units that reads back
    exactly (``repr`` of a float round-trips)."""
    value = quantity.value
    if quantity.dim == (0, 0):
        return int(value) if value == int(value) and abs(value) < 2**53 else value
    suffix = {(1, 0): "s", (-1, 0): "/s", (0, 1): "B", (-1, 1): "B/s"}.get(quantity.dim)
    if suffix is None:
        raise ModelError(f"the expression's result is a {quantity.kind}; a model value is a number, a time, "
                         "a size, a rate or a bandwidth")
    return f"{value!r}{suffix}"


def substitute(text: str, lookup: Lookup) -> Any:
    """A model string with its parameters and expressions worked out.

    ``$name`` alone keeps the parameter's value and type; ``= ...`` and any other string
    with a ``$`` is computed; in ``name(a, b)`` (a distribution) each argument is read alone,
    so ``exp(1 / $rate)`` and ``lognormal($mean, 0.5)`` work.
    """
    stripped = text.strip()
    whole = _REF.fullmatch(stripped)
    if whole:
        return lookup(whole.group(1))
    if stripped.startswith("="):
        return render(evaluate(stripped[1:], lookup))
    if "$" not in stripped:
        return text
    call = _CALL.match(stripped)
    if call and call.group(1) not in FUNCTIONS:
        args = [_argument(arg, lookup) for arg in _split_arguments(call.group(2), text)]
        return f"{call.group(1)}({', '.join(args)})"
    return render(evaluate(stripped, lookup))


def _argument(arg: str, lookup: Lookup) -> str:
    keyword = _KEYWORD.match(arg)
    if keyword:
        return f"{keyword.group(1)}={_argument(keyword.group(2), lookup)}"
    if "$" not in arg and not arg.strip().startswith("="):
        return arg.strip()
    return str(substitute(arg, lookup))


def _split_arguments(body: str, text: str) -> list[str]:
    """Split at commas outside parentheses, so ``exp(max($a, 1ms))`` keeps its inner comma."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(body):
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth < 0:
                raise ModelError(f"unbalanced parentheses in {_shown(text)}")
        elif char == "," and depth == 0:
            parts.append(body[start:i])
            start = i + 1
    if depth != 0:
        raise ModelError(f"unbalanced parentheses in {_shown(text)}")
    parts.append(body[start:])
    return parts
