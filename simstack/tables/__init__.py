"""Records of a run and the tables and statistics made from them.

A run leaves flat records (``records``, or streaming statistics with ``record: summary``),
turned into tidy tables (``results``) and printed in one voice (``console``). Output
analysis says how precise each number is and how long to run for it: intervals of the mean
across replications or from batch means of one long run, percentiles and the latency
distribution with a band (``intervals``, ``batches``, ``ecdf``), stopping at a stated
precision (``stopping``) and deciding whether a metric is below a bound (``decisions``).
"""
