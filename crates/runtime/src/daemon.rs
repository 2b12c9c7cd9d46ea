//! Cross-process mode: the arbiter daemon (`rtgpu daemon`) and its client.
//!
//! The daemon owns the policy core (token allocator and engine locks) for
//! every process that connects to its Unix socket. Clients send fixed
//! 32-byte requests; a client that must wait blocks in `recv` until the
//! daemon sends its grant.
//!
//! **Crash safety.** A client that dies, whatever it held or waited for, is
//! seen at once: its socket reaches end-of-file (the kernel closes it with
//! the process). The daemon then abandons the client's engine-lock requests,
//! cancels its token request or releases its token, and grants the next
//! waiters, within one pass of its event loop: no lock or GPU is stranded,
//! and nobody else blocks forever.
//!
//! This first version routes every hand-off through the daemon (two
//! wake-ups: releaser to daemon, daemon to the next holder); the one-hop
//! "published successor" of docs/design/arbiter.md is not built yet.
//! Priority inheritance is applied by the daemon to the clients' threads
//! (it needs the privilege to change other processes' priorities).

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use rtgpu_policy::engine_lock::{EngineLocks, LockGrant, ReqId};
use rtgpu_policy::inherit::effective_priority;
use rtgpu_policy::predictor::CostPredictor;
use rtgpu_policy::token::{self, Decision, TokenAllocator};
use rtgpu_policy::{JobId, Prio};

use crate::arbiter::{inherited_policy, prio_of_fifo, ArbiterConfig, Engine};
use crate::os::{self, monotonic_now, Nanos, SchedPolicy};

/// Where `rtgpu daemon` listens, and the C and Python clients connect, by
/// default.
pub const DEFAULT_SOCKET: &str = "/tmp/rtgpud.sock";

const MSG: usize = 32;

// Requests.
const REGISTER: u32 = 1;
const TOKEN: u32 = 2;
const TOKEN_RELEASE: u32 = 3;
const LOCK: u32 = 4;
const LOCK_RELEASE: u32 = 5;
// Replies.
const REGISTERED: u32 = 101;
const TOKEN_GRANTED: u32 = 102;
const LOCK_GRANTED: u32 = 104;
const REFUSED: u32 = 199;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Msg {
    op: u32,
    a: u32,
    b: u64,
    c: u64,
    d: u64,
}

impl Msg {
    fn new(op: u32, a: u32, b: u64, c: u64, d: u64) -> Msg {
        Msg { op, a, b, c, d }
    }

    fn encode(&self) -> [u8; MSG] {
        let mut m = [0u8; MSG];
        m[0..4].copy_from_slice(&self.op.to_le_bytes());
        m[4..8].copy_from_slice(&self.a.to_le_bytes());
        m[8..16].copy_from_slice(&self.b.to_le_bytes());
        m[16..24].copy_from_slice(&self.c.to_le_bytes());
        m[24..32].copy_from_slice(&self.d.to_le_bytes());
        m
    }

    fn decode(m: &[u8; MSG]) -> Msg {
        let u32_at = |i: usize| u32::from_le_bytes([m[i], m[i + 1], m[i + 2], m[i + 3]]);
        let u64_at = |i: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&m[i..i + 8]);
            u64::from_le_bytes(b)
        };
        Msg {
            op: u32_at(0),
            a: u32_at(4),
            b: u64_at(8),
            c: u64_at(16),
            d: u64_at(24),
        }
    }
}

fn engine_code(e: Engine) -> u64 {
    match e {
        Engine::Exec => 0,
        Engine::CopyIn => 1,
        Engine::CopyOut => 2,
    }
}

fn engine_of(code: u64) -> Option<Engine> {
    match code {
        0 => Some(Engine::Exec),
        1 => Some(Engine::CopyIn),
        2 => Some(Engine::CopyOut),
        _ => None,
    }
}

/// One connected client process.
struct Conn {
    stream: UnixStream,
    buf: Vec<u8>,
    job: Option<JobId>,
}

struct Job {
    conn: usize,
    tid: libc::pid_t,
    base: Prio,
    applied: Prio,
    own_policy: Option<SchedPolicy>,
    /// Engine-lock requests (held or waiting).
    reqs: Vec<ReqId>,
}

struct Core {
    tokens: TokenAllocator,
    locks: EngineLocks,
    gpus: usize,
    jobs: HashMap<JobId, Job>,
    next_job: JobId,
    apply_priorities: bool,
    /// Priority changes the OS refused.
    apply_errors: u64,
}

/// Statistics of a daemon run, returned when it stops.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DaemonStats {
    pub clients: u64,
    pub crashed_clients: u64,
    pub token_grants: u64,
    pub lock_grants: u64,
    /// Inherited priorities the OS refused to apply to client threads.
    pub apply_errors: u64,
}

