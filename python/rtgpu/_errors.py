"""Errors of invalid workload files."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

__all__ = ["Diagnostic", "WorkloadError"]


class Diagnostic(NamedTuple):
    """One problem in a workload file.

    ``line`` and ``column`` are 1-based (the column counts characters).
    ``field`` is the path of the offending key in the file's own spelling,
    such as ``task[2].deadline``; it is empty for TOML syntax errors.
    """

    file: str
    line: int
    column: int
    field: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}:{self.column}: error"
        if self.field:
            where += f" in `{self.field}`"
        return f"{where}: {self.message}"


class WorkloadError(ValueError):
    """A workload file is not valid.

    ``errors`` holds every problem found, in file order; ``file``, ``line``,
    ``column``, ``field`` and ``message`` are those of the first one.
    ``str(error)`` is the full compiler-style message, one line per problem
    (``FILE:LINE:COL: error in `field`: message``).
    """

    errors: list[Diagnostic]
    file: str
    line: int
    column: int
    field: str
    message: str

    def __init__(self, text: str, errors: Sequence[Diagnostic] = ()) -> None:
        super().__init__(text, list(errors))
        self.errors = list(errors)
        first = self.errors[0] if self.errors else Diagnostic("", 0, 0, "", text)
        self.file = first.file
        self.line = first.line
        self.column = first.column
        self.field = first.field
        self.message = first.message

    def __str__(self) -> str:
        text: str = self.args[0]
        return text
