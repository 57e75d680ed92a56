"""The study file (``checks.yaml``) as validated data: each section's spec and reader.

Imports nothing from the studies or the report builders."""
