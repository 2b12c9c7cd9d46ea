//! The daemon's shared memory: how grants reach clients, and how a
//! releasing client hands a token or lock to its successor in one hop
//! (docs/design/arbiter.md, "published successor").
//!
//! The daemon creates one `memfd` region of [`MAX_CLIENTS`] 64-byte
//! [`Slot`]s and passes its descriptor to every client with the
//! registration reply (`SCM_RIGHTS`). A client owns one slot:
//!
//! - **Grants.** A waiting client sleeps on its slot's `bell` futex word
//!   until `grant` carries the sequence number (`want`) of its request;
//!   the low 32 bits are the payload (token or lock handle, or a refusal).
//!   Wants grow per slot, and [`Slot::grant`] never replaces a newer grant
//!   with an older one, so a late or duplicate writer (a releaser that was
//!   preempted between its steps, the daemon repeating a hand-off after a
//!   crash) can do no harm.
//! - **Hand-off records**, one per holding (the token, up to two engine-lock
//!   requests). The daemon *arms* a record when the client holds something
//!   and *publishes* in it the successor the policy core would grant on its
//!   release (its slot, want and lock handle). The releasing client swaps
//!   the record to [`CLOSED`] and, if it found a successor, grants it
//!   directly: one wake-up between a release and the next holder running,
//!   as in the in-process arbiter. The daemon then finishes the release in
//!   its policy core ([`Record`] states are only ever swapped or
//!   compare-and-swapped, so a client killed at any point leaves nothing
//!   locked: the daemon repeats the grant, which is idempotent).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::futex::{self, Scope};

/// Clients one daemon serves at once (one slot each).
pub const MAX_CLIENTS: usize = 4096;

/// Record state: armed, no successor published (the release goes through
/// the daemon's policy core, which may steal or find nobody).
pub const EMPTY: u64 = 0;
/// Record state: the holder has released; the daemon finishes the release.
pub const CLOSED: u64 = 1;
const PUBLISHED: u64 = 1 << 63;

/// Payload flag of a refused request (the low bits carry the reason).
pub const REFUSAL: u32 = 1 << 31;

/// Record index of the token holding; lock holdings use the next two.
pub const TOKEN_RECORD: usize = 0;
pub const LOCK_RECORDS: [usize; 2] = [1, 2];

/// One hand-off record (see the module documentation).
#[repr(C)]
pub struct Record {
    /// What is held, plus one (0: not armed): the token index or the lock
    /// handle. Written by the daemon only.
    pub key: AtomicU64,
    /// [`EMPTY`], [`CLOSED`] or a published successor ([`Successor::word`]).
    pub state: AtomicU64,
}

/// A client's slot.
#[repr(C, align(64))]
pub struct Slot {
    /// Futex word: the newest want granted.
    pub bell: AtomicU32,
    _pad: u32,
    /// `(want << 32) | payload` of the newest grant.
    pub grant: AtomicU64,
    pub records: [Record; 3],
}

const _: () = assert!(std::mem::size_of::<Slot>() == 64);

/// Whether sequence number `a` is newer than `b` (wrapping).
pub fn newer(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}

/// A successor published in a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Successor {
    pub slot: usize,
    /// The sequence number its grant must carry.
    pub want: u32,
    /// The lock handle it gets (unused for tokens: the successor gets the
    /// holder's token).
    pub handle: u32,
    /// Whether the releaser must ring the daemon after the hand-off: the
    /// daemon has work that cannot wait (priorities to change, a successor
    /// to publish for the new holder). Without it the daemon catches up on
    /// its next message or within its 50 ms poll, and the hand-off costs
    /// no wake-up of the daemon at all.
    pub ring: bool,
}

const RING: u64 = 1 << 62;

impl Successor {
    /// The record word; `None` when the handle does not fit (16 bits).
    pub fn word(&self) -> Option<u64> {
        (self.slot < MAX_CLIENTS && self.handle < 1 << 16).then(|| {
            PUBLISHED
                | if self.ring { RING } else { 0 }
                | (self.slot as u64) << 48
                | u64::from(self.handle) << 32
                | u64::from(self.want)
        })
    }

    /// The successor in a record word, if one is published.
    pub fn of(word: u64) -> Option<Successor> {
        (word & PUBLISHED != 0).then_some(Successor {
            slot: ((word >> 48) & 0x3fff) as usize,
            want: word as u32,
            handle: ((word >> 32) & 0xffff) as u32,
            ring: word & RING != 0,
        })
    }
}

