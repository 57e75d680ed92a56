"""Evaluating a study's metrics by running the model: the run cache, capacity searches,
baseline rows and the regression check. Imports only the schema, the analytic solver and
the folders below ``studies/``."""
