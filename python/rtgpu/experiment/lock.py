"""One run per output directory: ``.rtgpu-experiment.lock`` in it, held
with ``flock`` for the whole run and naming its holder (pid, host, start).

The kernel drops an ``flock`` when its holder dies, however it dies, so a
lock is never stuck: a lock file left by a dead run is taken over with a
warning naming that run's pid. Two runs on one directory (a resume beside
a run still going, a second terminal) would append the same points twice
and make the summary wrong (issue 22); the second one is refused instead,
naming the first one's pid."""

from __future__ import annotations

import datetime
import fcntl
import json
import os
import socket
import warnings
from pathlib import Path
from types import TracebackType

from .values import StudyError

__all__ = ["LOCK_NAME", "OutputLock", "StudyWarning"]

LOCK_NAME = ".rtgpu-experiment.lock"


class StudyWarning(UserWarning):
    """Something a run repaired or took over; the run goes on.
    ``rtgpu experiment`` prints these as ``rtgpu experiment: warning: ...``."""


def _holder(fd: int) -> dict[str, object]:
    """What the lock file says about its holder ({} when unreadable)."""
    try:
        raw = os.pread(fd, 4096, 0)
        v = json.loads(raw.decode("utf-8")) if raw.strip() else {}
    except (OSError, ValueError):
        return {}
    return v if isinstance(v, dict) else {}


def _describe(h: dict[str, object]) -> str:
    parts = [f"pid {h.get('pid', '?')}"]
    if h.get("host") and h.get("host") != socket.gethostname():
        parts.append(f"on {h['host']}")
    if h.get("started"):
        parts.append(f"started {h['started']}")
    return ", ".join(parts)


def _alive(pid: object) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class OutputLock:
    """``with OutputLock(directory):`` holds the directory's lock (made,
    with the directory, if missing) or raises :class:`StudyError`."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.path = directory / LOCK_NAME
        self._fd: int | None = None

    def acquire(self) -> None:
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise StudyError(f"cannot create the output directory {self.directory}: {e}") from None
        while True:
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            except OSError as e:
                raise StudyError(f"cannot open the lock file {self.path}: {e}") from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                h = _holder(fd)
                os.close(fd)
                raise StudyError(
                    f"{self.directory} is in use by another rtgpu experiment ({_describe(h)}; "
                    f"lock file {self.path}): wait for it to finish or stop it "
                    f"(kill {h.get('pid', '?')}), or choose another --output"
                ) from None
            except OSError as e:
                os.close(fd)
                raise StudyError(f"cannot lock {self.path}: {e}") from None
            # The holder we waited for may have removed the file between
            # our open and our flock: then we locked a file nobody else
            # sees; start over on the one at the path.
            try:
                st, cur = os.fstat(fd), os.stat(self.path)
            except FileNotFoundError:
                os.close(fd)
                continue
            if (st.st_dev, st.st_ino) != (cur.st_dev, cur.st_ino):
                os.close(fd)
                continue
            break
        old = _holder(fd)
        if old.get("pid") not in (None, os.getpid()):
            state = "still running, but not holding it" if _alive(old.get("pid")) else "gone"
            warnings.warn(
                f"{self.directory}: took over the lock left by an earlier run "
                f"({_describe(old)}; {state}); its finished points are kept",
                StudyWarning,
                stacklevel=3,
            )
        me = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        }
        data = (json.dumps(me) + "\n").encode()
        os.ftruncate(fd, 0)
        os.pwrite(fd, data, 0)
        self._fd = fd

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        # Removed while still held, so a waiting run re-opens the path
        # (see acquire) instead of locking the removed file.
        try:
            self.path.unlink(missing_ok=True)
        finally:
            os.close(fd)

    def __enter__(self) -> None:
        self.acquire()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()
