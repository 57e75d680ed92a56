"""From a model file to a validated ``ModelSpec``: parameters, sections, steps, the graph."""
