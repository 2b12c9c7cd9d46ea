"""The GPU arbiter from Python threads: mutual exclusion of tokens and
engine locks, release on exceptions, GIL released while waiting, and clear
errors for misuse."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from rtgpu.runtime import Arbiter, Daemon, chunks, connect


def test_tokens_and_engines_are_exclusive_across_python_threads() -> None:
    arb = Arbiter(gpus=2, copy_engines=1, tokens_per_gpu=1)
    holders = [0, 0]
    engine = [0, 0]
    worst = [0, 0]
    lock = threading.Lock()

    def worker(prio: int) -> None:
        me = arb.register(priority=prio)
        for _ in range(40):
            with me.token(hold="1 ms") as tok:
                g = tok.gpu
                with lock:
                    holders[g] += 1
                    worst[0] = max(worst[0], holders[g])
                with tok.exec_engine():
                    with lock:
                        engine[g] += 1
                        worst[1] = max(worst[1], engine[g])
                    time.sleep(0.0002)
                    with lock:
                        engine[g] -= 1
                with lock:
                    holders[g] -= 1

    threads = [threading.Thread(target=worker, args=(10 + i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
        assert not t.is_alive(), "a client thread is stuck"
    assert worst == [1, 1], "two holders of one token or one engine at once"
    grants = [h for h in arb.take_handoffs() if h[2].startswith("token-granted")]
    assert len(grants) == 6 * 40


def test_an_exception_inside_the_blocks_releases_everything() -> None:
    arb = Arbiter(gpus=1, tokens_per_gpu=1)
    me = arb.register()
    with pytest.raises(ZeroDivisionError), me.token() as tok, tok.copy_in():
        _ = 1 / 0
    # Another thread gets the token and the lock at once.
    done = threading.Event()

    def other() -> None:
        c = arb.register()
        with c.token() as t, t.copy_in():
            done.set()

    th = threading.Thread(target=other)
    th.start()
    th.join(timeout=10)
    assert done.is_set()


def test_waiting_releases_the_gil() -> None:
    # One token: the main thread holds it while a second thread waits in
    # `with token()`. The main thread keeps running Python meanwhile.
    arb = Arbiter(gpus=1, tokens_per_gpu=1)
    me = arb.register()
    got = threading.Event()

    def waiter() -> None:
        c = arb.register()
        with c.token():
            got.set()

    with me.token():
        th = threading.Thread(target=waiter)
        th.start()
        spins = 0
        deadline = time.monotonic() + 0.2
        while time.monotonic() < deadline:
            spins += 1
        assert not got.is_set()
        assert spins > 1000
    th.join(timeout=10)
    assert got.is_set()


def test_misuse_is_refused_clearly() -> None:
    with pytest.raises(ValueError, match="gpus must be at least 1"):
        Arbiter(gpus=0)
    with pytest.raises(ValueError, match="allocator"):
        Arbiter(allocator="round-robin")
    arb = Arbiter()
    with pytest.raises(ValueError, match="priority"):
        arb.register(priority=0)
    me = arb.register()
    with pytest.raises(ValueError, match="out of range"):
        me.token(gpu=3)
    tok = me.token()
    with pytest.raises(RuntimeError, match="not held"):
        tok.exec_engine()


def test_an_engine_lock_through_a_released_token_is_refused() -> None:
    arb = Arbiter(gpus=1, tokens_per_gpu=1)
    me = arb.register()
    with me.token() as tok:
        late = tok.exec_engine()
    # The token was released with its `with` block: no execution lock
    # through it (it used to be granted, holding the token past its block).
    with pytest.raises(RuntimeError, match="has been released"), late:
        pass
    # The token really is free: another thread gets it at once.
    got = threading.Event()

    def other() -> None:
        with arb.register().token():
            got.set()

    th = threading.Thread(target=other)
    th.start()
    th.join(timeout=10)
    assert got.is_set()
    # An engine lock taken inside the block keeps the token until it ends.
    with me.token() as tok, tok.exec_engine():
        pass
    # Absurd sizes are a clear error, not an abort of the interpreter.
    with pytest.raises(ValueError, match="at most 1024"):
        Arbiter(gpus=1_000_000_000)
    with pytest.raises(ValueError, match="at most 64"):
        Arbiter(tokens_per_gpu=1_000_000)


def test_a_daemon_never_replaces_a_file(tmp_path: Path) -> None:
    precious = tmp_path / "some-file.txt"
    precious.write_text("precious")
    with pytest.raises(RuntimeError, match="not a socket"):
        Daemon(str(precious), gpus=1, inherit=False)
    assert precious.read_text() == "precious"
    sock = str(tmp_path / "d.sock")
    busy = "another rtgpu daemon serves"
    with Daemon(sock, gpus=1, inherit=False), pytest.raises(RuntimeError, match=busy):
        Daemon(sock, gpus=1, inherit=False)


def test_chunks_cover_the_copy_exactly() -> None:
    assert list(chunks(5, 2)) == [(0, 2), (2, 2), (4, 1)]
    assert list(chunks(4, None)) == [(0, 4)]
    assert list(chunks(0, 2)) == []
    with pytest.raises(ValueError):
        list(chunks(-1, 2))


# Cross-process mode: the daemon served from this process, clients in
# child Python processes.

_CHILD = """
import os, sys, time
from rtgpu.runtime import connect
sock, marker, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
me = connect(sock, priority=10)
if len(sys.argv) > 4:
    # Start together: say ready, then wait for the go (so that the rounds
    # overlap however late each interpreter started on a loaded machine).
    go = sys.argv[4]
    open(f"{go}.{os.getpid()}", "w").close()
    deadline = time.monotonic() + 60
    while not os.path.exists(go) and time.monotonic() < deadline:
        time.sleep(0.001)