/// How the daemon waits for requests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Waiting {
    /// Sleeps in `poll` until a request arrives: a hand-off costs two
    /// wake-ups (the daemon's, then the next holder's).
    #[default]
    Sleep,
    /// Polls without sleeping, pinned to one CPU it then keeps busy: the
    /// daemon's wake-up disappears from every hand-off, which costs about
    /// one wake-up, like the in-process arbiter's (a dedicated arbiter
    /// core, as polled I/O uses one).
    Spin { cpu: Option<usize> },
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
        Waiting::Sleep => 50,
        Waiting::Spin { cpu } => {
            if let Some(cpu) = cpu {
                os::set_affinity(0, &[cpu])
                    .map_err(|e| io::Error::other(format!("pinning the daemon: {e}")))?;
            }
            0
        }
    };
    listener.set_nonblocking(true)?;
    let gpus = config.copy_engines.len();
    let mut tcfg = config.tokens;
    tcfg.gpus = gpus;
    let mut core = Core {
        tokens: TokenAllocator::new(
            tcfg,
            config.distance.clone(),
            CostPredictor::new(&config.priors),
        ),
        locks: EngineLocks::new(&config.copy_engines),
        gpus,
        jobs: HashMap::new(),
        next_job: 0,
        apply_priorities: config.apply_priorities,
        apply_errors: 0,
    };
    let mut conns: Vec<Option<Conn>> = Vec::new();
    let mut stats = DaemonStats::default();
    let mut out: Vec<(usize, Msg)> = Vec::new();
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
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout) };
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
                    None => conns.push(conn),
                }
                stats.clients += 1;
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
                handle(&mut core, &mut conns, i, m, &mut out, &mut stats);
            }
            if closed {
                if let Some(c) = conns[i].take() {
                    if let Some(job) = c.job {
                        if core.jobs.get(&job).is_some_and(|j| {
                            !j.reqs.is_empty()
                                || core.tokens.held_by(job).is_some()
                                || core.tokens.is_waiting(job)
                        }) {
                            stats.crashed_clients += 1;
                        }
                        abandon(&mut core, job, &mut out, &mut stats);
                    }
                }
            }
        }
        if n > 0 {
            update_priorities(&mut core);
        }
        for (i, m) in out.drain(..) {
            if let Some(c) = conns.get_mut(i).and_then(|c| c.as_mut()) {
                // A client that cannot take 32 bytes is gone; EOF follows.
                let _ = write_all_blocking(&mut c.stream, &m.encode());
            }
        }
    }
    stats.apply_errors = core.apply_errors;
    Ok(stats)
}

