"""Cross-check: the simulator and the hand model compute the same deterministic fluid system.

Feeds the hand fit (hand_model.fit) into the simulator model (model.yaml) and compares every
phase at every thread count with hand_model.predict. Both are exact fluid calculations
(FIFO pools, equal sharing recomputed at every arrival and completion), so they must agree
to rounding. This checks the engine and the model file, not the fit.

Run from anywhere:  python analysis/engine_vs_hand.py   (prints a table; exit 1 on > 1e-6 rel)
"""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import hand_model as hm  # noqa: E402

from simstack import simulate  # noqa: E402
from simstack.loader import load_model  # noqa: E402

PHASES = ("load_iovs", "fetch_payloads", "deserialise")


def hand_parameters(p: dict) -> dict:
    """The hand fit (ms, MB/ms, ns/B) as model parameters with units."""
    return {"query_latency": f"{float(p['lat'])!r}ms", "stream_bandwidth": f"{float(p['b']) * 1e3!r}MB/s",
            "db_bandwidth": f"{float(p['B']) * 1e3!r}MB/s", "deser_per_payload": f"{float(p['c_p'])!r}ms",
            "deser_per_byte": f"{float(p['c_b'])!r}ns"}


def engine_phases(parameters: dict, threads: int) -> dict:
    """Phase spans and total (ms) of the first recorded load_global_tag request."""
    spec = load_model(HERE.parent / "model.yaml", parameters={**parameters, "threads": threads})
    result = simulate(spec, record_steps=True)
    req = result.requests
    req = req[(req["request"] == "load_global_tag") & ~req["warmup"]].iloc[0]
    steps = result.steps[(result.steps["id"] == req["id"]) & result.steps["step"].isin(PHASES)]
    out = {s: float((g["end"].max() - g["start"].min()) * 1e3) for s, g in steps.groupby("step")}
    out["total"] = float(req["latency"] * 1e3)
    return out


def main() -> int:
    mb = hm.sizes_mb()
    p = hm.fit(mb)
    params = hand_parameters(p)
    worst = 0.0
    print(f"{'n':>4} " + " ".join(f"{ph:>30}" for ph in (*PHASES, "total")))
    for n in hm.THREADS:
        eng, hand = engine_phases(params, n), hm.predict(mb, p, n)
        cells = []
        for ph in (*PHASES, "total"):
            rel = eng[ph] / float(hand[ph]) - 1
            worst = max(worst, abs(rel))
            cells.append(f"{eng[ph]:10.3f} vs {float(hand[ph]):10.3f} {rel:+.0e}")
        print(f"{n:>4} " + " ".join(f"{c:>30}" for c in cells))
    print(f"largest relative difference: {worst:.1e}")
    return 0 if worst < 1e-6 else 1


if __name__ == "__main__":
    sys.exit(main())