for _ in range(rounds):
    with me.token(hold="1 ms") as tok, tok.exec_engine():
        # Exclusive while held: creating the marker fails if another
        # process holds the engine too.
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        time.sleep(0.0005)
        os.close(fd)
        os.unlink(marker)
    if rounds == 0:
        break
if rounds == 0:
    tok = me.token(hold="1 ms")
    tok.__enter__()
    print("holding", flush=True)
    time.sleep(60)
"""


def _child(sock: str, marker: str, rounds: int, go: str | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", _CHILD, sock, marker, str(rounds), *([go] if go else [])],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.parametrize("spin_cpu", [None, 0])
def test_processes_share_a_gpu_through_the_daemon(tmp_path: Path, spin_cpu: int | None) -> None:
    sock = str(tmp_path / "d.sock")
    marker = str(tmp_path / "engine-held")
    go = str(tmp_path / "go")
    with Daemon(sock, gpus=1, tokens_per_gpu=2, inherit=False, spin_cpu=spin_cpu) as d:
        kids = [_child(sock, marker, 30, go) for _ in range(3)]
        # All three connected and waiting: then go, so that they contend
        # (one failure under load: the first had finished its 30 rounds
        # before the last interpreter started, 0 hand-offs).
        deadline = time.monotonic() + 60
        while len(list(tmp_path.glob("go.*"))) < 3:
            assert time.monotonic() < deadline, [k.poll() for k in kids]
            assert all(k.poll() is None for k in kids), [k.poll() for k in kids]
            time.sleep(0.01)
        Path(go).touch()
        for k in kids:
            _out, err = k.communicate(timeout=60)
            assert k.returncode == 0, err
        stats = d.stop()
    assert stats["clients"] == 3
    assert stats["token_grants"] == 90
    assert stats["lock_grants"] == 90
    assert stats["crashed_clients"] == 0
    assert stats["apply_errors"] == 0, "inherit=False applies nothing"
    # Three processes contend for one execution engine: some releases hand
    # it to the waiter the daemon published, without the daemon.
    assert stats["direct_handoffs"] > 0, stats
    assert stats["handoff_mismatches"] == 0, stats


_UNPRIVILEGED = """
import resource, sys, warnings
resource.setrlimit(resource.RLIMIT_RTPRIO, (0, 0))
from rtgpu.runtime import Daemon
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    d = Daemon(sys.argv[1], gpus=1)
    d.stop()
print([str(w.message) for w in caught if w.category is RuntimeWarning])
"""


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0 or shutil.which("setpriv") is None,
    reason="needs root and setpriv to start a child without CAP_SYS_NICE (CI runs as root)",
)
def test_a_daemon_without_privilege_warns_that_inheritance_is_off(tmp_path: Path) -> None:
    # No CAP_SYS_NICE and no real-time rlimit: SCHED_FIFO is refused.
    run = subprocess.run(
        [
            "setpriv",
            "--bounding-set",
            "-sys_nice",
            sys.executable,
            "-c",
            _UNPRIVILEGED,
            str(tmp_path / "d.sock"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    assert "priority inheritance cannot be applied" in run.stdout, run.stdout


def test_a_killed_process_loses_its_token_at_once(tmp_path: Path) -> None:
    sock = str(tmp_path / "d.sock")
    with Daemon(sock, gpus=1, tokens_per_gpu=1, inherit=False) as d:
        holder = _child(sock, str(tmp_path / "unused"), 0)
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "holding"
        me = connect(sock, priority=20)
        assert me.gpus == 1
        got = threading.Event()
        waited: list[float] = []

        def wait_for_token() -> None:
            with me.token(hold="1 ms"):
                waited.append(time.monotonic())
                got.set()

        th = threading.Thread(target=wait_for_token)
        th.start()
        time.sleep(0.2)
        assert not got.is_set(), "the token was granted twice"
        killed = time.monotonic()
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=10)
        th.join(timeout=10)
        assert got.is_set(), "the dead holder's token was never released"
        # Seen at once (one pass of the daemon's event loop); generous here
        # because CI machines are loaded. The 50 ms goal is measured by the
        # Rust kill test (crates/runtime/tests/daemon.rs).
        assert waited[0] - killed < 1.0
        assert d.stop()["crashed_clients"] == 1


def test_a_missing_daemon_is_a_clear_error(tmp_path: Path) -> None:
    missing = str(tmp_path / "no-daemon.sock")
    with pytest.raises(RuntimeError, match=r"no-daemon\.sock"):
        connect(missing)
    with pytest.raises(ValueError, match="priority"):
        connect(missing, priority=0)
