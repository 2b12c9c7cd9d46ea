"""The GPU arbiter for Python threads: GPU tokens and engine locks under the
same rules the analysis assumes (GPUSync, seed 004 §4; k-FMLP, seed 000
App. A), with priority inheritance applied to the real threads.

Wrap your own GPU calls (PyTorch, CuPy, ...) in ``with`` blocks::

    from rtgpu.runtime import Arbiter

    arb = Arbiter(gpus=1, copy_engines=2, tokens_per_gpu=2)
    me = arb.register(priority=50)      # this thread's SCHED_FIFO priority
    with me.token(hold="5 ms") as tok:  # blocks until a GPU token is granted
        with tok.copy_in():
            x = cupy.asarray(frame)
        with tok.exec_engine():
            y = model(x)
            cupy.cuda.get_current_stream().synchronize()
        with tok.copy_out():
            out = y.get()

Every wait releases the GIL. Leaving a block releases what it holds, also on
an exception.

Several processes share GPUs through the daemon (``rtgpu daemon``, or
:class:`Daemon` served from a Python process): each thread calls
:func:`connect` instead of ``Arbiter.register`` and gets the same
:class:`Client`; a process that dies loses what it held at once::

    from rtgpu.runtime import connect

    me = connect("/tmp/rtgpud.sock", priority=50)
    with me.token(hold="5 ms") as tok, tok.exec_engine():
        ... For a chunked copy (seed 004 §4.3), take ``copy_in()`` once per
chunk (see :func:`chunks`). Without the privilege for real-time priorities
inheritance cannot be applied; :meth:`Arbiter.apply_errors` says so.
"""

from __future__ import annotations

from collections.abc import Iterator

from ._rtgpu import Arbiter, Client, Daemon, EngineLock, Token, connect

__all__ = ["Arbiter", "Client", "Daemon", "EngineLock", "Token", "chunks", "connect"]


def chunks(nbytes: int, chunk: int | None) -> Iterator[tuple[int, int]]:
    """(offset, length) pieces of a copy of ``nbytes`` in chunks of ``chunk``
    bytes (``None`` or 0: one piece); take the copy lock once per piece."""
    if nbytes < 0:
        raise ValueError(f"nbytes must be >= 0, got {nbytes}")
    step = chunk if chunk else max(nbytes, 1)
    if step < 0:
        raise ValueError(f"chunk must be > 0, got {chunk}")
    for offset in range(0, nbytes, step):
        yield offset, min(step, nbytes - offset)
