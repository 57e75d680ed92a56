"""An experiment's answer, as a number with its interval, read off a gathered sweep table.

A named experiment states a question ("how many consoles before a trim's p95 passes 50 ms?",
"how much faster is a bypass trim?"). Its ``answer:`` says how the sweep answers it, and
this module computes that number from the gathered table (``simstack.cli.gather``, columns
with their units: ``p95_ms``, ``failed_%``) and the jobs' per-replication values:

- a **capacity**: the largest value of an axis whose metric stays at or below a threshold at
  that value and every smaller one. With an interval per point, the capacity is bracketed:
  the largest value whose interval lies wholly under the threshold (surely served) and the
  largest whose interval still reaches under it (possibly served). When both agree the
  decision is resolved at the interval's level.
- a **ratio** between two levels of an axis (``numerator / denominator``), with the paired
  interval of the ratio: the jobs run the same replications' random numbers (common random
  numbers), so replication i of one is paired with replication i of the other.
- a **crossing**: along an axis, where the metric of one line (a level of another axis)
  passes that of a second, with the paired interval of their difference on either side.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from simstack.tables.answer_spec import METRICS, Answer, Capacity, Crossing, Ratio
from simstack.tables.console import number
from simstack.tables.intervals import Interval, difference_interval, ratio_interval

LEVEL = 0.95
NO_PAIRS = "one replication, or a metric without a value per replication"


def suffix(unit: str) -> str:
    """A unit as a column header's suffix: ``ms`` -> ``_ms``, ``/s`` -> ``_per_s``, ``%`` -> ``_%``."""
    return "_per_s" if unit == "/s" else f"_{unit}"


def _ordered(values: pd.Series) -> list[str]:
    """An axis's levels as text: numbers in numeric order, anything else in the order given."""
    levels = list(dict.fromkeys(values.astype(str)))
    numbers = pd.to_numeric(pd.Series(levels), errors="coerce")
    return [levels[i] for i in np.argsort(numbers.to_numpy(), kind="stable")] if numbers.notna().all() else levels


def _groups(table: pd.DataFrame, varying: list[str], used: tuple[str, ...]) -> list[tuple[str, pd.DataFrame]]:
    """The table split by every varying axis the answer does not use, each with its label."""
    by = [c for c in varying if c not in used]
    if not by:
        return [("", table)]
    return [(", ".join(f"{c}={v}" for c, v in zip(by, key if isinstance(key, tuple) else (key,), strict=True)), g)
            for key, g in table.groupby([table[c].astype(str) for c in by], sort=False)]


def per_replication(table: pd.DataFrame) -> pd.DataFrame:
    """The jobs' values per replication that ``simstack.cli.gather`` keeps with the table
    (``attrs["per_rep"]``: job, request, rep, mean_ms, ...); empty when it has none."""
    return pd.DataFrame(table.attrs.get("per_rep") or [])


def _paired(per_rep: pd.DataFrame, job_a: str, job_b: str, request: str, metric: str) -> np.ndarray:
    """(a_i, b_i) per replication of two jobs: the pairs common random numbers make."""
    column = METRICS[metric][0]
    if per_rep.empty or column not in per_rep.columns:
        return np.empty((0, 2))
    mine = per_rep[per_rep["request"] == request]
    a = mine[mine["job"].astype(str) == job_a].set_index("rep")[column]
    b = mine[mine["job"].astype(str) == job_b].set_index("rep")[column]
    both = pd.concat([a, b], axis=1, join="inner").dropna()
    return both.to_numpy(dtype=float)


def same(values: pd.Series, level: str) -> pd.Series:
    """Rows at ``level``; ``true`` and ``True`` (a flag as typed and as Hydra echoes it) are one."""
    return values.astype(str).str.lower() == str(level).lower()


def _row(rows: pd.DataFrame, axis: str, level: str) -> pd.Series | None:
    at = rows[same(rows[axis], level)]
    return at.iloc[0] if len(at) else None


