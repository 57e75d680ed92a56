"""Reading request classes: step lists into ``spec`` step trees, and their graph checks."""
