//! Futex wait and wake on a 32-bit word, the primitive under every blocking
//! hand-off of the arbiter (a job blocked on a token or engine lock sleeps on
//! its own word; the releaser writes the grant and wakes it), in process-
//! private and process-shared (for words in shared memory) flavours.

use std::sync::atomic::AtomicU32;

use crate::os::Nanos;

/// Whether the word is shared between processes (in a `MAP_SHARED` mapping).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Threads of one process (FUTEX_PRIVATE_FLAG: cheaper hashing).
    Private,
    /// Processes sharing the mapping.
    Shared,
}

fn op(base: libc::c_int, scope: Scope) -> libc::c_int {
    match scope {
        Scope::Private => base | libc::FUTEX_PRIVATE_FLAG,
        Scope::Shared => base,
    }
}

/// Outcome of [`wait`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wake {
    /// Woken (or the word no longer held `expected`, or a spurious wake-up):
    /// the caller re-checks its condition.
    Woken,
    /// The timeout passed.
    TimedOut,
}

/// Sleeps while `*word == expected`, at most `timeout` (relative) if given.
pub fn wait(word: &AtomicU32, expected: u32, timeout: Option<Nanos>, scope: Scope) -> Wake {
    let ts = timeout.map(|ns| libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    });
    let ts_ptr = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: `word` is a valid, aligned u32 for the duration of the call;
    // the timespec (if any) outlives the call.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            op(libc::FUTEX_WAIT, scope),
            expected,
            ts_ptr,
        )
    };
    if rc == -1 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ETIMEDOUT) {
        Wake::TimedOut
    } else {
        Wake::Woken
    }
}

/// Wakes up to `n` waiters of `word`; returns how many were woken.
pub fn wake(word: &AtomicU32, n: u32, scope: Scope) -> usize {
    // SAFETY: `word` is a valid, aligned u32.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            op(libc::FUTEX_WAKE, scope),
            n.min(i32::MAX as u32),
        )
    };
    usize::try_from(rc).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;
    use std::sync::Arc;

    #[test]
    fn a_waiter_sleeps_until_the_word_changes_and_is_woken() {
        let word = Arc::new(AtomicU32::new(0));
        let w = Arc::clone(&word);
        let t = std::thread::spawn(move || {
            while w.load(Ordering::Acquire) == 0 {
                wait(&w, 0, None, Scope::Private);
            }
            w.load(Ordering::Acquire)
        });
        std::thread::sleep(std::time::Duration::from_millis(5));
        word.store(7, Ordering::Release);
        wake(&word, 1, Scope::Private);
        assert_eq!(t.join().expect("thread"), 7);
    }

    #[test]
    fn a_wait_times_out_and_a_stale_expectation_returns_at_once() {
        let word = AtomicU32::new(1);
        assert_eq!(
            wait(&word, 1, Some(1_000_000), Scope::Private),
            Wake::TimedOut
        );
        assert_eq!(
            wait(&word, 0, Some(1_000_000_000), Scope::Shared),
            Wake::Woken
        );
        assert_eq!(wake(&word, 1, Scope::Shared), 0, "nobody waits");
    }
}
