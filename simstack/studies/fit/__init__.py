"""Fitting a model's free parameters: simulated least squares, the analytic surrogate, its
corrections, hold-outs, intervals."""
