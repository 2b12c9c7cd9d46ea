//! The daemon's connection handling: the listening socket and the threads
//! that serve it, the accept loop (a client table whose index is the
//! client's slot, at most [`Limits::max_clients`] at once, the oldest idle
//! connection evicted to make room), each connection's bounded,
//! non-blocking reads (split into messages, a fixed budget per pass so a
//! flooding client cannot starve the others) and writes (a bounded output
//! buffer: a client that does not read its replies is disconnected),
//! handshake and idle timeouts, and end-of-file as a departed client. What
//! a message asks for is decided in [`super::arbitration`].

use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rtgpu_policy::JobId;

use super::arbitration::{
    depart, drain, finish, handle, holds_nothing, republish, update_priorities, Core,
};
use super::listen::{claim, Claimed};
use super::protocol::{Msg, FULL, MSG, REFUSED};
use super::shared::MAX_CLIENTS;
use super::{DaemonStats, Waiting};
use crate::arbiter::ArbiterConfig;
use crate::os::{self, SchedPolicy};

/// The daemon's limits on its clients (docs/guide/daemon.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// A connection must register within this time (default 5 s).
    pub handshake_timeout: Duration,
    /// A registered client that holds and waits for nothing and sends
    /// nothing for this long is disconnected (default 10 min; `None`:
    /// never).
    pub idle_timeout: Option<Duration>,
    /// Connections served at once (default and at most [`MAX_CLIENTS`],
    /// and fewer where the descriptor limit allows fewer).
    pub max_clients: usize,
    /// Bytes of replies a connection may leave unread before it is
    /// disconnected (default 4 KiB: 128 replies).
    pub out_cap: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            handshake_timeout: Duration::from_secs(5),
            idle_timeout: Some(Duration::from_secs(600)),
            max_clients: MAX_CLIENTS,
            out_cap: 4096,
        }
    }
}

/// Bytes read from one connection per pass of the event loop (64
/// messages): a client flooding requests cannot keep the daemon from the
/// others.
const READ_BUDGET: usize = 64 * MSG;
/// Descriptors kept free besides the clients' (the listener, the shared
/// region, standard streams, whatever the process opens).
const RESERVED_FDS: usize = 32;
/// How long the daemon stops accepting after the process ran out of
/// descriptors (or memory for a socket).
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// One connected client process; its index in the table is its slot in
/// the shared region.
pub(super) struct Conn {
    pub(super) stream: UnixStream,
    buf: Vec<u8>,
    pub(super) job: Option<JobId>,
    /// The peer's process id (`SO_PEERCRED`; 0 if the OS did not say).
    pub(super) pid: libc::pid_t,
    /// Replies not yet taken by the client.
    out: Vec<u8>,
    out_cap: usize,
    accepted: Instant,
    last: Instant,
    /// Refused: closed once its replies are out (or at the handshake
    /// timeout); nothing more it sends is read.
    pub(super) closing: bool,
    /// To be disconnected at the end of this pass.
    pub(super) dead: bool,
}

impl Conn {
    fn new(stream: UnixStream, out_cap: usize) -> Conn {
        let now = Instant::now();
        let pid = peer_pid(stream.as_raw_fd()).unwrap_or(0);
        Conn {
            stream,
            buf: Vec::new(),
            job: None,
            pid,
            out: Vec::new(),
            out_cap,
            accepted: now,
            last: now,
            closing: false,
            dead: false,
        }
    }

    /// Queues `bytes` for the client without ever blocking: written at
    /// once where the socket takes them, the rest kept (up to the cap; a
    /// client whose buffer overflows is marked dead).
    pub(super) fn send(&mut self, bytes: &[u8]) {
        if self.dead {
            return;
        }
        let mut done = 0;
        if self.out.is_empty() {
            done = match write_some(&mut self.stream, bytes) {
                Ok(n) => n,
                Err(_) => {
                    self.dead = true;
                    return;
                }
            };
        }
        if done < bytes.len() {
            if self.out.len() + bytes.len() - done > self.out_cap {
                self.dead = true;
                return;
            }
            self.out.extend_from_slice(&bytes[done..]);
        }
    }

    /// A refusal, after which the connection is closed.
    pub(super) fn refuse_and_close(&mut self, code: u32) {
        self.send(&Msg::new(REFUSED, code, 0, 0, 0).encode());
        self.closing = true;
    }

