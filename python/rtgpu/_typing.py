"""Type aliases shared by the public modules."""

from __future__ import annotations

from datetime import timedelta
from typing import Literal, Union

__all__ = ["Duration", "KlmirqdMode", "PriorityOrder", "ServerParams"]

Duration = Union[int, str, timedelta]
"""A duration: integer nanoseconds, a string with a unit such as ``"2 ms"``
or ``"250 us"`` (parsed exactly), or a :class:`datetime.timedelta`."""

PriorityOrder = Literal["dm", "rm", "audsley", "given"]
"""How an analysis orders tasks by priority: deadline monotonic, rate
monotonic, Audsley's optimal assignment, or the list order (index 0 highest)."""

KlmirqdMode = Literal["dependent", "independent"]
"""How klmirqd's per-GPU completion threads run (seed 000 §III): at the GPU
owner's effective priority, or each as a SCHED_DEADLINE bandwidth server."""

ServerParams = tuple[Duration, Duration]
"""A bandwidth server ``(runtime, period)``: ``runtime`` of CPU time every
``period`` (its relative deadline), e.g. ``("200 us", "2 ms")``."""
