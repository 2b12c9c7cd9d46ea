//! The daemon's connection handling: the listening socket and the threads
//! that serve it, the accept loop (a client table whose index is the
//! client's slot, refusing clients beyond [`MAX_CLIENTS`]), each
//! connection's buffered reads split into messages, blocking writes, and
//! end-of-file as a departed client. What a message asks for is decided in
//! [`super::arbitration`].

use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use rtgpu_policy::JobId;

use super::arbitration::{depart, drain, finish, handle, republish, update_priorities, Core};
use super::protocol::{Msg, FULL, MSG, REFUSED};
use super::shared::MAX_CLIENTS;
use super::{DaemonStats, Waiting};
use crate::arbiter::ArbiterConfig;
use crate::os::{self, SchedPolicy};

/// One connected client process; its index in the table is its slot in
/// the shared region.
pub(super) struct Conn {
    pub(super) stream: UnixStream,
    buf: Vec<u8>,
    pub(super) job: Option<JobId>,
}

/// Serves the arbiter on `socket` until `stop` is set (checked every 50 ms,
/// or continuously when spinning). An existing socket file is replaced.
pub fn serve(
    socket: &Path,
    config: &ArbiterConfig,
    waiting: Waiting,
    stop: &AtomicBool,
) -> io::Result<DaemonStats> {
    let _ = std::fs::remove_file(socket);
    let listener = UnixListener::bind(socket)?;
    let stats = serve_listener(&listener, config, waiting, stop);
    let _ = std::fs::remove_file(socket);
    stats
}

fn serve_listener(
    listener: &UnixListener,
    config: &ArbiterConfig,
    waiting: Waiting,
    stop: &AtomicBool,
) -> io::Result<DaemonStats> {
    let timeout = match waiting {
        Waiting::Sleep => {
            // Requests the clients cannot finish themselves (a first grant,
            // a release with nothing published, a crash) and the publishing
            // that makes one-hop hand-offs possible wait for this thread:
            // it runs above every client where the OS permits (a few
            // microseconds per request), as interrupt threads do.
            let _ = os::set_sched_policy(0, SchedPolicy::Fifo { priority: 99 });
            50
        }
        Waiting::Spin { cpu } => {
            if let Some(cpu) = cpu {
                os::set_affinity(0, &[cpu])
                    .map_err(|e| io::Error::other(format!("pinning the daemon: {e}")))?;
            }
            0
        }
    };
    listener.set_nonblocking(true)?;
    let mut core = Core::new(config)?;
    let mut conns: Vec<Option<Conn>> = Vec::new();
    let mut again = false;
    while !stop.load(Ordering::Relaxed) {
        let mut fds = vec![libc::pollfd {
            fd: listener.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        }];
        let live: Vec<usize> = (0..conns.len()).filter(|&i| conns[i].is_some()).collect();
        for &i in &live {
            if let Some(c) = &conns[i] {
                fds.push(libc::pollfd {
                    fd: c.stream.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                });
            }
        }
        // SAFETY: fds is a valid array of pollfd of the length passed.
        let wait = if again { 0 } else { timeout };
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, wait) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if fds[0].revents & libc::POLLIN != 0 {
            while let Ok((stream, _)) = listener.accept() {
                stream.set_nonblocking(true)?;
                let conn = Some(Conn {
                    stream,
                    buf: Vec::new(),
                    job: None,
                });
                // Reuse the slot of a departed client: the table stays as
                // large as the most clients ever connected at once.
                match conns.iter().position(Option::is_none) {
                    Some(free) => conns[free] = conn,
                    None if conns.len() < MAX_CLIENTS => conns.push(conn),
                    None => {
                        if let Some(mut c) = conn {
                            let m = Msg::new(REFUSED, FULL, 0, 0, 0);
                            let _ = write_all_blocking(&mut c.stream, &m.encode());
                        }
                        continue;
                    }
                }
                core.stats.clients += 1;
            }
        }
        for (k, &i) in live.iter().enumerate() {
            if fds[k + 1].revents == 0 {
                continue;
            }
            let mut closed = fds[k + 1].revents & (libc::POLLHUP | libc::POLLERR) != 0;
            let mut msgs = Vec::new();
            if let Some(c) = conns[i].as_mut() {
                let mut chunk = [0u8; 512];
                loop {
                    match c.stream.read(&mut chunk) {
                        Ok(0) => {
                            closed = true;
                            break;
                        }
                        Ok(n) => c.buf.extend_from_slice(&chunk[..n]),
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                        Err(_) => {
                            closed = true;
                            break;
                        }
                    }
                }
                while c.buf.len() >= MSG {
                    let mut m = [0u8; MSG];
                    m.copy_from_slice(&c.buf[..MSG]);
                    c.buf.drain(..MSG);
                    msgs.push(Msg::decode(&m));
                }
            }
            for m in msgs {
                // Releases clients made through shared memory come first:
                // whoever they woke may be the sender of this message.
                drain(&mut core);
                handle(&mut core, &mut conns, i, m);
            }
            if closed {
                drain(&mut core);
                if let Some(c) = conns[i].take() {
                    if let Some(job) = c.job {
                        depart(&mut core, job);
                    }
                }
            }
        }
        // Hand-offs that did not ring are caught up here at the latest
        // (every 50 ms when sleeping, at once when spinning).
        // Priorities first: whether a releaser is boosted decides whether
        // its hand-off must ring the daemon (`republish`). A publication
        // that lost to a closing client is retried at once, not after the
        // poll's timeout.
        again = false;
        if drain(&mut core) || n > 0 {
            update_priorities(&mut core);
            again = republish(&mut core);
        }
    }
    Ok(finish(core))
}

pub(super) fn write_all_blocking(s: &mut UnixStream, bytes: &[u8]) -> io::Result<()> {
    let mut done = 0;
    while done < bytes.len() {
        match s.write(&bytes[done..]) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => done += n,
            Err(e)
                if e.kind() == io::ErrorKind::WouldBlock
                    || e.kind() == io::ErrorKind::Interrupted =>
            {
                std::thread::yield_now()
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// A daemon thread of this process: its stop flag and the thread.
pub type Spawned = (
    Arc<AtomicBool>,
    std::thread::JoinHandle<io::Result<DaemonStats>>,
);

/// Runs a daemon on a background thread (tests, and `rtgpu daemon`'s
/// foreground loop uses [`serve`] directly), sleeping between requests.
pub fn spawn(socket: &Path, config: ArbiterConfig) -> io::Result<Spawned> {
    spawn_with(socket, config, Waiting::Sleep)
}

/// [`spawn`] with a choice of [`Waiting`].
pub fn spawn_with(socket: &Path, config: ArbiterConfig, waiting: Waiting) -> io::Result<Spawned> {
    let stop = Arc::new(AtomicBool::new(false));
    let s = Arc::clone(&stop);
    let path = socket.to_path_buf();
    // Bound before returning, so clients can connect at once.
    let _ = std::fs::remove_file(&path);
    let listener = UnixListener::bind(&path)?;
    let h = std::thread::Builder::new()
        .name("rtgpud".to_string())
        .spawn(move || {
            let r = serve_listener(&listener, &config, waiting, &s);
            let _ = std::fs::remove_file(&path);
            r
        })?;
    Ok((stop, h))
}
