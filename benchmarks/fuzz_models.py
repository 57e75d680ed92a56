"""Fuzz the loader, a short run and ``simstack solve`` with mutated copies of the shipped models,
and the study reader with mutated copies of their study files (``--surface studies``).

A received model file may be anything, so every mutation of a real one must end one of two
ways: it loads, runs a short while and solves (or ``solve`` refuses it), or it is refused
with a located simstack error (``file: key.path: message``). Anything else, another
exception, a hang or a run that outgrows its memory, is a finding. Each case takes one
shipped model (``models/*/model.yaml``, the LHCb farm shrunk to 2 x 2 nodes so that a case
takes a second, not a minute) and applies one to three mutations:

- tree: delete a key or list item, duplicate one under a new name, retype a value (null,
  a list, a mapping, text, a bool), swap the values of two keys;
- numbers: a leaf becomes huge, tiny, denormal, negative, infinite or not a number, as a
  bare number, with a unit (``1e400ms``, ``1e-320/s``) or as an expression (``= 2 ** 10000``);
- key types: a key becomes one YAML reads as something else than text (``yes:``, ``~:``, ``1:``);
- text: a line deleted, doubled or swapped, a character dropped or inserted, the file cut short.

A study case (``--surface studies``) mutates a shipped model's ``checks.yaml`` the same ways
and reads it (``load_study``: its metrics, checks, calibration, prediction grid and jobs,
against the model beside it); it must be read or refused with a located error.

An experiment case (``--surface experiments``) mutates a shipped experiment file
(``experiments/*.yaml``) the same ways, reads and expands it as ``simstack -m
+experiment=FILE`` does and checks the sweep's command line, then runs its first job briefly
(``--no-run``: reading and expansion only); ``fuzz_experiments.py`` holds its stages.

Every case runs in a forked child with an address-space limit and a wall-time limit; the
parent only counts. Cases are numbered and deterministic (``--seed``), so a finding is
replayed with ``--case N --show``.

    python benchmarks/fuzz_models.py --cases 5000 --jobs 2        # the documented long run
    python benchmarks/fuzz_models.py --surface studies --cases 10000 --jobs 2
    python benchmarks/fuzz_models.py --surface experiments --cases 10000 --jobs 1
    python benchmarks/fuzz_models.py --case 1234 --show           # one case: its text and outcome

``tests/load/test_fuzz.py`` runs a few hundred cases of the same generator in the test suite.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import math
import os
import random
import resource
import shutil
import signal
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "models"
SHRINK = {"lhcb_hlt": {"subfarms": 2, "nodes_per_subfarm": 2}}  # parameter values that keep a case fast
HORIZONS = (0.01, 0.05, 0.2)  # seconds of simulated time in a case's short run
TIMEOUT = 30.0  # seconds of wall time per case: load, short run and solve
MEMORY = 2 * 1024**3  # bytes of address space a case may add to what its parent already maps

# Values a leaf may become: each is a value some field of some model must refuse or survive.
HUGE: list[Any] = [
    1e308, -1e308, 10**400, -(10**400), 5e8, 1e9, 2**63, 2**64 + 1, math.inf, -math.inf, math.nan, 1e-320,
    5e-324, -0.0, 0, -1, 0.5, 1e-9, 1e18, "1e400ms", "1e308s", "1e300h", "1e-320s", "1e-320/s", "1e-320B/s",
    "1e-320Gb/s", "1e400MB", "1e308GB/s", "5e8", "inf", "-inf", "nan", ".nan", "= 2 ** 10000", "= 1e308 * 10",
    "= 1 / 0", "= 10 ** -400", "= 1e-320 * 1", "= (((((((((((((((((((((((((((((((((((((((((((1)))))))))))))))))))))))))"
    "))))))))))))))))))", "exp(1e-320s)", "exp(1e400ms)", "lognormal(1ms, 1e308)", "gamma(1e308s, 1e308)",
    "uniform(0, 1e308)", "normal(1e308, 1e308)", "geometric(1e308)", "geometric(5e8)", "1" * 400, "0" * 400 + "1",
]
RETYPED: list[Any] = [None, True, False, "", "x", "yes", [], {}, [1, 2], {"a": 1}, [[]], {"": None}, "$nothing",
                      "exp(", "inf", 3, 2.5, "2ms", "10/s", "1GB"]
ODD_KEYS: list[Any] = [True, False, None, 1, 1.5, "", " ", "a b", "$x", "x" * 300]
CHARACTERS = list(":-{}[],&*!#|>'\"%@`?\t ") + ["\n", "\x00", "\x1b", "é", "\u202e", "\\"]
KINDS = ("tree", "tree", "numbers", "numbers", "scale", "scale", "keys", "text")
FACTORS = (0, -1, 1e-6, 1e-3, 0.5, 2, 10, 1000, 1e6, 1e9)


@dataclass(frozen=True)
class Case:
    index: int
    model: str
    mutations: tuple[str, ...]
    text: str
    horizon: float
    surface: str = "models"  # or "studies": text is then the model's checks.yaml; "experiments": an experiment file


SURFACES = ("models", "studies", "experiments")


# -- the generator ---------------------------------------------------------------------------
def shipped_studies() -> dict[str, dict[str, Any]]:
    """The shipped models' study files (``checks.yaml``) as documents."""
    return {path.parent.name: yaml.safe_load(path.read_text(encoding="utf-8"))
            for path in sorted(MODELS.glob("*/checks.yaml"))}


