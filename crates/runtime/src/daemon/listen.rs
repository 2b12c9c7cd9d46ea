//! The daemon's socket file, claimed safely: one daemon per socket (an
//! exclusive `flock` on `<socket>.lock`, naming the holder's pid when
//! refused), never replacing anything but a stale socket (a socket file
//! nobody listens on; a regular file, a directory, a link or a live socket
//! is refused), and on stop unlinking the socket only if it is still the
//! one this daemon created (same device and inode).

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};

/// A bound, locked socket; its file is unlinked when dropped (if it is
/// still this daemon's), and the lock released.
pub(super) struct Claimed {
    pub(super) listener: UnixListener,
    path: PathBuf,
    /// (device, inode) of the socket file this daemon created.
    id: Option<(u64, u64)>,
    _lock: File,
}

/// The lock file of `socket`: `<socket>.lock`.
pub fn lock_path(socket: &Path) -> PathBuf {
    let mut s = socket.as_os_str().to_owned();
    s.push(".lock");
    PathBuf::from(s)
}

fn locked(socket: &Path) -> io::Result<File> {
    let path = lock_path(socket);
    let mut f = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&path)
        .map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("cannot open the daemon's lock file {}: {e}", path.display()),
            )
        })?;
    let meta = f.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!(
                "the daemon's lock file {} is not a regular file",
                path.display()
            ),
        ));
    }
    // The pid is written into it: never into someone else's file, nor a
    // hard link to another file (a path in /tmp is anyone's to create).
    // SAFETY: geteuid cannot fail.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me || meta.nlink() != 1 {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "the daemon's lock file {} belongs to another user or has other links: \
                 refusing to use it (remove it, or choose a socket in a directory only \
                 this user can write)",
                path.display()
            ),
        ));
    }
    // SAFETY: flock on a descriptor we own.
    if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::WouldBlock {
            let mut pid = String::new();
            let _ = f.read_to_string(&mut pid);
            let pid = pid.trim();
            let pid = if pid.is_empty() { "?" } else { pid };
            return Err(io::Error::new(
                io::ErrorKind::AddrInUse,
                format!(
                    "another rtgpu daemon serves {} (pid {pid})",
                    socket.display()
                ),
            ));
        }
        return Err(e);
    }
    f.set_len(0)?;
    f.rewind()?;
    write!(f, "{}", std::process::id())?;
    Ok(f)
}

/// Makes `socket` free to bind: nothing there, or a stale socket (removed).
fn clear(socket: &Path) -> io::Result<()> {
    let meta = match std::fs::symlink_metadata(socket) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    if !meta.file_type().is_socket() {
        return Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!(
                "{} exists and is not a socket: refusing to replace it (choose another socket path)",
                socket.display()
            ),
        ));
    }
    match UnixStream::connect(socket) {
        Ok(_) => Err(io::Error::new(
            io::ErrorKind::AddrInUse,
            format!(
                "a process listens on {} already: refusing to replace its socket",
                socket.display()
            ),
        )),
        Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
            // Stale: nobody listens. Remove it only if it is still the
            // socket file examined.
            match std::fs::symlink_metadata(socket) {
                Ok(m) if (m.dev(), m.ino()) == (meta.dev(), meta.ino()) => {
                    std::fs::remove_file(socket)
                }
                _ => Err(io::Error::new(
                    io::ErrorKind::AddrInUse,
                    format!("{} changed while being examined", socket.display()),
                )),
            }
        }
        Err(e) => Err(io::Error::new(
            e.kind(),
            format!("cannot tell whether {} is stale: {e}", socket.display()),
        )),
    }
}

/// Claims `socket`: locks it, clears a stale socket, binds.
pub(super) fn claim(socket: &Path) -> io::Result<Claimed> {
    let lock = locked(socket)?;
    clear(socket)?;
    let listener = UnixListener::bind(socket)?;
    let id = std::fs::symlink_metadata(socket)
        .ok()
        .map(|m| (m.dev(), m.ino()));
    Ok(Claimed {
        listener,
        path: socket.to_path_buf(),
        id,
        _lock: lock,
    })
}

impl Drop for Claimed {
    fn drop(&mut self) {
        // Only the socket this daemon created: whatever replaced it (a
        // file put there since, another daemon's socket) stays.
        if let (Some(id), Ok(m)) = (self.id, std::fs::symlink_metadata(&self.path)) {
            if (m.dev(), m.ino()) == id && m.file_type().is_socket() {
                let _ = std::fs::remove_file(&self.path);
            }
        }
        // The lock file stays (removing it would race with a daemon
        // starting); its pid is cleared.
        let _ = self._lock.set_len(0);
    }
}
