"""Fuzz ``simstack import`` with mutated LQN files, both grammars (``.lqnx`` XML, ``.lqn`` text).

A received LQN file may be anything, so every mutation of a real one must end one of two
ways: ``simstack import`` writes a model folder that loads and runs a short while, or it
refuses with one located line (``simstack: error: FILE: line N: ...``, exit code 2). Anything
else is a finding: a traceback, a hang, a run that outgrows its memory, an error that names
no place, or a file written anywhere but ``out=``'s ``model.yaml`` and ``NOTES.md``.

Each case takes one seed model (below: phases and calls, an activity graph, replication,
semaphore and read-write lock tasks, forwarding and open arrivals, in one grammar or the
other) and applies one to three mutations: a number becomes huge, tiny, negative, not a
number or oddly written (``1_000``, non-ASCII digits, 5,000 digits); a name becomes one LQN
cannot hold (a space, ``..``, control characters, 300 characters) or another element's
name (a misspelled binding, a call to itself); a line is deleted, doubled or swapped, a
character inserted, the file cut short; a replication or fan-out is multiplied; the file
gets a byte-order mark or is re-encoded as UTF-16. Cases run in forked children with an
address-space and a wall-time limit (``fuzz_models.run_isolated``); they are numbered and
deterministic (``--seed``), so a finding is replayed with ``--case N --show``.

    python benchmarks/fuzz_lqn.py --cases 10000 --jobs 2     # the documented long run (20 cases a child)
    python benchmarks/fuzz_lqn.py --case 1234 --show         # one case: its text and outcome

``tests/load/lqn/test_fuzz_lqn.py`` runs a few hundred cases of the same generator.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import random
import re
import shutil
import signal
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import fuzz_models  # benchmarks/: the isolation and the verdicts are the model fuzzer's

TIMEOUT = 30.0  # seconds of wall time per case: an import still running then is a hang (a finding)
# Seconds for the short run of a model that imported. A file may honestly ask for 100,000
# clients or a million calls per request; such a run is counted "slow", not a finding: the
# importer's work is done, and the engine's own limits are fuzz_models.py's subject.
RUN_BUDGET = 3
SEEDS: dict[str, str] = {
    "pair.lqnx": """<?xml version="1.0"?>
<lqn-model name="pair" description="two tasks">
  <solver-params comment="a client and a two-phase server" conv_val="1e-05" it_limit="50">
    <pragma param="multiserver" value="conway"/>
  </solver-params>
  <processor name="terminals" scheduling="inf">
    <task name="clients" scheduling="ref" multiplicity="3" think-time="2">
      <entry name="cycle" type="PH1PH2">
        <entry-phase-activities>
          <activity name="cycle_1" phase="1" host-demand-mean="0.1" call-order="DETERMINISTIC">
            <synch-call dest="serve" calls-mean="2"/>
          </activity>
        </entry-phase-activities>
      </entry>
    </task>
  </processor>
  <processor name="cpu" scheduling="fcfs" multiplicity="2">
    <task name="server" scheduling="fcfs" multiplicity="4">
      <entry name="serve" type="PH1PH2">
        <entry-phase-activities>
          <activity name="serve_1" phase="1" host-demand-mean="0.2" host-demand-cvsq="0.25"/>
          <activity name="serve_2" phase="2" host-demand-mean="0.4" host-demand-cvsq="0"/>
        </entry-phase-activities>
      </entry>
    </task>
  </processor>
</lqn-model>
""",
    "graph.lqnx": """<?xml version="1.0"?>
<lqn-model name="graph">
  <processor name="p" scheduling="ps">
    <task name="c" scheduling="ref" think-time="1">
      <entry name="ce" type="PH1PH2"><entry-phase-activities>
        <activity name="c1" phase="1" host-demand-mean="0.1"><synch-call dest="e" calls-mean="1"/></activity>
      </entry-phase-activities></entry>
    </task>
    <task name="t" multiplicity="2">
      <entry name="e" type="NONE"/>
      <task-activities>
        <activity name="a" bound-to-entry="e" host-demand-mean="0.1"/>
        <activity name="b" host-demand-mean="0.2"/>
        <activity name="c" host-demand-mean="0.3"/>
        <activity name="d" host-demand-mean="0.1"><synch-call dest="s" calls-mean="0.5"/></activity>
        {AND_FORK}
        {AND_JOIN}
        <reply-entry name="e"><reply-activity name="d"/></reply-entry>
      </task-activities>
    </task>
    <task name="st"><entry name="s" type="PH1PH2"><entry-phase-activities>
      <activity name="s1" phase="1" host-demand-mean="0.05"/></entry-phase-activities></entry></task>
  </processor>
