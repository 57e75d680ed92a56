# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Capacity planning: how many operator consoles can the settings pipeline serve?
#
# The example pipeline (`models/pipeline/model.yaml`) serves trims from operator consoles
# through an application-server thread pool on a two-core host, a per-device lock and a
# settings database. We ask the capacity question an operations group asks before adding
# consoles: up to how many consoles does the 95th-percentile trim stay under 25 ms, and
# which resource runs out first? Then we try the what-if "serve settings from a cache".
#
# Everything here calls the same `simstack.simulate` the command line uses.
#
# **How to open and run it.** This notebook is kept as a plain Python script in the
# percent format (cells start with `# %%`), so it reviews and diffs like code.
#
# - In JupyterLab: `make notebook` from the repository root installs JupyterLab and Jupytext
#   into `.venv` and opens this file as a notebook; run all cells with *Run > Run All Cells*.
#   Saving writes the cells back to this `.py` file (outputs are not stored).
# - Without a browser: `.venv/bin/jupytext --execute --to ipynb notebooks/capacity_planning.py`
#   runs every cell and writes `notebooks/capacity_planning.ipynb` with the outputs;
#   `.venv/bin/jupyter nbconvert --to html notebooks/capacity_planning.ipynb` makes a page of it
#   (the figure carries its own plotly.js, so it shows there too, offline).
# - As a script: `.venv/bin/python notebooks/capacity_planning.py` (the last cell's checks
#   still run; tables and the figure are not shown).
#
# The searches below take about a minute on a laptop core.

# %%
import pandas as pd
import plotly.graph_objects as go
from IPython.display import HTML

import simstack

TARGET_P95 = 0.025  # seconds
RUN = {"seed": 1, "replications": 3, "horizon": 30, "warmup": 3}  # the same seed for every what-if


def at(consoles: int, flags: dict[str, bool]) -> dict[str, float]:
    """One configuration: the trims' 95th percentile with its 95 % interval across the
    replications (sectioning), and the utilisation of the two shared resources."""
    spec = simstack.load_model("pipeline", parameters={"consoles": consoles}, flags=flags)
    result = simstack.simulate(spec, **RUN)
    trims = result.requests[(result.requests["request"] == "trim") & ~result.requests["warmup"]
                            & result.requests["ok"]]
    p95 = simstack.quantile_interval([g["latency"].to_numpy() for _, g in trims.groupby("rep")], q=0.95)
    util = result.resource_summary().set_index("resource")["utilisation"]
    return {"consoles": consoles, "p95_ms": p95.estimate * 1e3, "p95_low_ms": p95.low * 1e3,
            "p95_high_ms": p95.high * 1e3, "app_cpu_%": util["app.cpu"] * 100, "database_%": util["settings_db"] * 100}


def capacity(flags: dict[str, bool]) -> tuple[int, pd.DataFrame]:
    """The largest number of consoles whose p95 meets the target, found by galloping out from
    16 consoles and bisecting (each count simulated once, with the same random numbers), and
    every configuration it ran."""
    runs: dict[int, dict[str, float]] = {}

    def meets(consoles: int) -> bool:
        runs[consoles] = at(consoles, flags)
        return runs[consoles]["p95_ms"] <= TARGET_P95 * 1e3

    found = simstack.boundary(meets, start=16, low=1, high=64)
    return found, pd.DataFrame(sorted(runs.values(), key=lambda r: r["consoles"]))


as_built, baseline = capacity({})
baseline

# %% [markdown]
# The application host's CPU is the resource that fills up; the database stays lightly
# used. The capacity is the last count whose p95 meets the target, the next one failing it;
# each p95 comes with its interval across replications, so a count whose interval straddles
# the target is a close call, not a sharp answer.

# %%
with_cache, cached = capacity({"cache": True})
summary = pd.DataFrame({"what-if": ["as built", "settings cache"], "consoles within the p95 target":
                        [as_built, with_cache]})
summary

# %%
fig = go.Figure()
for label, table, colour in (("as built", baseline, "#1f77b4"), ("settings cache", cached, "#d62728")):
    fig.add_scatter(x=table["consoles"], y=table["p95_ms"], mode="lines+markers", name=label, line={"color": colour},
                    error_y={"type": "data", "symmetric": False, "array": table["p95_high_ms"] - table["p95_ms"],
                             "arrayminus": table["p95_ms"] - table["p95_low_ms"]})
fig.add_scatter(x=[1, 64], y=[TARGET_P95 * 1e3] * 2, mode="lines", name="target (25 ms)",
                line={"dash": "dot", "color": "grey"})
fig.update_layout(title="95th-percentile trim latency against consoles (95 % intervals across replications)",
                  xaxis_title="operator consoles", yaxis_title="95th-percentile trim latency (ms)",
                  xaxis_range=[10, 36], height=420)
HTML(fig.to_html(include_plotlyjs=True, full_html=False))  # self-contained: shows in JupyterLab and in HTML

# %%
# Checks the notebook's own conclusions, so a change that breaks them fails the tests.
assert (baseline["app_cpu_%"] > baseline["database_%"]).all()
assert with_cache > as_built, (with_cache, as_built)  # the cache buys consoles, not a grid artefact
assert baseline.set_index("consoles").loc[as_built + 1, "p95_ms"] > TARGET_P95 * 1e3
assert cached.set_index("consoles").loc[with_cache + 1, "p95_ms"] > TARGET_P95 * 1e3
