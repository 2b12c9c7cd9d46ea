"""Type aliases shared by the public modules."""

from __future__ import annotations

from datetime import timedelta
from typing import Literal, Union

__all__ = ["Duration", "PriorityOrder"]

Duration = Union[int, str, timedelta]
"""A duration: integer nanoseconds, a string with a unit such as ``"2 ms"``
or ``"250 us"`` (parsed exactly), or a :class:`datetime.timedelta`."""

PriorityOrder = Literal["dm", "rm", "audsley", "given"]
"""How an analysis orders tasks by priority: deadline monotonic, rate
monotonic, Audsley's optimal assignment, or the list order (index 0 highest)."""
