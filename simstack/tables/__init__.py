"""Output analysis: how precise a simulated number is, and how long to run for it.

A simulation's result is a random variable; these modules turn a run's raw values into
intervals a reader can trust (the mean across replications or from batch means of one long
run, percentiles, the latency distribution with a band), decide how many replications or how
long a run a stated precision needs, and decide whether a metric is below a bound.
"""
