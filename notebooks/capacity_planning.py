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
#   runs every cell and writes `notebooks/capacity_planning.ipynb` with the outputs.
# - As a script: `.venv/bin/python notebooks/capacity_planning.py` (the last cell's checks
#   still run; tables and the figure are not shown).
#
# The two sweeps below take about half a minute on a laptop core.

# %%
import pandas as pd
import plotly.express as px

import simstack

TARGET_P95 = 0.025  # seconds
CONSOLES = [4, 8, 12, 16, 24, 32]


def sweep(flags: dict[str, bool]) -> pd.DataFrame:
    rows = []
    for consoles in CONSOLES:
        spec = simstack.load_model("pipeline", parameters={"consoles": consoles}, flags=flags)
        result = simstack.simulate(spec, seed=1, replications=2, horizon=20, warmup=2, record_steps=False)
        trims = result.summary().set_index("request").loc["trim"]
        util = result.resource_summary().set_index("resource")["utilisation"]
        rows.append({"consoles": consoles, "p95_ms": trims["p95"] * 1e3, "mean_ms": trims["mean"] * 1e3,
                     "app_cpu": util["app.cpu"], "database": util["settings_db"],
                     "throughput_per_s": trims["count"] / result.replications / 18})
    return pd.DataFrame(rows)


baseline = sweep({})
baseline

# %% [markdown]
# The application host's CPU is the resource that fills up; the database stays lightly
# used. The largest console count meeting the target:

# %%
def capacity(table: pd.DataFrame) -> int:
    ok = table[table["p95_ms"] <= TARGET_P95 * 1e3]
    return int(ok["consoles"].max()) if len(ok) else 0


cached = sweep({"cache": True})
summary = pd.DataFrame({"what-if": ["as built", "settings cache"],
                        "consoles within p95 target": [capacity(baseline), capacity(cached)]})
summary

# %%
both = pd.concat([baseline.assign(whatif="as built"), cached.assign(whatif="settings cache")])
fig = px.line(both, x="consoles", y="p95_ms", color="whatif", markers=True,
              title="95th-percentile trim latency versus consoles")
fig.add_hline(y=TARGET_P95 * 1e3, line_dash="dot")
fig

# %%
# Checks the notebook's own conclusions, so a change that breaks them fails the tests.
assert baseline["p95_ms"].is_monotonic_increasing
assert (baseline["app_cpu"] > baseline["database"]).all()
assert capacity(cached) >= capacity(baseline)