</lqn-model>
""".replace("{AND_FORK}", '<precedence><pre><activity name="a"/></pre><post-AND><activity name="b"/>'
                           '<activity name="c"/></post-AND></precedence>')
    .replace("{AND_JOIN}", '<precedence><pre-AND><activity name="b"/><activity name="c"/></pre-AND><post>'
                           '<activity name="d"/></post></precedence>'),
    "replicated.lqnx": """<lqn-model name="rep">
  <processor name="client" replication="4">
    <task name="client" scheduling="ref" replication="4" think-time="1">
      <fan-out dest="server" value="2"/>
      <entry name="client" type="PH1PH2"><entry-phase-activities>
        <activity name="c1" phase="1" host-demand-mean="1"><synch-call dest="server" calls-mean="1"/></activity>
      </entry-phase-activities></entry>
    </task>
  </processor>
  <processor name="server" replication="2">
    <task name="server" replication="2"><fan-in source="client" value="4"/>
      <entry name="server" type="PH1PH2"><entry-phase-activities>
        <activity name="s1" phase="1" host-demand-mean="0.2"/></entry-phase-activities></entry>
    </task>
  </processor>
</lqn-model>
""",
    "locks.lqnx": """<lqn-model name="locks">
  <processor name="p" scheduling="fcfs" multiplicity="2">
    <task name="c" scheduling="ref" multiplicity="2" think-time="1">
      <entry name="ce" type="PH1PH2"><entry-phase-activities>
        <activity name="c1" phase="1" host-demand-mean="0.1" call-order="DETERMINISTIC">
          <synch-call dest="w" calls-mean="1"/><synch-call dest="sig" calls-mean="1"/>
          <synch-call dest="rl" calls-mean="1"/><synch-call dest="ru" calls-mean="1"/>
        </activity>
      </entry-phase-activities></entry>
    </task>
    <task name="sem" scheduling="semaphore" multiplicity="1">
      <entry name="w" semaphore="wait" type="PH1PH2"><entry-phase-activities>
        <activity name="w1" phase="1" host-demand-mean="0.01"/></entry-phase-activities></entry>
      <entry name="sig" semaphore="signal" type="PH1PH2"><entry-phase-activities>
        <activity name="g1" phase="1" host-demand-mean="0.01"/></entry-phase-activities></entry>
    </task>
    <task name="rw" scheduling="rwlock" multiplicity="3">
      <entry name="rl" rwlock="r-lock" type="PH1PH2"><entry-phase-activities>
        <activity name="rl1" phase="1" host-demand-mean="0.01"/></entry-phase-activities></entry>
      <entry name="ru" rwlock="r-unlock" type="PH1PH2"><entry-phase-activities>
        <activity name="ru1" phase="1" host-demand-mean="0.01"/></entry-phase-activities></entry>
      <entry name="wl" rwlock="w-lock" type="PH1PH2"><entry-phase-activities>
        <activity name="wl1" phase="1" host-demand-mean="0.01"/></entry-phase-activities></entry>
      <entry name="wu" rwlock="w-unlock" type="PH1PH2"><entry-phase-activities>
        <activity name="wu1" phase="1" host-demand-mean="0.01"/></entry-phase-activities></entry>
    </task>
  </processor>
</lqn-model>
""",
    "pair.lqn": """
G "a client and a two-phase server" 1e-05 50 -1
P 2
  p terminals i
  p cpu f m 2
-1
T 2
  t clients r cycle -1 terminals z 2 m 3
  t server n serve -1 cpu m 4
