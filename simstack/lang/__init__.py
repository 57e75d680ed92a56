"""The model language as inert data: the spec, expressions, distributions. No SimPy here."""