def shipped() -> dict[str, dict[str, Any]]:
    """The shipped models as documents, shrunk where only their size would cost time."""
    docs = {}
    for path in sorted(MODELS.glob("*/model.yaml")):
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        for name, value in SHRINK.get(path.parent.name, {}).items():
            param = doc["parameters"][name]
            if isinstance(param, dict):
                param["value"] = value
            else:
                doc["parameters"][name] = value
        docs[path.parent.name] = doc
    return docs


def _places(node: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """Every (path, value) of a document, the root excluded."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield (*path, key), value
            yield from _places(value, (*path, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield (*path, i), value
            yield from _places(value, (*path, i))


def _parent(doc: Any, path: tuple[Any, ...]) -> Any:
    for key in path[:-1]:
        doc = doc[key]
    return doc


def _numeric(value: Any) -> bool:
    """A number, or text with a number in it (``2ms``, ``exp($x)``, ``1 / $rate``)."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int | float) or (isinstance(value, str) and any(c.isdigit() for c in value))


def _scaled(value: Any, factor: float) -> Any:
    """``value`` with its (first) number multiplied: a plausible model with another magnitude."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value * factor
    text = str(value)
    start = next((i for i, c in enumerate(text) if c.isdigit()), None)
    if start is None:
        return value
    end = start
    while end < len(text) and (text[end].isdigit() or text[end] in ".eE"):
        end += 1
    try:
        number = float(text[start:end]) * factor
    except ValueError:
        return value
    return f"{text[:start]}{number:g}{text[end:]}"


def mutate_tree(rng: random.Random, doc: Any, kind: str) -> str:
    """One mutation of ``doc`` in place; returns its description."""
    places = list(_places(doc))
    if not places:
        return "nothing to mutate"
    path, value = rng.choice(places)
    parent, key = _parent(doc, path), path[-1]
    shown = ".".join(map(str, path))
    if kind in ("numbers", "scale"):
        leaves = [(p, v) for p, v in places if _numeric(v)] or places
        path, value = rng.choice(leaves)
        parent, key, shown = _parent(doc, path), path[-1], ".".join(map(str, path))
        new = rng.choice(HUGE) if kind == "numbers" else _scaled(value, rng.choice(FACTORS))
        parent[key] = new
        return f"{shown} = {new!r}"[:200]
    if kind == "keys":
        maps = [(p, v) for p, v in places if isinstance(v, dict) and v]
        if not maps:
            return "no mapping"
        path, mapping = rng.choice(maps)
        old = rng.choice(list(mapping))
        new_key = rng.choice(ODD_KEYS + [f"{old}x", str(old)[:-1] or "k"])
        if new_key in mapping:
            return "key exists"
        mapping[new_key] = mapping.pop(old)
        return f"{'.'.join(map(str, path))}: key {old!r} -> {new_key!r}"[:200]
    choice = rng.choice(("delete", "duplicate", "retype", "swap"))
    if choice == "delete":
        del parent[key]
        return f"delete {shown}"
    if choice == "duplicate":
        if isinstance(parent, list):
            parent.insert(key, copy.deepcopy(value))
        else:
            parent[f"{key}_copy" if isinstance(key, str) else f"{key!r}_copy"] = copy.deepcopy(value)
        return f"duplicate {shown}"
    if choice == "retype":
        new = rng.choice(RETYPED)
        parent[key] = copy.deepcopy(new)
        return f"{shown} = {new!r}"
    other_path, other = rng.choice(places)
    if other_path[: len(path)] == path or path[: len(other_path)] == other_path:
        return "swap with itself"
    _parent(doc, other_path)[other_path[-1]], parent[key] = copy.deepcopy(value), copy.deepcopy(other)
    return f"swap {shown} <-> {'.'.join(map(str, other_path))}"


def mutate_text(rng: random.Random, text: str) -> tuple[str, str]:
    lines = text.split("\n")
    choice = rng.choice(("delete line", "double line", "swap lines", "drop char", "insert char", "cut"))
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    if choice == "delete line":
        del lines[i]
    elif choice == "double line":
        lines.insert(i, lines[i])
    elif choice == "swap lines":
        lines[i], lines[j] = lines[j], lines[i]
    elif choice == "cut":
        return text[: rng.randrange(len(text) + 1)], f"cut at {i}"
    else:
        at = rng.randrange(len(text) + 1)
        if choice == "drop char":
            return text[:at] + text[at + 1:], f"drop char {at}"
        char = rng.choice(CHARACTERS)
        return text[:at] + char + text[at:], f"insert {char!r} at {at}"
    return "\n".join(lines), f"{choice} {i}"


def _dump(doc: Any) -> str:
    try:
        return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=200)
    except (yaml.YAMLError, ValueError, OverflowError):  # a value YAML cannot write (a huge float key, say)
        return yaml.safe_dump(json.loads(json.dumps(doc, default=str)), sort_keys=False)


def make_case(seed: int, index: int, docs: dict[str, dict[str, Any]], surface: str = "models") -> Case:
    """Case ``index`` of the run seeded ``seed``: the same inputs give the same case."""
    rng = random.Random(f"{seed}:{index}")
    model = rng.choice(sorted(docs))
    doc = copy.deepcopy(docs[model])
    done: list[str] = []
    text: str | None = None
    for _ in range(rng.choice((1, 1, 2, 3))):
        kind = rng.choice(KINDS)
        if kind == "text":
            text, what = mutate_text(rng, text if text is not None else _dump(doc))
            done.append(f"text: {what}")
        elif text is None:
            done.append(f"{kind}: {mutate_tree(rng, doc, kind)}")
    return Case(index, model, tuple(done), text if text is not None else _dump(doc), rng.choice(HORIZONS), surface)


# -- one case ----------------------------------------------------------------------------
def _located(exc: BaseException) -> bool:
    from simstack.errors import ModelError, SimstackError

    if isinstance(exc, ModelError):
        return bool(exc.file or exc.path) and bool(exc.reason)
    return isinstance(exc, SimstackError) and bool(str(exc))


def run_study_case(case: Case, folder: Path) -> dict[str, Any]:
    """Read one mutated study file beside its model, in this process."""
    from simstack.studies.schema.study import load_study

    (folder / "checks.yaml").write_text(case.text, encoding="utf-8")
    try:
        load_study(folder)
    except BaseException as exc:  # noqa: BLE001 - the point is to classify every exception
        return {"load": outcome(exc)}
    return {"load": "ok"}


def run_case(case: Case, folder: Path) -> dict[str, Any]:
    """Load, run briefly and solve one case in this process; each stage's outcome."""
    if case.surface == "studies":
        return run_study_case(case, folder)
    if case.surface == "experiments":  # case.model names the experiment; a horizon of 0: no run
        from fuzz_experiments import run_experiment_case

        return run_experiment_case(case.model, case.text, case.horizon, folder, outcome)
    from simstack.engine.simulate import simulate
    from simstack.load.loader import load_model
    from simstack.studies.analysis.solve import solve_model

    path = folder / "model.yaml"
    path.write_text(case.text, encoding="utf-8")
    out: dict[str, Any] = {}
    try:
        spec = load_model(path)
    except BaseException as exc:  # noqa: BLE001 - the point is to classify every exception
        out["load"] = outcome(exc)
        return out
    out["load"] = "ok"
    for stage, call in (("run", lambda: simulate(spec, seed=1, replications=1, horizon=case.horizon,
                                                  record="summary", record_steps=False)),
                        ("solve", lambda: solve_model(spec))):
        try:
            call()
            out[stage] = "ok"
        except BaseException as exc:  # noqa: BLE001
            out[stage] = outcome(exc)
    return out


def outcome(exc: BaseException) -> str | dict[str, str]:
    """``refused`` for a located simstack error, else the exception and its traceback (a finding)."""
    if _located(exc):
        return "refused"
    return {"error": f"{type(exc).__name__}: {str(exc)[:500]}", "traceback": traceback.format_exc()[-3000:]}


def _mapped() -> int:
    """Bytes of address space this process maps now (a test runner that has started Ray or
    BLAS threads maps gigabytes it never touches; an absolute limit would fail there first)."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 0
    return pages * os.sysconf("SC_PAGE_SIZE")


def run_isolated(case: Case, folder: Path, timeout: float = TIMEOUT, memory: int = MEMORY,
                 run: Callable[[Any, Path], dict[str, Any]] | None = None) -> dict[str, Any]:
    """``run_case`` (or ``run``: another fuzzer's, ``fuzz_lqn``'s) in a forked child with an
    address-space and a wall-time limit."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(read)
        code = 0
        try:
            limit = _mapped() + memory  # a budget on top of the parent's own mappings
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            result = (run or run_case)(case, folder)
        except BaseException as exc:  # noqa: BLE001 - MemoryError while reporting, say
            result = {"child": outcome(exc)}
        try:
            with os.fdopen(write, "w") as pipe:
                json.dump(result, pipe)
        except BaseException:  # noqa: BLE001
            code = 1
        os._exit(code)
    os.close(write)
    started = time.monotonic()
    chunks: list[bytes] = []
    os.set_blocking(read, False)
    while True:
        try:
            chunk = os.read(read, 65536)
            if chunk:
                chunks.append(chunk)
            else:
                break
        except BlockingIOError:
            if time.monotonic() - started > timeout:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                os.close(read)
                return {"hang": f"still running after {timeout:g} s"}
            time.sleep(0.005)
    os.close(read)
    _, status = os.waitpid(pid, 0)
    try:
        return json.loads(b"".join(chunks)) if chunks else {"child": f"died without a result (status {status})"}
    except json.JSONDecodeError:
        return {"child": f"unreadable result (status {status})"}


def failures(result: dict[str, Any]) -> dict[str, Any]:
    """The stages that neither went through nor ended in a located simstack error."""
    return {stage: value for stage, value in result.items() if value not in ("ok", "refused")}


def brief(result: dict[str, Any]) -> str:
    """Each failing stage's error and the line of simstack that raised it."""
    parts = []
    for stage, value in (failures(result) or result).items():
        if isinstance(value, dict):
            lines = value.get("traceback", "").splitlines()
            frames = [line.strip() for line in lines if line.strip().startswith("File")]
            parts.append(f"{stage}: {value['error'][:300]} at {frames[-1] if frames else '?'}")
        else:
            parts.append(f"{stage}: {value}")
    return "; ".join(parts)


def verdict(result: dict[str, Any]) -> str:
    if failures(result):
        return "FAIL"
    return "refused" if result.get("load") == "refused" else "loaded"


# -- a campaign ------------------------------------------------------------------------------
class Slots:
    """One private copy of every model folder per parallel child (a case writes its model.yaml)."""

    def __init__(self, jobs: int):
        self.base = Path(tempfile.mkdtemp(prefix="simstack-fuzz-"))
        self.free = []
        for slot in range(jobs):
            for folder in MODELS.iterdir():
                if (folder / "model.yaml").is_file():
                    shutil.copytree(folder, self.base / str(slot) / folder.name)
            self.free.append(slot)

    def folder(self, slot: int, model: str) -> Path:
        return self.base / str(slot) / model

    def close(self) -> None:
        shutil.rmtree(self.base, ignore_errors=True)


def campaign(seed: int, indices: list[int], jobs: int = 1, timeout: float = TIMEOUT,
             memory: int = MEMORY, on_result: Any = None, surface: str = "models",
             run: bool = True) -> list[tuple[Case, dict[str, Any]]]:
    """Run the cases of ``surface`` (models, studies or experiments), ``jobs`` at a time; (case,
    result) in index order. ``run=False``: an experiment case is read and expanded, not run."""
    import simstack.engine.simulate  # noqa: F401 - imported once here, not once per forked case
    import simstack.load.loader  # noqa: F401
    import simstack.studies.analysis.solve  # noqa: F401
    import simstack.studies.schema.study  # noqa: F401

    if surface == "experiments":
        import hydra.core.override_parser.overrides_parser  # noqa: F401
        from fuzz_experiments import shipped_experiments

        import simstack.cli.experiments  # noqa: F401
        import simstack.cli.overrides  # noqa: F401
        import simstack.load.precedence  # noqa: F401

        docs = shipped_experiments()
    else:
        docs = shipped() if surface == "models" else shipped_studies()

    def make(index: int) -> Case:
        case = make_case(seed, index, docs, surface)
        return case if run or surface != "experiments" else dataclasses.replace(case, horizon=0.0)
    slots = Slots(jobs)
    results: dict[int, tuple[Case, dict[str, Any]]] = {}
    try:
        if jobs == 1:
            for index in indices:
                case = make(index)
                results[index] = (case, run_isolated(case, slots.folder(0, case.model), timeout, memory))
                if on_result:
                    on_result(*results[index])
        else:
            from concurrent.futures import ThreadPoolExecutor  # threads only wait on forked children

            def one(index: int) -> tuple[Case, dict[str, Any]]:
                slot = slots.free.pop()
                try:
                    case = make(index)
                    return case, run_isolated(case, slots.folder(slot, case.model), timeout, memory)
                finally:
                    slots.free.append(slot)

            with ThreadPoolExecutor(jobs) as pool:
                for case, result in pool.map(one, indices):
                    results[case.index] = (case, result)
                    if on_result:
                        on_result(case, result)
    finally:
        slots.close()
    return [results[i] for i in indices]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=500, help="number of cases (default 500)")
    parser.add_argument("--start", type=int, default=0, help="index of the first case")
    parser.add_argument("--case", type=int, action="append", help="run only this case (repeatable)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--surface", choices=SURFACES, default="models", help="what a case mutates (default models)")
    parser.add_argument("--jobs", type=int, default=1, help="cases at once (each in its own child)")
    parser.add_argument("--timeout", type=float, default=TIMEOUT, help="seconds of wall time per case")
    parser.add_argument("--no-run", action="store_true", help="experiments: read and expand each case, no run")
    parser.add_argument("--show", action="store_true", help="print each case's mutations and model text")
    parser.add_argument("--out", type=Path, help="write every finding (JSON lines) to this file")
    args = parser.parse_args(argv)
    indices = args.case or list(range(args.start, args.start + args.cases))
    counts: Counter[str] = Counter()
    stages: Counter[str] = Counter()
    found: list[dict[str, Any]] = []
    started = time.perf_counter()

    def report(case: Case, result: dict[str, Any]) -> None:
        kind = verdict(result)
        counts[kind] += 1
        stages.update(f"{stage}:{value if isinstance(value, str) else 'FAIL'}" for stage, value in result.items())
        if args.show:
            print(f"--- case {case.index} ({case.model}): {'; '.join(case.mutations)}\n{case.text}")
        if kind == "FAIL" or args.show:
            print(f"case {case.index} {case.model} [{'; '.join(case.mutations)}]: {brief(result)}", flush=True)
        if kind == "FAIL":
            found.append({"case": case.index, "model": case.model, "mutations": case.mutations,
                          "result": result})
        done = sum(counts.values())
        if done % 250 == 0:
            print(f"{done} cases, {time.perf_counter() - started:.0f} s: {dict(counts)}", file=sys.stderr, flush=True)

    campaign(args.seed, indices, args.jobs, args.timeout, on_result=report, surface=args.surface, run=not args.no_run)
    wall = time.perf_counter() - started
    print(f"{sum(counts.values())} {args.surface} cases (seed {args.seed}) in {wall:.0f} s: {counts['loaded']} loaded, "
          f"{counts['refused']} refused with a located error, {counts['FAIL']} findings")
    print("stages: " + ", ".join(f"{k} {v}" for k, v in sorted(stages.items())))
    if args.out:
        args.out.write_text("".join(json.dumps(f) + "\n" for f in found))
    return 1 if counts["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
