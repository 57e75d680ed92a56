"""One exception family for everything a user can get wrong.

Every message names where the problem is (file and key path), echoes the offending
value and says what was expected, so a user never has to read a SimPy stack trace.
"""

from __future__ import annotations


class SimstackError(Exception):
    """Base class of every error simstack raises on purpose."""


class ModelError(SimstackError):
    """A model file (or an override of it) is malformed or inconsistent.

    ``where`` is ``file: key.path``; the message reads ``where: what (got value)``.
    """

    def __init__(self, message: str, *, file: str | None = None, path: str | None = None):
        self.file = file
        self.path = path
        self.reason = message
        where = ": ".join(p for p in (file, path) if p)
        super().__init__(f"{where}: {message}" if where else message)

    def at(self, *, file: str | None = None, path: str | None = None) -> ModelError:
        """Return the same error located in ``file`` / under ``path`` (outermost first)."""
        new_path = ".".join(p for p in (path, self.path) if p) or None
        return ModelError(self.reason, file=file or self.file, path=new_path)


class ConfigError(SimstackError):
    """A run setting or command-line override is invalid."""


class DataError(SimstackError):
    """A baseline or measurement CSV is missing, malformed or lacks a column."""
