"""Errors a user can act on: each names the file, line and field at fault."""

from __future__ import annotations

from pathlib import Path


class BridgeError(Exception):
    """Base class of errors that the CLI prints as one clear line (no traceback)."""


class InputError(BridgeError):
    """Bad input data: carries the file, line and field so the message points at the problem."""

    def __init__(
        self,
        message: str,
        *,
        path: str | Path | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.path = Path(path) if path is not None else None
        self.line = line
        self.field = field
        self.message = message
        where = ""
        if self.path is not None:
            where = str(self.path)
            if line is not None:
                where += f", line {line}"
            if field is not None:
                where += f", field {field!r}"
            where += ": "
        elif field is not None:
            where = f"field {field!r}: "
        super().__init__(where + message)


class MissingDataError(BridgeError):
    """A data directory or file that a dataset needs is absent."""

    def __init__(self, path: str | Path, expected: str) -> None:
        self.path = Path(path)
        super().__init__(f"{self.path} not found: expected {expected}")