    fn flush(&mut self) {
        match write_some(&mut self.stream, &self.out) {
            Ok(n) => {
                self.out.drain(..n);
            }
            Err(_) => self.dead = true,
        }
    }
}

/// Writes what the non-blocking socket takes now.
fn write_some(s: &mut UnixStream, bytes: &[u8]) -> io::Result<usize> {
    let mut done = 0;
    while done < bytes.len() {
        match s.write(&bytes[done..]) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

/// The process id of a Unix socket's peer (`SO_PEERCRED`).
pub(super) fn peer_pid(fd: RawFd) -> Option<libc::pid_t> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `cred`.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            &mut cred as *mut libc::ucred as *mut libc::c_void,
            &mut len,
        )
    };
    (rc == 0 && cred.pid > 0).then_some(cred.pid)
}

/// Raises the soft descriptor limit toward what [`MAX_CLIENTS`] needs (as
/// far as the hard limit allows); returns the soft limit.
fn raise_fd_limit() -> usize {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit fills the struct.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } != 0 {
        return 1024;
    }
    let want = (MAX_CLIENTS + 2 * RESERVED_FDS) as libc::rlim_t;
    if r.rlim_cur < want {
        let raised = libc::rlimit {
            rlim_cur: want.min(r.rlim_max),
            rlim_max: r.rlim_max,
        };
        // SAFETY: setrlimit reads the struct.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            r.rlim_cur = raised.rlim_cur;
        }
    }
    usize::try_from(r.rlim_cur).unwrap_or(usize::MAX)
}

/// Whether an `accept` error means the process or system ran out of
/// descriptors or socket memory (the listener stays readable: accepting
/// again at once would spin).
fn out_of_resources(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
    )
}

/// Serves the arbiter on `socket` until `stop` is set (checked every 50 ms,
/// or continuously when spinning), with the default [`Limits`]. Refuses a
/// socket another rtgpu daemon serves, and any existing file at `socket`
/// but a stale socket; on stop, unlinks the socket only if it is still the
/// one it created.
pub fn serve(
    socket: &Path,
    config: &ArbiterConfig,
    waiting: Waiting,
    stop: &AtomicBool,
) -> io::Result<DaemonStats> {
    serve_with(socket, config, waiting, Limits::default(), stop)
}

/// [`serve`] with explicit [`Limits`].
pub fn serve_with(
    socket: &Path,
    config: &ArbiterConfig,
    waiting: Waiting,
    limits: Limits,
    stop: &AtomicBool,
) -> io::Result<DaemonStats> {
    let claimed = claim(socket)?;
    serve_listener(&claimed, config, waiting, limits, stop)
}

/// A handshaking connection younger than this is not evicted (its
/// registration may still be on its way).
const EVICT_HANDSHAKING_AFTER: Duration = Duration::from_millis(100);
/// A registered client idle for less than this is not evicted.
const EVICT_IDLE_AFTER: Duration = Duration::from_secs(1);

/// The connection a full table (or a process out of descriptors) gives up
/// for a newcomer: the handshaking one accepted first, else the registered
/// one idle longest among those that hold and wait for nothing; none
/// younger than [`EVICT_HANDSHAKING_AFTER`] or idle for less than
/// [`EVICT_IDLE_AFTER`].
fn oldest_idle(core: &Core, conns: &[Option<Conn>]) -> Option<usize> {
    let now = Instant::now();
    conns
        .iter()
        .enumerate()
        .filter_map(|(i, c)| c.as_ref().map(|c| (i, c)))
        .filter(|(_, c)| match c.job {
            None => now.duration_since(c.accepted) >= EVICT_HANDSHAKING_AFTER,
            Some(j) => now.duration_since(c.last) >= EVICT_IDLE_AFTER && holds_nothing(core, j),
        })
        .min_by_key(|(_, c)| {
            (
                c.job.is_some(),
                if c.job.is_some() { c.last } else { c.accepted },
            )
        })
        .map(|(i, _)| i)
}

/// Disconnects client `i`, releasing whatever it held (as on a crash).
fn disconnect(core: &mut Core, conns: &mut [Option<Conn>], i: usize) {
    drain(core);
    if let Some(c) = conns[i].take() {
        core.stats.disconnected += 1;
        if let Some(job) = c.job {
            depart(core, job);
        }
    }
}