def capacity(answer: Capacity, table: pd.DataFrame, varying: list[str]) -> pd.DataFrame:
    """One row per line (the other swept axes): capacity, surely and possibly served."""
    column, low, high, unit = METRICS[answer.metric]
    ok = table[(table["status"] == "ok") & (table["request"] == answer.request)]
    out = []
    for label, rows in _groups(ok, varying, (answer.axis,)):
        levels = _ordered(rows[answer.axis])
        served = surely = possibly = None
        done = [False, False, False]
        for level in levels:
            row = _row(rows, answer.axis, level)
            value = float(row[column]) if row is not None else math.nan
            lo = float(row[low]) if row is not None and low and pd.notna(row[low]) else value
            hi = float(row[high]) if row is not None and high and pd.notna(row[high]) else value
            for i, x in enumerate((value, hi, lo)):  # NaN (no successful request) is not served
                if not done[i] and x <= answer.at_most:
                    if i == 0:
                        served = level
                    elif i == 1:
                        surely = level
                    else:
                        possibly = level
                else:
                    done[i] = True
        intervals = low is not None and not ok[[low, high]].isna().all().all()
        out.append({"line": label, "capacity": served, "surely": surely if intervals else None,
                    "possibly": possibly if intervals else None, "first": levels[0] if levels else None,
                    "last": levels[-1] if levels else None, f"threshold{suffix(unit)}": answer.at_most})
    return pd.DataFrame(out)


def ratio(answer: Ratio, table: pd.DataFrame, varying: list[str], per_rep: pd.DataFrame) -> pd.DataFrame:
    """One row per line: the ratio, its paired interval and the number of pairs."""
    column, _, _, unit = METRICS[answer.metric]
    ok = table[(table["status"] == "ok") & (table["request"] == answer.request)]
    out = []
    for label, rows in _groups(ok, varying, (answer.axis,)):
        a, b = _row(rows, answer.axis, answer.numerator), _row(rows, answer.axis, answer.denominator)
        if a is None or b is None:
            continue
        pairs = _paired(per_rep, str(a["job"]), str(b["job"]), answer.request, answer.metric)
        iv = ratio_interval(pairs, LEVEL) if len(pairs) >= 2 else None
        estimate = iv.estimate if iv is not None else float(a[column]) / float(b[column])
        out.append({"line": label, f"numerator{suffix(unit)}": float(a[column]),
                    f"denominator{suffix(unit)}": float(b[column]), "ratio": estimate,
                    "ratio_low": iv.low if iv else math.nan, "ratio_high": iv.high if iv else math.nan,
                    "pairs": len(pairs)})
    return pd.DataFrame(out)


def crossing(answer: Crossing, table: pd.DataFrame, varying: list[str], per_rep: pd.DataFrame) -> pd.DataFrame:
    """One row per line: the first axis value where a - b changes sign, with the paired
    difference just before and at it, and whether both exclude zero."""
    column = METRICS[answer.metric][0]
    other, level_a, level_b = answer.lines
    ok = table[(table["status"] == "ok") & (table["request"] == answer.request)]
    out = []
    for label, rows in _groups(ok, varying, (answer.axis, other)):
        diffs: list[tuple[str, Interval | float]] = []
        for level in _ordered(rows[answer.axis]):
            at = rows[same(rows[answer.axis], level)]
            a, b = _row(at, other, level_a), _row(at, other, level_b)
            if a is None or b is None:
                continue
            pairs = _paired(per_rep, str(a["job"]), str(b["job"]), answer.request, answer.metric)
            diffs.append((level, difference_interval(pairs, LEVEL) if len(pairs) >= 2
                          else float(a[column]) - float(b[column])))
        values = [d.estimate if isinstance(d, Interval) else d for _, d in diffs]
        start = next((np.sign(v) for v in values if v), 0.0)
        at_ = next((i for i, v in enumerate(values) if np.sign(v) not in (0.0, start)), None)
        row: dict[str, object] = {"line": label, "crossing": diffs[at_][0] if at_ is not None else None,
                                  "before": diffs[at_ - 1][0] if at_ else None,
                                  "a_below_first": bool(start < 0), "confident": None}
        if at_ is not None:
            pair = [diffs[at_ - 1][1], diffs[at_][1]]
            if all(isinstance(d, Interval) for d in pair):
                row["confident"] = all(d.low > 0 or d.high < 0 for d in pair if isinstance(d, Interval))
        out.append(row)
    return pd.DataFrame(out)


