"""Analytic performance models: closed forms, Markov chains, MVA and bounds, and an
approximate MVA of a whole model file.

The closed forms validate the simulator (tests compare its output with them); the model
solver (``simstack.studies.analysis.solve.solve_model``) gives a model's throughput and response times in milliseconds,
for calibration surrogates, cross-checks and a first answer before any simulation.
References: Lazowska, Zahorjan, Graham & Sevcik, *Quantitative System Performance* (1984);
Kleinrock, *Queueing Systems* (1975-76); Harchol-Balter, *Performance Modeling and Design
of Computer Systems* (2013).
"""

from simstack.studies.analysis.bounds import asymptotic_bounds, balanced_job_bounds
from simstack.studies.analysis.ctmc import birth_death, explore, generator_from_rates, stationary, threads_lock_chain
from simstack.studies.analysis.mva import mva_closed, mva_load_dependent, mva_multiclass, mva_schweitzer
from simstack.studies.analysis.network import build_network
from simstack.studies.analysis.nodes import Network
from simstack.studies.analysis.queues import (
    erlang_b,
    erlang_c,
    jackson_tandem,
    mg1_pk,
    mm1,
    mm1_ps,
    mm1_ps_sojourn,
    mmc,
    priority_nonpreemptive,
    priority_preemptive_mm1,
)
from simstack.studies.analysis.solver import Solution, solve

__all__ = ["Network", "Solution", "asymptotic_bounds", "balanced_job_bounds", "birth_death",
           "build_network", "erlang_b", "erlang_c", "explore", "generator_from_rates", "jackson_tandem", "mg1_pk",
           "mm1", "mm1_ps", "mm1_ps_sojourn", "mmc", "mva_closed", "mva_load_dependent", "mva_multiclass",
           "mva_schweitzer", "priority_nonpreemptive", "priority_preemptive_mm1", "solve", "stationary",
           "threads_lock_chain"]