impl Slot {
    /// Grants request `want` with `payload` unless this or a newer grant is
    /// there already, and wakes the waiter; returns whether it wrote.
    pub fn grant(&self, want: u32, payload: u32) -> bool {
        let new = (u64::from(want) << 32) | u64::from(payload);
        let wrote = self
            .grant
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |cur| {
                newer(want, (cur >> 32) as u32).then_some(new)
            })
            .is_ok();
        if wrote {
            let _ = self
                .bell
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |b| {
                    newer(want, b).then_some(want)
                });
            futex::wake(&self.bell, 1, Scope::Shared);
        }
        wrote
    }

    /// The payload of request `want`'s grant, if it has been granted.
    pub fn granted(&self, want: u32) -> Option<u32> {
        let g = self.grant.load(Ordering::Acquire);
        ((g >> 32) as u32 == want).then_some(g as u32)
    }

    /// Resets the slot for a new client whose wants start after `base`.
    pub fn reset(&self, base: u32) {
        for r in &self.records {
            r.key.store(0, Ordering::Release);
            r.state.store(EMPTY, Ordering::Release);
        }
        self.grant.store(u64::from(base) << 32, Ordering::Release);
        self.bell.store(base, Ordering::Release);
    }
}

/// What [`Region::close`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Closed {
    /// The record was not armed for this holding: the daemon must be asked
    /// to release it.
    NotArmed,
    /// Closed with no successor published: the daemon finishes the release
    /// (and grants whom it decides) when rung.
    ToDaemon,
    /// Closed and handed to the published successor; `ring`: whether the
    /// daemon asked to be rung anyway.
    HandedOff { ring: bool },
}

/// The shared region, mapped in the daemon and in every client.
pub struct Region {
    base: *const Slot,
    fd: OwnedFd,
}

// SAFETY: the region is only accessed through atomics (`Slot`'s fields);
// the mapping lives as long as the `Region`.
unsafe impl Send for Region {}
// SAFETY: as above.
unsafe impl Sync for Region {}

const REGION_BYTES: usize = MAX_CLIENTS * std::mem::size_of::<Slot>();

impl Region {
    /// Creates a fresh region (the daemon), zeroed.
    pub fn create() -> io::Result<Region> {
        // SAFETY: a NUL-terminated name and valid flags.
        let fd = unsafe { libc::memfd_create(c"rtgpud".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a descriptor just opened and owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: a valid descriptor.
        if unsafe { libc::ftruncate(fd.as_raw_fd(), REGION_BYTES as libc::off_t) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Region::map(fd)
    }

    /// Maps a region received from the daemon, checking its size.
    pub fn map(fd: OwnedFd) -> io::Result<Region> {
        // SAFETY: fstat fills the zeroed struct for a valid descriptor.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
            return Err(io::Error::last_os_error());
        }
        if usize::try_from(st.st_size).ok() != Some(REGION_BYTES) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "the daemon's shared region has {} bytes, {REGION_BYTES} expected (a daemon of another rtgpu version?)",
                    st.st_size
                ),
            ));
        }
        // SAFETY: mapping a descriptor of the right size, shared; checked
        // for failure below.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                REGION_BYTES,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Region {
            base: p as *const Slot,
            fd,
        })
    }

    pub fn slot(&self, i: usize) -> Option<&Slot> {
        // SAFETY: in bounds of the mapping, which outlives the borrow;
        // `Slot` holds only atomics, valid for any bit pattern.
        (i < MAX_CLIENTS).then(|| unsafe { &*self.base.add(i) })
    }

    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// The holder's side of a release (see the module documentation):
    /// closes `record` if it is armed for `key` and grants a published
    /// successor directly (`token_payload`: what a token's successor gets;
    /// a lock's successor gets the published handle).
    pub fn close(&self, record: &Record, key: u64, token_payload: Option<u32>) -> Closed {
        if record.key.load(Ordering::Acquire) != key {
            return Closed::NotArmed;
        }
        let old = record.state.swap(CLOSED, Ordering::AcqRel);
        match Successor::of(old) {
            Some(next) => {
                if let Some(s) = self.slot(next.slot) {
                    s.grant(next.want, token_payload.unwrap_or(next.handle));
                }
                Closed::HandedOff { ring: next.ring }
            }
            None => Closed::ToDaemon,
        }
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the mapping made in `map`; no borrow of
        // it outlives `self`.
        unsafe {
            libc::munmap(self.base as *mut libc::c_void, REGION_BYTES);
        }
    }
}

/// Sends `bytes` with descriptor `fd` attached (`SCM_RIGHTS`).
pub fn send_with_fd(sock: RawFd, bytes: &[u8], fd: RawFd) -> io::Result<()> {
    let mut iov = libc::iovec {
        iov_base: bytes.as_ptr() as *mut libc::c_void,
        iov_len: bytes.len(),
    };
    let mut cbuf = [0u64; 4];
    // SAFETY: zeroed msghdr filled with valid pointers to live buffers; the
    // control buffer is large and aligned enough for one descriptor.
    unsafe {
        let space = libc::CMSG_SPACE(std::mem::size_of::<RawFd>() as u32) as usize;
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = cbuf.as_mut_ptr() as *mut libc::c_void;
        msg.msg_controllen = space as _;
        let c = libc::CMSG_FIRSTHDR(&msg);
        (*c).cmsg_level = libc::SOL_SOCKET;
        (*c).cmsg_type = libc::SCM_RIGHTS;
        (*c).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<RawFd>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(c) as *mut RawFd, fd);
        loop {
            let n = libc::sendmsg(sock, &msg, libc::MSG_NOSIGNAL);
            if n == bytes.len() as isize {
                return Ok(());
            }
            let e = io::Error::last_os_error();
            if n < 0 && e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(if n < 0 {
                e
            } else {
                io::ErrorKind::WriteZero.into()
            });
        }
    }
}

