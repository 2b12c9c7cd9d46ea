//! The daemon's client side: [`RemoteClient`], one registered thread of
//! some process, speaking the protocol on the socket, waiting for grants
//! on its slot's futex word and handing releases directly to a published
//! successor.

use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::protocol::{
    engine_code, refusal_text, Msg, LOCK, LOCK_RELEASE, MSG, NO_ENGINE, PROTOCOL, REFUSED,
    REGISTER, REGISTERED, TOKEN, TOKEN_RELEASE,
};
use super::shared::{self, Closed, Region, LOCK_RECORDS, REFUSAL, TOKEN_RECORD};
use crate::arbiter::Engine;
use crate::futex::{self, Scope};
use crate::os::{self, Nanos};

/// A client of the daemon: one registered thread of some process. The raw
/// calls here mirror the protocol; [`crate::client`] wraps them in guards
/// that release on drop, the same for the daemon and the in-process arbiter.
pub struct RemoteClient {
    stream: UnixStream,
    pub(super) region: Region,
    pub(super) slot: usize,
    job: u64,
    gpus: usize,
    /// Sequence number of the latest request.
    want: u32,
    /// The token held (its grant payload), if any.
    token: Option<u32>,
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

/// How long a waiting client sleeps before it checks that the daemon is
/// still there.
const LIVENESS: Nanos = 200_000_000;

/// How long [`RemoteClient::connect`] waits for the daemon to accept and
/// answer the registration.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Connects to a Unix socket, waiting at most until `deadline` (a daemon
/// whose backlog is full makes a blocking connect wait indefinitely).
fn connect_until(socket: &Path, deadline: Instant) -> io::Result<UnixStream> {
    use std::os::fd::FromRawFd;
    use std::os::unix::ffi::OsStrExt;
    let bytes = socket.as_os_str().as_bytes();
    // SAFETY: a zeroed sockaddr_un is valid; the path is copied below.
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    if bytes.len() >= addr.sun_path.len() || bytes.contains(&0) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("socket path {} is too long or invalid", socket.display()),
        ));
    }
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    for (d, &b) in addr.sun_path.iter_mut().zip(bytes) {
        *d = b as libc::c_char;
    }
    // SAFETY: creating a socket; checked below.
    let fd = unsafe {
        libc::socket(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
            0,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a descriptor just created, owned by nobody else.
    let stream = unsafe { UnixStream::from_raw_fd(fd) };
    loop {
        // SAFETY: a valid address of the size passed.
        let rc = unsafe {
            libc::connect(
                fd,
                &addr as *const libc::sockaddr_un as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t,
            )
        };
        if rc == 0 {
            break;
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => continue,
            // The listener's backlog is full: try again until the deadline.
            Some(libc::EAGAIN) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Some(libc::EAGAIN) => {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "the rtgpu daemon accepts no connection (backlog full)",
                ))
            }
            _ => return Err(e),
        }
    }
    stream.set_nonblocking(false)?;
    Ok(stream)
}

impl RemoteClient {
    /// Connects to the daemon at `socket` and registers the calling thread
    /// with base SCHED_FIFO priority `fifo`, waiting at most
    /// [`CONNECT_TIMEOUT`] for the daemon.
    pub fn connect(socket: &Path, fifo: u8) -> Result<RemoteClient, RemoteError> {
        Self::connect_timeout(socket, fifo, CONNECT_TIMEOUT)
    }

