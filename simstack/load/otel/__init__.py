"""Drafting a model from OpenTelemetry traces (``simstack import traces.jsonl out=DIR``)."""