def answer_table(answer: Answer, table: pd.DataFrame, varying: list[str]) -> pd.DataFrame:
    """The answer's numbers, one row per line of the sweep (the axes the answer does not use)."""
    per_rep = per_replication(table)
    if isinstance(answer, Capacity):
        return capacity(answer, table, varying)
    if isinstance(answer, Ratio):
        return ratio(answer, table, varying, per_rep)
    return crossing(answer, table, varying, per_rep)


def _level(value: object) -> str:
    return "none" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)


def _capacity_text(answer: Capacity, row: pd.Series) -> str:
    if row["capacity"] is None:
        found = f"none: over at {answer.axis}={row['first']}, the smallest swept"
    elif row["capacity"] == row["last"]:
        found = f"at least {row['last']}, the largest swept"
    else:
        found = str(row["capacity"])
    if row["surely"] is None and row["possibly"] is None:
        sure = "no interval (one replication, or a metric without one)"
    elif row["surely"] == row["possibly"] == row["capacity"]:
        sure = f"resolved at {LEVEL:.0%}"
    else:
        sure = f"at {LEVEL:.0%}: surely {_level(row['surely'])}, possibly {_level(row['possibly'])}"
    return f"{found} ({sure})"


def answer_lines(answer: Answer, result: pd.DataFrame) -> list[str]:
    """The answer in words, one line per line of the sweep: the number, then its interval or
    how sure the decision is (``resolved at 95 %`` or the two levels it lies between)."""
    if isinstance(answer, Capacity):
        head = (f"largest {answer.axis} with {answer.request} {answer.metric} <= "
                f"{number(answer.at_most)} {METRICS[answer.metric][3]}")
        texts = [_capacity_text(answer, row) for _, row in result.iterrows()]
    elif isinstance(answer, Ratio):
        head = (f"{answer.request} {answer.metric} at {answer.axis}={answer.numerator} over "
                f"{answer.axis}={answer.denominator}")
        texts = [f"{number(row['ratio'])} (" + (
            f"{LEVEL:.0%} paired interval {number(row['ratio_low'])} to {number(row['ratio_high'])}, "
            f"{row['pairs']} pairs)" if not math.isnan(row["ratio_low"]) else f"no paired interval: {NO_PAIRS})")
            for _, row in result.iterrows()]
    else:
        other, a, b = answer.lines
        head = f"{answer.request} {answer.metric} at {other}={a} against {other}={b} along {answer.axis}"
        texts = []
        for _, row in result.iterrows():
            if row["crossing"] is None:
                side = "below" if row["a_below_first"] else "above"
                texts.append(f"no crossing in the swept range ({other}={a} stays {side})")
                continue
            sure = (f"no paired interval: {NO_PAIRS}" if row["confident"] is None else
                    f"both paired differences {'exclude' if row['confident'] else 'do not both exclude'} 0 "
                    f"at {LEVEL:.0%}")
            texts.append(f"crosses between {row['before']} and {row['crossing']} ({sure})")
    if not texts:
        return [f"{head}: not measured (no job of the sweep has both levels)"]
    if len(texts) == 1 and not result.iloc[0]["line"]:
        return [f"{head}: {texts[0]}"]
    return [f"{head}:"] + [f"  {row['line']}: {t}" for (_, row), t in zip(result.iterrows(), texts, strict=True)]
