"""The ``simstack`` command: the only printer and the only importer of Hydra."""