/// Serves connection `i` after `poll` reported `revents`: flushes its
/// replies, reads its requests (at most [`READ_BUDGET`] bytes) and handles
/// them, and departs it at end-of-file. Returns whether more may be
/// waiting to be read.
fn service(core: &mut Core, conns: &mut [Option<Conn>], i: usize, revents: libc::c_short) -> bool {
    let mut closed = revents & libc::POLLERR != 0
        || (revents & libc::POLLHUP != 0 && revents & libc::POLLIN == 0);
    let mut more = false;
    let mut msgs = Vec::new();
    if let Some(c) = conns[i].as_mut() {
        if revents & libc::POLLOUT != 0 && !c.out.is_empty() {
            c.flush();
        }
        if revents & libc::POLLIN != 0 && !c.closing {
            let mut chunk = [0u8; READ_BUDGET];
            let mut got = 0;
            while got < READ_BUDGET {
                match c.stream.read(&mut chunk[got..]) {
                    Ok(0) => {
                        closed = true;
                        break;
                    }
                    Ok(n) => got += n,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(_) => {
                        closed = true;
                        break;
                    }
                }
            }
            // More may be waiting: look again at once, after the other
            // clients had their turn.
            more = got == READ_BUDGET;
            if got > 0 {
                c.last = Instant::now();
            }
            c.buf.extend_from_slice(&chunk[..got]);
            let whole = c.buf.len() / MSG * MSG;
            for m in c.buf[..whole].chunks_exact(MSG) {
                let mut b = [0u8; MSG];
                b.copy_from_slice(m);
                msgs.push(Msg::decode(&b));
            }
            c.buf.drain(..whole);
        }
    }
    for m in msgs {
        if conns[i].as_ref().is_none_or(|c| c.closing || c.dead) {
            break;
        }
        // Releases clients made through shared memory come first: whoever
        // they woke may be the sender of this message.
        drain(core);
        handle(core, conns, i, m);
    }
    if closed {
        drain(core);
        if let Some(c) = conns[i].take() {
            if let Some(job) = c.job {
                depart(core, job);
            }
        }
    }
    more
}