-1
E 2
  s cycle 0.1 -1
  f cycle 1 -1
  y cycle serve 2 -1
  s serve 0.2 0.4 -1
  c serve 0.25 0 -1
-1
""",
    "graph.lqn": """
G "activity graph" 1e-5 50 -1
P 2
  p terminals i
  p cpu s 0.1
-1
T 3
  t clients r cycle -1 terminals z 1.0 m 2
  t server n serve fwd -1 cpu m 2
  t db f query -1 cpu
-1
E 4
  f cycle 1 -1
  y cycle serve 1 -1
  y cycle fwd 0.5 -1
  A serve a
  s fwd 0.1 -1
  F fwd query 0.5 -1
  s query 0.05 -1
  a query 0.3
-1
A server
  s a 0.1
  s b 0.3
  s c 0.5
  s d 0.2
  y d query 1.5
:
  a -> (0.4) b + (0.6) c;
  b + c -> 2.5 * d, e;
  e[serve]
-1
""".replace("  s d 0.2\n", "  s d 0.2\n  s e 0.01\n"),
}
NUMBERS = ["1e308", "-1", "0", "inf", "nan", "1e-320", "1_000", "\u0661", "1" * 5000, "100000", "1e12", "1e13",
           "0.5", "2", "1e6", "1e7", "99999", "-0", "+1", ".5", "1e", "0x10", "$x", "3.5"]
NAMES = ["a b", "a..b", "x" * 300, "\u00e9", "a\u202eb", "a@b", "e", "ce", "cycle", "serve", "client", "s", "",
         "-1", "1", "_", "a.work", "a_task"]
CHARACTERS = list("<>&\"'=/:;+&*()[]{}-#$ \t") + ["\n", "\x00", "\x1b", "\ufeff", "\u00e9", "-1"]
REPLICATION = ("replication", "fan-out", "fan-in", "multiplicity")


@dataclass(frozen=True)
class Case:
    index: int
    model: str  # the seed's file name (its suffix is the grammar)
    mutations: tuple[str, ...]
    data: bytes


def _tokens(text: str, pattern: str) -> list[re.Match[str]]:
    return list(re.finditer(pattern, text))


def mutate(rng: random.Random, text: str) -> tuple[str, str]:
    kind = rng.choice(("number", "number", "name", "name", "line", "char", "cut", "copies"))
    if kind == "number":
        found = _tokens(text, r"(?<![A-Za-z_])-?\d+\.?\d*(?:[eE][-+]?\d+)?")
        if found:
            m = rng.choice(found)
            new = rng.choice(NUMBERS)
            return text[:m.start()] + new + text[m.end():], f"number {m.group()!r} -> {new[:20]!r}"
    if kind == "name":
        names = sorted(set(re.findall(r'name="([^"]*)"', text)) | set(re.findall(r"\b([a-z][a-z0-9_]*)\b", text)))
        if names:
            old = rng.choice(names)
            new = rng.choice(NAMES + [old + "x", old[:-1]])
            everywhere = rng.random() < 0.5
            pattern = rf"(?<![A-Za-z0-9_.]){re.escape(old)}(?![A-Za-z0-9_.])"
            out = re.sub(pattern, new.replace("\\", "\\\\"), text, count=0 if everywhere else 1)
            return out, f"name {old!r} -> {new[:20]!r}{' everywhere' if everywhere else ''}"
    if kind == "copies":
        found = _tokens(text, r"(replication|value|multiplicity)=\"\d+\"| [rm] \d+")
        if found:
            m = rng.choice(found)
            factor = rng.choice((10, 100, 1000, 5000, 50000))
            number = re.search(r"\d{1,18}", m.group())  # a number an earlier mutation made 5,000 digits long: its head
            assert number is not None
            new = m.group().replace(number.group(), str(int(number.group()) * factor), 1)
            return text[:m.start()] + new + text[m.end():], f"{m.group()} x {factor}"
    lines = text.split("\n")
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    if kind == "line":
        choice = rng.choice(("delete", "double", "swap"))
        if choice == "delete":
            del lines[i]
        elif choice == "double":
            lines.insert(i, lines[i])
        else:
            lines[i], lines[j] = lines[j], lines[i]
        return "\n".join(lines), f"{choice} line {i}"
    if kind == "cut":
        at = rng.randrange(len(text) + 1)
        return text[:at], f"cut at {at}"
    at = rng.randrange(len(text) + 1)
    char = rng.choice(CHARACTERS)
    return text[:at] + char + text[at:], f"insert {char!r} at {at}"


def make_case(seed: int, index: int) -> Case:
    rng = random.Random(f"lqn:{seed}:{index}")
    model = rng.choice(sorted(SEEDS))
    text = SEEDS[model]
    done = []
    for _ in range(rng.choice((1, 1, 2, 3))):
        text, what = mutate(rng, text)
        done.append(what)
    data = text.encode("utf-8", errors="surrogatepass")
    encoding = rng.random()
    if encoding < 0.03:
        data, done = b"\xef\xbb\xbf" + data, [*done, "UTF-8 byte-order mark"]
    elif encoding < 0.06:
        data, done = text.encode("utf-16", errors="surrogatepass"), [*done, "UTF-16"]
    return Case(index, model, tuple(done), data)


# -- one case ----------------------------------------------------------------------------
def run_case(case: Case, folder: Path) -> dict[str, Any]:
    """Import one case into ``folder/out`` with the command's own entry point; then load the
    folder and run it briefly. Each stage's outcome ("ok", "refused" or a finding)."""
    from simstack.cli.lqn import main as interop_main
    from simstack.engine.simulate import simulate
    from simstack.load.loader import load_model

    source = folder / f"in{Path(case.model).suffix}"
    source.write_bytes(case.data)
    out = folder / "out"
    err = io.StringIO()
    result: dict[str, Any] = {}
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = interop_main(["import", str(source), f"out={out}"])
    except BaseException as exc:  # noqa: BLE001 - the point is to classify every exception
        result["import"] = fuzz_models.outcome(exc)
        return result
    message = err.getvalue()
    if code == 2:
        one_line = message.count("\n") == 1 and message.startswith("simstack: error: ")
        placed = f"{source.name}: " in message or "out=" in message
        result["import"] = "refused" if one_line and placed else {"error": f"unlocated refusal: {message[:300]!r}",
                                                                  "traceback": ""}
        stray = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p != source)
        if stray:
            result["files"] = {"error": f"written although refused: {stray[:5]}", "traceback": ""}
        return result
    result["import"] = "ok" if code == 0 and not message else {"error": f"exit {code}: {message[:300]!r}",
                                                               "traceback": ""}
    written = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p != source)
    if written != ["out", "out/NOTES.md", "out/model.yaml"]:
        result["files"] = {"error": f"files written: {written[:8]}", "traceback": ""}
    def slow(signum: int, frame: Any) -> None:
        raise _Slow

    previous = signal.signal(signal.SIGALRM, slow)
    signal.alarm(RUN_BUDGET)
    try:
        spec = load_model(out)
        horizon = float(spec.settings.get("horizon", 1.0)) / 10_000  # two of the slowest client cycles
        simulate(spec, seed=1, replications=1, horizon=horizon, record="summary", record_steps=False)
        result["run"] = "ok"
    except _Slow:
        result["run"] = "slow"
    except BaseException as exc:  # noqa: BLE001
        result["run"] = fuzz_models.outcome(exc)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    return result


