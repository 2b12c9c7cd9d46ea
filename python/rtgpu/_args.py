"""Argument helpers shared by the public modules."""

from __future__ import annotations

__all__ = ["cores_arg"]


def cores_arg(cores: int | None, m: int | None, function: str) -> int:
    """The core count given as ``cores`` (the name :func:`rtgpu.partition`
    uses) or, as the papers write it, ``m``; exactly one of them."""
    if cores is not None and m is not None:
        raise TypeError(f"{function}() takes cores= or m=, not both")
    n = cores if cores is not None else m
    if n is None:
        raise TypeError(f"{function}() missing the core count: cores=")
    return n