/// Receives exactly `buf.len()` bytes from a blocking socket, and the
/// descriptor attached to them, if any.
pub fn recv_with_fd(sock: RawFd, buf: &mut [u8]) -> io::Result<Option<OwnedFd>> {
    let mut got = 0;
    let mut fd = None;
    while got < buf.len() {
        let mut iov = libc::iovec {
            iov_base: buf[got..].as_mut_ptr() as *mut libc::c_void,
            iov_len: buf.len() - got,
        };
        let mut cbuf = [0u64; 4];
        // SAFETY: zeroed msghdr with pointers to live buffers of the given
        // lengths; descriptors found in the control data are owned by us.
        unsafe {
            let mut msg: libc::msghdr = std::mem::zeroed();
            msg.msg_iov = &mut iov;
            msg.msg_iovlen = 1;
            msg.msg_control = cbuf.as_mut_ptr() as *mut libc::c_void;
            msg.msg_controllen = std::mem::size_of_val(&cbuf) as _;
            let n = libc::recvmsg(sock, &mut msg, libc::MSG_CMSG_CLOEXEC);
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            if n == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            let mut c = libc::CMSG_FIRSTHDR(&msg);
            while !c.is_null() {
                if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                    let raw = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const RawFd);
                    fd = Some(OwnedFd::from_raw_fd(raw));
                }
                c = libc::CMSG_NXTHDR(&msg, c);
            }
            got += n as usize;
        }
    }
    Ok(fd)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_never_go_backwards() {
        let r = Region::create().expect("region");
        let s = r.slot(3).expect("slot");
        s.reset(100);
        assert_eq!(s.granted(101), None);
        assert!(s.grant(101, 7));
        assert_eq!(s.granted(101), Some(7));
        assert!(!s.grant(101, 7), "a repeated grant writes nothing");
        assert!(s.grant(102, 9));
        assert!(!s.grant(101, 7), "a late writer cannot undo a newer grant");
        assert_eq!(s.granted(102), Some(9));
        assert_eq!(s.bell.load(Ordering::Acquire), 102);
        // Wrapping sequence numbers.
        s.reset(u32::MAX - 1);
        assert!(s.grant(u32::MAX, 1) && s.grant(0, 2) && !s.grant(u32::MAX, 3));
        assert_eq!(s.granted(0), Some(2));
    }

    #[test]
    fn closing_hands_off_to_the_published_successor_once() {
        let r = Region::create().expect("region");
        let (holder, next) = (r.slot(0).expect("0"), r.slot(1).expect("1"));
        holder.reset(0);
        next.reset(50);
        let rec = &holder.records[LOCK_RECORDS[0]];
        assert_eq!(r.close(rec, 8, None), Closed::NotArmed);
        rec.key.store(8, Ordering::Release);
        let succ = Successor {
            slot: 1,
            want: 51,
            handle: 12,
            ring: false,
        };
        let w = succ.word().expect("fits");
        assert_eq!(Successor::of(w), Some(succ));
        let rung = Successor { ring: true, ..succ };
        assert_eq!(Successor::of(rung.word().expect("fits")), Some(rung));
        rec.state.store(w, Ordering::Release);
        assert_eq!(r.close(rec, 8, None), Closed::HandedOff { ring: false });
        assert_eq!(next.granted(51), Some(12));
        assert_eq!(rec.state.load(Ordering::Acquire), CLOSED);
        rec.state.store(EMPTY, Ordering::Release);
        assert_eq!(r.close(rec, 8, None), Closed::ToDaemon);
        assert_eq!(Successor::of(CLOSED), None);
        let far = Successor {
            slot: MAX_CLIENTS,
            ..succ
        };
        assert_eq!(far.word(), None);
        let big = Successor {
            handle: 1 << 16,
            ..succ
        };
        assert_eq!(big.word(), None);
    }

    #[test]
    fn a_region_travels_over_a_socket() {
        let (a, b) = std::os::unix::net::UnixStream::pair().expect("pair");
        let r = Region::create().expect("region");
        r.slot(5).expect("slot").reset(77);
        send_with_fd(a.as_raw_fd(), b"hello", r.raw_fd()).expect("send");
        let mut buf = [0u8; 5];
        let fd = recv_with_fd(b.as_raw_fd(), &mut buf)
            .expect("recv")
            .expect("a descriptor");
        assert_eq!(&buf, b"hello");
        let mapped = Region::map(fd).expect("map");
        assert_eq!(
            mapped.slot(5).expect("slot").bell.load(Ordering::Acquire),
            77
        );
        assert!(mapped.slot(MAX_CLIENTS).is_none());
    }
}
