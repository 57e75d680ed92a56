"""One run: a validated model bound to SimPy, request classes compiled into runners, ``simulate``."""
