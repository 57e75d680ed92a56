"""Where files come in and go out: safe YAML and CSV as plain data, paths confined to a
model's folder, atomic writes."""
