"""Stopping a study at a safe point.

``rtgpu experiment`` (``python -m rtgpu.experiment``) turns SIGINT, SIGTERM
and SIGHUP into a *request*: the signal handler only records it, and the
runner acts on it where it is safe, between Dask calls (:func:`check`, called
while it waits for points). A KeyboardInterrupt raised by the handler itself
would land wherever the main thread was, often inside Dask's
``distributed.utils.sync``; distributed 2026.8 then logs a ``NameError``
traceback from its cancel callback and may leave the client waiting forever
(both seen in CI). The finished points are in ``results.csv`` either way.
"""

from __future__ import annotations

__all__ = ["Stopped", "check", "request", "requested", "reset"]


class Stopped(KeyboardInterrupt):
    """A stop signal acted on: stop as on Ctrl-C (a KeyboardInterrupt, so
    nothing that catches ``Exception`` swallows it), keeping the finished
    points and closing the Dask cluster."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


_requested: int | None = None


def request(signum: int) -> None:
    """Record a stop (async-signal-safe: one assignment)."""
    global _requested
    if _requested is None:
        _requested = signum


def requested() -> int | None:
    """The signal of the pending stop, if any."""
    return _requested


def check() -> None:
    """Raise :class:`Stopped` if a stop was requested."""
    if _requested is not None:
        raise Stopped(_requested)


def reset() -> None:
    """Forget a request (the stop was handled)."""
    global _requested
    _requested = None
