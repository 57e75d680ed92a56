"""SimPy-level primitives: wake-ups, meters, waiting lines, slots, CPU disciplines, processor sharing, memory.

The compiled set (mypyc) lives here and in ``simstack.engine``."""
