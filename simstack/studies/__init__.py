"""Studies of a model: metrics, checks, calibration, predictions, capacity."""