fn serve_listener(
    claimed: &Claimed,
    config: &ArbiterConfig,
    waiting: Waiting,
    limits: Limits,
    stop: &AtomicBool,
) -> io::Result<DaemonStats> {
    let listener: &UnixListener = &claimed.listener;
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
    // Descriptors this process holds already (a Python process serving
    // the daemon may hold many) are not the clients'.
    let open_now = std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count());
    let fd_room = raise_fd_limit()
        .saturating_sub(open_now + RESERVED_FDS)
        .max(1);
    let max_clients = limits.max_clients.clamp(1, MAX_CLIENTS).min(fd_room);
    listener.set_nonblocking(true)?;
    let mut core = Core::new(config)?;
    let mut conns: Vec<Option<Conn>> = Vec::new();
    let mut again = false;
    let mut paused_until: Option<Instant> = None;
    let mut told_exhausted = false;
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        let accepting = paused_until.is_none_or(|t| now >= t);
        if accepting {
            paused_until = None;
        }
        let mut fds = vec![libc::pollfd {
            // A negative descriptor is ignored by poll: not accepting.
            fd: if accepting { listener.as_raw_fd() } else { -1 },
            events: libc::POLLIN,
            revents: 0,
        }];
        let live: Vec<usize> = (0..conns.len()).filter(|&i| conns[i].is_some()).collect();
        for &i in &live {
            if let Some(c) = &conns[i] {
                let mut events = 0;
                if !c.closing {
                    events |= libc::POLLIN;
                }
                if !c.out.is_empty() {
                    events |= libc::POLLOUT;
                }
                fds.push(libc::pollfd {
                    fd: c.stream.as_raw_fd(),
                    events,
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
        again = false;
        if accepting && fds[0].revents & libc::POLLIN != 0 {
            loop {
                let stream = match listener.accept() {
                    Ok((stream, _)) => stream,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e)
                        if e.kind() == io::ErrorKind::Interrupted
                            || e.kind() == io::ErrorKind::ConnectionAborted =>
                    {
                        continue
                    }
                    Err(e) => {
                        // Out of descriptors (or anything else): stop
                        // accepting for a while instead of spinning on a
                        // listener that stays readable, and make room.
                        if !told_exhausted {
                            eprintln!(
                                "rtgpu daemon: cannot accept connections ({e}); refusing new                                  ones for {} ms at a time, and closing idle ones (said once)",
                                ACCEPT_BACKOFF.as_millis()
                            );
                            told_exhausted = true;
                        }
                        if out_of_resources(&e) {
                            if let Some(k) = oldest_idle(&core, &conns) {
                                disconnect(&mut core, &mut conns, k);
                            }
                        }
                        paused_until = Some(Instant::now() + ACCEPT_BACKOFF);
                        break;
                    }
                };
                if stream.set_nonblocking(true).is_err() {
                    continue;
                }
                let mut conn = Conn::new(stream, limits.out_cap);
                let live_now = conns.iter().filter(|c| c.is_some()).count();
                if live_now >= max_clients {
                    // Full: the oldest idle connection makes room; with
                    // every client busy, the newcomer is refused.
                    match oldest_idle(&core, &conns) {
                        Some(k) => disconnect(&mut core, &mut conns, k),
                        None => {
                            conn.send(&Msg::new(REFUSED, FULL, 0, 0, 0).encode());
                            core.stats.disconnected += 1;
                            continue;
                        }
                    }
                }
                // Reuse the slot of a departed client: the table stays as
                // large as the most clients ever connected at once.
                let at = match conns.iter().position(Option::is_none) {
                    Some(free) => {
                        conns[free] = Some(conn);
                        free
                    }
                    None if conns.len() < MAX_CLIENTS => {
                        conns.push(Some(conn));
                        conns.len() - 1
                    }
                    None => {
                        conn.send(&Msg::new(REFUSED, FULL, 0, 0, 0).encode());
                        core.stats.disconnected += 1;
                        continue;
                    }
                };
                core.stats.clients += 1;
                // Its registration is usually there already: served at
                // once, a client registers before anything can evict it.
                again |= service(&mut core, &mut conns, at, libc::POLLIN);
            }
        }
        for (k, &i) in live.iter().enumerate() {
            let revents = fds[k + 1].revents;
            if revents != 0 {
                again |= service(&mut core, &mut conns, i, revents);
            }
        }
        // Timeouts, refused connections whose reply is out, and clients
        // that stopped reading are disconnected.
        let now = Instant::now();
        for i in 0..conns.len() {
            let Some(c) = conns[i].as_ref() else {
                continue;
            };
            let handshake_over = now.duration_since(c.accepted) > limits.handshake_timeout;
            let gone = c.dead
                || (c.closing && (c.out.is_empty() || handshake_over))
                || (c.job.is_none() && handshake_over)
                || c.job.is_some_and(|j| {
                    limits
                        .idle_timeout
                        .is_some_and(|t| now.duration_since(c.last) > t)
                        && holds_nothing(&core, j)
                });
            if gone {
                disconnect(&mut core, &mut conns, i);
                again = true;
            }
        }
        // Hand-offs that did not ring are caught up here at the latest
        // (every 50 ms when sleeping, at once when spinning).
        // Priorities first: whether a releaser is boosted decides whether
        // its hand-off must ring the daemon (`republish`). A publication
        // that lost to a closing client is retried at once, not after the
        // poll's timeout.
        if drain(&mut core) || n > 0 || again {
            update_priorities(&mut core);
            again |= republish(&mut core);
        }
    }
    Ok(finish(core))
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
    spawn_limited(socket, config, waiting, Limits::default())
}

/// [`spawn_with`] with explicit [`Limits`]. Claims the socket as
/// [`serve`] does (refusals come back here, before any thread starts).
pub fn spawn_limited(
    socket: &Path,
    config: ArbiterConfig,
    waiting: Waiting,
    limits: Limits,
) -> io::Result<Spawned> {
    let stop = Arc::new(AtomicBool::new(false));
    let s = Arc::clone(&stop);
    // Bound before returning, so clients can connect at once.
    let claimed = claim(socket)?;
    let h = std::thread::Builder::new()
        .name("rtgpud".to_string())
        .spawn(move || serve_listener(&claimed, &config, waiting, limits, &s))?;
    Ok((stop, h))
}