class _Slow(Exception):
    """A short run of an imported model that takes more than ``RUN_BUDGET`` seconds."""


def run_batch(cases: list[Case], folder: Path) -> dict[str, Any]:
    """Several cases in one child, each in its own folder: a fork costs more than most cases."""
    out = []
    for case in cases:
        sub = folder / str(case.index)
        sub.mkdir()
        out.append(run_case(case, sub))
        shutil.rmtree(sub, ignore_errors=True)
    return {"batch": out}


def campaign(seed: int, indices: list[int], jobs: int = 1, timeout: float = TIMEOUT, on_result: Any = None,
             batch: int = 1) -> list[tuple[Case, dict[str, Any]]]:
    """Run the cases, ``jobs`` children at a time, ``batch`` cases per child; a batch whose
    child hangs or dies is run again one case per child, so each finding has its case."""
    import simstack.cli.lqn  # noqa: F401 - imported once here, not once per forked case
    import simstack.engine.simulate  # noqa: F401
    import simstack.load.loader  # noqa: F401
    import simstack.load.lqn.model_folder  # noqa: F401

    base = Path(tempfile.mkdtemp(prefix="simstack-fuzz-lqn-"))

    def isolated(case: Case) -> tuple[Case, dict[str, Any]]:
        folder = base / str(case.index)
        folder.mkdir()
        try:
            return case, fuzz_models.run_isolated(case, folder, timeout, run=run_case)  # type: ignore[arg-type]
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def group(chunk: list[int]) -> list[tuple[Case, dict[str, Any]]]:
        cases = [make_case(seed, i) for i in chunk]
        if len(cases) == 1:
            return [isolated(cases[0])]
        folder = base / f"batch{chunk[0]}"
        folder.mkdir()
        try:
            got = fuzz_models.run_isolated(cases, folder, timeout * 2, run=run_batch)  # type: ignore[arg-type]
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        if "batch" in got and len(got["batch"]) == len(cases):
            return list(zip(cases, got["batch"], strict=True))
        return [isolated(case) for case in cases]

    chunks = [indices[i:i + batch] for i in range(0, len(indices), batch)]
    results: dict[int, tuple[Case, dict[str, Any]]] = {}
    try:
        if jobs == 1:
            outcomes = map(group, chunks)
        else:
            from concurrent.futures import ThreadPoolExecutor  # threads only wait on forked children

            pool = ThreadPoolExecutor(jobs)
            outcomes = pool.map(group, chunks)
        for done in outcomes:
            for case, result in done:
                results[case.index] = (case, result)
                if on_result:
                    on_result(case, result)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return [results[i] for i in indices]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=500, help="number of cases (default 500)")
    parser.add_argument("--start", type=int, default=0, help="index of the first case")
    parser.add_argument("--case", type=int, action="append", help="run only this case (repeatable)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=1, help="cases at once (each in its own child)")
    parser.add_argument("--timeout", type=float, default=TIMEOUT, help="seconds of wall time per case")
    parser.add_argument("--batch", type=int, default=20, help="cases per forked child (default 20)")
    parser.add_argument("--show", action="store_true", help="print each case's mutations and file")
    args = parser.parse_args(argv)
    indices = args.case or list(range(args.start, args.start + args.cases))
    counts: Counter[str] = Counter()
    started = time.perf_counter()

    def report(case: Case, result: dict[str, Any]) -> None:
        kind = verdict(result)
        counts[kind] += 1
        if args.show:
            print(f"--- case {case.index} ({case.model}): {'; '.join(case.mutations)}\n"
                  f"{case.data.decode('utf-8', errors='replace')}")
        if kind == "FAIL" or args.show:
            print(f"case {case.index} {case.model} [{'; '.join(case.mutations)[:300]}]: "
                  f"{fuzz_models.brief(result)}", flush=True)
        if sum(counts.values()) % 500 == 0:
            print(f"{sum(counts.values())} cases, {time.perf_counter() - started:.0f} s: {dict(counts)}",
                  file=sys.stderr, flush=True)

    campaign(args.seed, indices, args.jobs, args.timeout, on_result=report, batch=args.batch)
    print(f"{sum(counts.values())} LQN cases (seed {args.seed}) in {time.perf_counter() - started:.0f} s: "
          f"{counts['imported']} imported and ran, {counts['slow']} imported (a run over {RUN_BUDGET} s), "
          f"{counts['refused']} refused with a located error, "
          f"{counts['FAIL']} findings")
    return 1 if counts["FAIL"] else 0


def failures(result: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in fuzz_models.failures(result).items() if not (k == "run" and v == "slow")}


def verdict(result: dict[str, Any]) -> str:
    if failures(result):
        return "FAIL"
    if result.get("import") == "refused":
        return "refused"
    return "slow" if result.get("run") == "slow" else "imported"


if __name__ == "__main__":
    sys.exit(main())