fn write_all_blocking(s: &mut UnixStream, bytes: &[u8]) -> io::Result<()> {
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

fn handle(
    core: &mut Core,
    conns: &mut [Option<Conn>],
    i: usize,
    m: Msg,
    out: &mut Vec<(usize, Msg)>,
    stats: &mut DaemonStats,
) {
    let now = monotonic_now();
    let job = conns[i].as_ref().and_then(|c| c.job);
    match (m.op, job) {
        (REGISTER, None) => {
            let j = core.next_job;
            core.next_job = core.next_job.wrapping_add(1);
            let tid = libc::pid_t::try_from(m.b).unwrap_or(0);
            let fifo = u8::try_from(m.a).unwrap_or(1).clamp(1, 99);
            core.jobs.insert(
                j,
                Job {
                    conn: i,
                    tid,
                    base: prio_of_fifo(fifo),
                    applied: prio_of_fifo(fifo),
                    own_policy: os::sched_policy(tid).ok(),
                    reqs: Vec::new(),
                },
            );
            if let Some(c) = conns[i].as_mut() {
                c.job = Some(j);
            }
            out.push((
                i,
                Msg::new(REGISTERED, 0, u64::from(j), core.gpus as u64, 0),
            ));
        }
        (TOKEN, Some(j)) => {
            let base = core.jobs.get(&j).map_or(rtgpu_policy::LOWEST, |x| x.base);
            let last =
                m.d.checked_sub(1)
                    .map(|g| g as usize)
                    .filter(|&g| g < core.gpus);
            if core.tokens.held_by(j).is_some() || core.tokens.is_waiting(j) {
                out.push((i, Msg::new(REFUSED, 1, 0, 0, 0)));
                return;
            }
            let req = token::Request {
                job: j,
                task: usize::try_from(m.c).unwrap_or(0),
                prio: base,
                hold: m.b,
                last_gpu: last,
                static_gpu: (m.a as usize).min(core.gpus.saturating_sub(1)),
            };
            if let Decision::Granted { gpu, token } = core.tokens.request(&req, now) {
                stats.token_grants += 1;
                out.push((i, Msg::new(TOKEN_GRANTED, 0, gpu as u64, token as u64, 0)));
            }
        }
        (TOKEN_RELEASE, Some(j)) => {
            if let Some(g) = core.tokens.release(j, now) {
                grant_token(core, g, out, stats);
            }
        }
        (LOCK, Some(j)) => {
            let Some(gpu) = core.tokens.held_by(j).map(|t| core.tokens.gpu_of_token(t)) else {
                out.push((i, Msg::new(REFUSED, 2, 0, 0, 0)));
                return;
            };
            let mut ids = Vec::new();
            // Each lock is (gpu + 1) << 8 | engine; gpu + 1 = 0 means the
            // token's GPU.
            for code in [m.b, m.c].iter().take(m.a.clamp(1, 2) as usize) {
                let g = match code >> 8 {
                    0 => gpu,
                    n => usize::try_from(n - 1).unwrap_or(usize::MAX),
                };
                match engine_of(code & 0xff) {
                    Some(e) if g < core.gpus => ids.push(core.locks.lock_id(g, e)),
                    _ => {
                        out.push((i, Msg::new(REFUSED, 3, 0, 0, 0)));
                        return;
                    }
                }
            }
            let base = core.jobs.get(&j).map_or(rtgpu_policy::LOWEST, |x| x.base);
            let (req, granted) = core.locks.request(j, base, &ids);
            if let Some(x) = core.jobs.get_mut(&j) {
                x.reqs.push(req);
            }
            if granted {
                stats.lock_grants += 1;
                out.push((i, Msg::new(LOCK_GRANTED, 0, req as u64, 0, 0)));
            }
        }
        (LOCK_RELEASE, Some(j)) => {
            let req = m.b as ReqId;
            let owned = core.jobs.get_mut(&j).is_some_and(|x| {
                let had = x.reqs.contains(&req);
                x.reqs.retain(|&r| r != req);
                had
            });
            if owned {
                let mut grants = Vec::new();
                core.locks.release(req, &mut grants);
                grant_locks(core, &grants, out, stats);
            }
        }
        _ => out.push((i, Msg::new(REFUSED, 0, 0, 0, 0))),
    }
}

fn grant_token(core: &Core, g: token::Grant, out: &mut Vec<(usize, Msg)>, stats: &mut DaemonStats) {
    if let Some(x) = core.jobs.get(&g.job) {
        stats.token_grants += 1;
        out.push((
            x.conn,
            Msg::new(TOKEN_GRANTED, 0, g.gpu as u64, g.token as u64, 0),
        ));
    }
}

fn grant_locks(
    core: &Core,
    grants: &[LockGrant],
    out: &mut Vec<(usize, Msg)>,
    stats: &mut DaemonStats,
) {
    for g in grants {
        if let Some(x) = core.jobs.get(&g.job) {
            stats.lock_grants += 1;
            out.push((x.conn, Msg::new(LOCK_GRANTED, 0, g.req as u64, 0, 0)));
        }
    }
}

/// Everything a departed client held or waited for is released, and the
/// next waiters granted.
fn abandon(core: &mut Core, job: JobId, out: &mut Vec<(usize, Msg)>, stats: &mut DaemonStats) {
    let Some(x) = core.jobs.remove(&job) else {
        return;
    };
    let mut grants = Vec::new();
    for req in &x.reqs {
        core.locks.release(*req, &mut grants);
    }
    grant_locks(core, &grants, out, stats);
    if let Some(g) = core.tokens.cancel(job, monotonic_now()) {
        grant_token(core, g, out, stats);
    }
}

/// Applies effective priorities (seed 004 §4.2 inheritance) to the clients'
/// threads, restoring a thread's own policy when it inherits nothing.
fn update_priorities(core: &mut Core) {
    let bases: HashMap<JobId, Prio> = core.jobs.iter().map(|(&j, x)| (j, x.base)).collect();
    let base = |j: JobId| bases.get(&j).copied().unwrap_or(rtgpu_policy::LOWEST);
    let ids: Vec<JobId> = core.jobs.keys().copied().collect();
    for j in ids {
        let eff = effective_priority(j, &base, &core.tokens, &core.locks);
        let Some(x) = core.jobs.get_mut(&j) else {
            continue;
        };
        if eff == x.applied {
            continue;
        }
        x.applied = eff;
        if core.apply_priorities {
            let own = x.own_policy.unwrap_or(SchedPolicy::Other { nice: 0 });
            let policy = inherited_policy(eff, x.base, own);
            if os::set_sched_policy(x.tid, policy).is_err() {
                core.apply_errors += 1;
            }
        }
    }
}

/// A client of the daemon: one registered thread of some process. The raw
/// calls here mirror the protocol; [`crate::client`] wraps them in guards
/// that release on drop, the same for the daemon and the in-process arbiter.
pub struct RemoteClient {
    stream: UnixStream,
    job: u64,
    gpus: usize,
}

/// Why a remote call failed.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    #[error("cannot reach the rtgpu daemon: {0}")]
    Io(#[from] io::Error),
    #[error("the rtgpu daemon refused the request (code {0}): {1}")]
    Refused(u32, &'static str),
    #[error("unexpected reply {0} from the rtgpu daemon")]
    Protocol(u32),
}

impl RemoteClient {
    /// Connects to the daemon at `socket` and registers the calling thread
    /// with base SCHED_FIFO priority `fifo`.
    pub fn connect(socket: &Path, fifo: u8) -> Result<RemoteClient, RemoteError> {
        let stream = UnixStream::connect(socket)?;
        let mut c = RemoteClient {
            stream,
            job: 0,
            gpus: 0,
        };
        let tid = u64::try_from(os::gettid()).unwrap_or(0);
        c.send(Msg::new(REGISTER, u32::from(fifo), tid, 0, 0))?;
        let r = c.expect(REGISTERED)?;
        c.job = r.b;
        c.gpus = usize::try_from(r.c).unwrap_or(0);
        Ok(c)
    }

    pub fn job(&self) -> u64 {
        self.job
    }

    /// The number of GPUs the daemon arbitrates.
    pub fn gpus(&self) -> usize {
        self.gpus
    }

    fn send(&mut self, m: Msg) -> Result<(), RemoteError> {
        self.stream.write_all(&m.encode())?;
        Ok(())
    }

    fn expect(&mut self, op: u32) -> Result<Msg, RemoteError> {
        let mut b = [0u8; MSG];
        self.stream.read_exact(&mut b)?;
        let m = Msg::decode(&b);
        match m.op {
            x if x == op => Ok(m),
            REFUSED => Err(RemoteError::Refused(
                m.a,
                match m.a {
                    1 => "this client already holds or waits for a token",
                    2 => "an engine lock needs a held token",
                    3 => "no such GPU or engine",
                    _ => "malformed request",
                },
            )),
            other => Err(RemoteError::Protocol(other)),
        }
    }

    /// Acquires a GPU token (blocks): returns (gpu, token). `static_gpu` is
    /// the GPU the `static` allocator gives this client.
    pub fn token(
        &mut self,
        hold: Nanos,
        task: u64,
        last_gpu: Option<usize>,
        static_gpu: usize,
    ) -> Result<(usize, usize), RemoteError> {
        let last = last_gpu.map_or(0, |g| g as u64 + 1);
        let fixed = u32::try_from(static_gpu).unwrap_or(u32::MAX);
        self.send(Msg::new(TOKEN, fixed, hold, task, last))?;
        let r = self.expect(TOKEN_GRANTED)?;
        Ok((r.b as usize, r.c as usize))
    }

    pub fn release_token(&mut self) -> Result<(), RemoteError> {
        self.send(Msg::new(TOKEN_RELEASE, 0, 0, 0, 0))
    }

    /// Locks an engine of the held token's GPU (blocks); returns the request
    /// handle for [`Self::unlock`].
    pub fn lock(&mut self, engine: Engine) -> Result<u64, RemoteError> {
        let code = engine_code(engine);
        self.send(Msg::new(LOCK, 1, code, 0, 0))?;
        Ok(self.expect(LOCK_GRANTED)?.b)
    }

    /// Locks one or two engines, given by GPU, atomically (a dynamic group
    /// lock, seed 004 §4.3: a peer copy's copy-out lock on the source and
    /// copy-in lock on the destination); blocks; returns the request handle
    /// for [`Self::unlock`].
    pub fn locks(&mut self, wanted: &[(usize, Engine)]) -> Result<u64, RemoteError> {
        let [first, rest @ ..] = wanted else {
            return Err(RemoteError::Refused(3, "no engine named"));
        };
        if rest.len() > 1 {
            return Err(RemoteError::Refused(3, "at most two engines at once"));
        }
        let code = |&(g, e): &(usize, Engine)| ((g as u64 + 1) << 8) | engine_code(e);
        let second = rest.first().map_or(0, code);
        self.send(Msg::new(LOCK, wanted.len() as u32, code(first), second, 0))?;
        Ok(self.expect(LOCK_GRANTED)?.b)
    }

    pub fn unlock(&mut self, req: u64) -> Result<(), RemoteError> {
        self.send(Msg::new(LOCK_RELEASE, 0, req, 0, 0))
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip() {
        let m = Msg::new(LOCK, 2, u64::MAX, 7, 1 << 40);
        assert_eq!(Msg::decode(&m.encode()), m);
    }
}