    /// [`Self::connect`] waiting at most `timeout` for the daemon to
    /// accept and answer.
    pub fn connect_timeout(
        socket: &Path,
        fifo: u8,
        timeout: Duration,
    ) -> Result<RemoteClient, RemoteError> {
        let deadline = Instant::now() + timeout;
        let mut stream = connect_until(socket, deadline)?;
        let left = |d: Instant| {
            d.saturating_duration_since(Instant::now())
                .max(Duration::from_millis(1))
        };
        stream.set_write_timeout(Some(left(deadline)))?;
        let tid = u64::try_from(os::gettid()).unwrap_or(0);
        // A daemon that refuses at once (it serves its maximum) may have
        // closed the connection before this write: its refusal is still
        // there to read.
        let wrote =
            stream.write_all(&Msg::new(REGISTER, u32::from(fifo), tid, PROTOCOL, 0).encode());
        stream.set_read_timeout(Some(left(deadline)))?;
        let mut b = [0u8; MSG];
        let fd = shared::recv_with_fd(stream.as_raw_fd(), &mut b).map_err(|e| {
            if let Err(w) = wrote {
                w
            } else if e.kind() == io::ErrorKind::WouldBlock || e.kind() == io::ErrorKind::TimedOut {
                io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "no answer from the rtgpu daemon within {} ms",
                        timeout.as_millis()
                    ),
                )
            } else {
                e
            }
        })?;
        stream.set_read_timeout(None)?;
        stream.set_write_timeout(None)?;
        let r = Msg::decode(&b);
        match r.op {
            REGISTERED => {}
            REFUSED => return Err(RemoteError::Refused(r.a, refusal_text(r.a))),
            other => return Err(RemoteError::Protocol(other)),
        }
        let Some(fd) = fd else {
            return Err(RemoteError::Io(io::Error::new(
                io::ErrorKind::InvalidData,
                "the rtgpu daemon sent no shared region (a daemon of another rtgpu version?)",
            )));
        };
        Ok(RemoteClient {
            stream,
            region: Region::map(fd)?,
            slot: (r.d >> 32) as usize,
            job: r.b,
            gpus: usize::try_from(r.c).unwrap_or(0),
            want: r.d as u32,
            token: None,
        })
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

    /// Sends a blocking request (its sequence number in the high half of
    /// `d`) and sleeps until its grant; returns the grant's payload.
    fn request(&mut self, mut m: Msg) -> Result<u32, RemoteError> {
        self.want = self.want.wrapping_add(1);
        let want = self.want;
        m.d |= u64::from(want) << 32;
        self.send(m)?;
        let slot = self
            .region
            .slot(self.slot)
            .ok_or(RemoteError::Protocol(REGISTERED))?;
        loop {
            let bell = slot.bell.load(Ordering::Acquire);
            if let Some(p) = slot.granted(want) {
                if p & REFUSAL != 0 {
                    let code = p & !REFUSAL;
                    return Err(RemoteError::Refused(code, refusal_text(code)));
                }
                return Ok(p);
            }
            if futex::wait(&slot.bell, bell, Some(LIVENESS), Scope::Shared) == futex::Wake::TimedOut
            {
                self.check_daemon()?;
            }
        }
    }

    /// An error if the daemon has gone (it never writes to a registered
    /// client's socket, so a readable socket means end-of-file).
    fn check_daemon(&self) -> Result<(), RemoteError> {
        let mut p = libc::pollfd {
            fd: self.stream.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        let n = unsafe { libc::poll(&mut p, 1, 0) };
        if n > 0 && p.revents != 0 {
            return Err(RemoteError::Io(io::Error::new(
                io::ErrorKind::ConnectionAborted,
                "the rtgpu daemon has exited",
            )));
        }
        Ok(())
    }

    /// Closes the hand-off record armed for `key` among `records`, if any
    /// (see [`shared`]).
    fn close(&self, records: &[usize], key: u64, token: Option<u32>) -> Closed {
        let Some(slot) = self.region.slot(self.slot) else {
            return Closed::NotArmed;
        };
        records
            .iter()
            .map(|&r| self.region.close(&slot.records[r], key, token))
            .find(|&c| c != Closed::NotArmed)
            .unwrap_or(Closed::NotArmed)
    }

    /// Tells the daemon about a release: asks it to release (`NotArmed`),
    /// rings it after a release through shared memory, or, after a one-hop
    /// hand-off it did not ask to hear about, sends nothing.
    fn released(&mut self, closed: Closed, op: u32, req: u64) -> Result<(), RemoteError> {
        match closed {
            Closed::HandedOff { ring: false } => Ok(()),
            Closed::NotArmed => self.send(Msg::new(op, 0, req, 0, 0)),
            Closed::ToDaemon | Closed::HandedOff { ring: true } => {
                self.send(Msg::new(op, 1, req, 0, 0))
            }
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
        let last = last_gpu.map_or(0, |g| g as u64 + 1) & 0xffff_ffff;
        let fixed = u32::try_from(static_gpu).unwrap_or(u32::MAX);
        let p = self.request(Msg::new(TOKEN, fixed, hold, task, last))?;
        self.token = Some(p);
        Ok(((p >> 16) as usize, (p & 0xffff) as usize))
    }

    /// Releases the token; hands it directly to the waiter the daemon
    /// published, if any.
    pub fn release_token(&mut self) -> Result<(), RemoteError> {
        let closed = match self.token.take() {
            Some(p) => self.close(&[TOKEN_RECORD], u64::from(p & 0xffff) + 1, Some(p)),
            None => Closed::NotArmed,
        };
        self.released(closed, TOKEN_RELEASE, 0)
    }

    /// Locks an engine of the held token's GPU (blocks); returns the request
    /// handle for [`Self::unlock`].
    pub fn lock(&mut self, engine: Engine) -> Result<u64, RemoteError> {
        let code = engine_code(engine);
        Ok(u64::from(self.request(Msg::new(LOCK, 1, code, 0, 0))?))
    }

    /// Locks one or two engines, given by GPU, atomically (a dynamic group
    /// lock, seed 004 §4.3: a peer copy's copy-out lock on the source and
    /// copy-in lock on the destination); blocks; returns the request handle
    /// for [`Self::unlock`].
    pub fn locks(&mut self, wanted: &[(usize, Engine)]) -> Result<u64, RemoteError> {
        let [first, rest @ ..] = wanted else {
            return Err(RemoteError::Refused(NO_ENGINE, "no engine named"));
        };
        if rest.len() > 1 {
            return Err(RemoteError::Refused(
                NO_ENGINE,
                "at most two engines at once",
            ));
        }
        let code = |&(g, e): &(usize, Engine)| ((g as u64 + 1) << 8) | engine_code(e);
        let second = rest.first().map_or(0, code);
        let m = Msg::new(LOCK, wanted.len() as u32, code(first), second, 0);
        Ok(u64::from(self.request(m)?))
    }

    /// Releases an engine-lock request; hands the lock directly to the
    /// waiter the daemon published, if any.
    pub fn unlock(&mut self, req: u64) -> Result<(), RemoteError> {
        let closed = self.close(&LOCK_RECORDS, req.wrapping_add(1), None);
        self.released(closed, LOCK_RELEASE, req)
    }
}
