"""Generate data/payload_sizes.csv: the 312 payload (blob) sizes of the CMS conditions model.

Facts the list must meet (seed 003, CHEP 2015 slides): 312 payloads (one per tag of START70_V1),
296.5 MB in total (MB = 10**6 B), sizes from about 100 B to O(100) MB.

Shape: lognormal body with a Pareto upper tail (top 10 % of the probability), spliced
continuously at the body's 90 % quantile. The sizes are the 312 mid-quantiles Q((i + 0.5) / 312)
of that distribution (a "typical" sample: no sampling luck in the extreme tail). Three
constraints fix the three shape numbers:
  * smallest size Q(0.5/312)      = 100 B        -> body median
  * largest size  Q(311.5/312)    = 80 MB        -> (with the total) body sigma and tail index
  * sum of the 312 sizes          = 296 500 000 B
The largest size (80 MB) is the one choice informed by a measurement: deserialising 296.5 MB
takes 4233 ms on one thread and 1190 ms on 8, and the 8-thread time is the largest payload's
own deserialisation plus its start delay; with this order that needs a largest payload of at
least ~75 MB (NOTES.md, "Deserialise"). 80 MB is a round value in the slides' "O(100) MB".
Payload order (= the order in which the thread pools take payloads) is a seeded random
permutation: the tags of a global tag are listed by record name, which is unrelated to size.

Run from anywhere:  python make_payload_sizes.py [--check]
Writes payload_sizes.csv (columns payload, bytes) and payload_sizes_split10MB.csv (what-if:
every payload above 10 MB cut into pieces of at most 10 MB, kept in place in the order), and
payload_sizes_max30MB.csv, payload_sizes_max100MB.csv (the same construction with another
largest size: alternative readings of the synthetic tail), payload_sizes_order1.csv and
payload_sizes_order2.csv (the same list in other orders); see NOTES.md, "Assumptions".
"""
import sys
from pathlib import Path

import numpy as np
from scipy import optimize, stats

N, TOTAL, MIN_B, MAX_B = 312, 296_500_000, 100.0, 80_000_000.0
TAIL_FRACTION = 0.10
SEED = 20150413  # CHEP 2015 opening day; fixed once, not tuned
SPLIT_B = 10_000_000
ALTERNATIVE_MAX_B = (30_000_000, 100_000_000)  # other largest payloads, still "O(100) MB" or below
ALTERNATIVE_ORDERS = (1, 2)  # other payload orders: the same list permuted with these seeds (not tuned)
HERE = Path(__file__).resolve().parent

p = (np.arange(N) + 0.5) / N


def quantiles(sigma: float, alpha: float, max_b: float = MAX_B) -> np.ndarray:
    median = MIN_B * np.exp(-sigma * stats.norm.ppf(p[0]))
    p_splice = 1.0 - TAIL_FRACTION
    x_splice = median * np.exp(sigma * stats.norm.ppf(p_splice))
    body = median * np.exp(sigma * stats.norm.ppf(np.minimum(p, p_splice)))
    tail = x_splice * ((1.0 - p) / TAIL_FRACTION) ** (-1.0 / alpha)
    return np.where(p <= p_splice, body, tail)


def sizes(max_b: float = MAX_B) -> tuple[np.ndarray, float, float]:
    def gap(x):
        q = quantiles(*x, max_b)
        return [np.log(q.sum() / TOTAL), np.log(q[-1] / max_b)]

    sigma, alpha = optimize.fsolve(gap, [2.2, 1.0], xtol=1e-13)
    b = np.rint(quantiles(sigma, alpha, max_b)).astype(np.int64)
    b[-2] += TOTAL - b.sum()  # integer rounding residual (a few bytes) onto the 2nd largest
    assert b.sum() == TOTAL and b[0] == MIN_B and b[-1] == max_b
    order = np.random.default_rng(SEED).permutation(N)
    return b[order], sigma, alpha


def split(b: np.ndarray) -> np.ndarray:
    out = []
    for x in b:
        k = -(-int(x) // SPLIT_B)
        out += [int(x) // k + (1 if j < int(x) % k else 0) for j in range(k)]
    return np.array(out, dtype=np.int64)


def csv_text(b: np.ndarray) -> str:
    return "payload,bytes\n" + "".join(f"{i},{x}\n" for i, x in enumerate(b))


if __name__ == "__main__":
    b, sigma, alpha = sizes()
    files = {"payload_sizes.csv": csv_text(b), "payload_sizes_split10MB.csv": csv_text(split(b))}
    for alt in ALTERNATIVE_MAX_B:  # the interval's payload-size alternatives: same shape, order and total
        files[f"payload_sizes_max{alt // 1_000_000}MB.csv"] = csv_text(sizes(alt)[0])
    for seed in ALTERNATIVE_ORDERS:
        files[f"payload_sizes_order{seed}.csv"] = csv_text(b[np.random.default_rng(seed).permutation(N)])
    for name, text in files.items():
        path = HERE / name
        if "--check" in sys.argv:
            ok = path.read_text() == text
            print(f"{name}: {'identical' if ok else 'DIFFERS'}")
            if not ok:
                sys.exit(1)
        else:
            path.write_text(text)
    q = np.percentile(b, [50, 90])
    print(f"sigma={sigma:.4f} alpha={alpha:.4f} n={len(b)} total={b.sum()} min={b.min()} "
          f"median={q[0]:.0f} p90={q[1]:.0f} max={b.max()} largest at payload {int(np.argmax(b))}")
