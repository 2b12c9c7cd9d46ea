//! Cross-process mode: the arbiter daemon (`rtgpu daemon`) and its client.
//!
//! The daemon owns the policy core (token allocator and engine locks) for
//! every process that connects to its Unix socket. Clients send fixed
//! 32-byte requests over the socket; grants come back through shared memory
//! ([`shared`]): a client that must wait sleeps on a futex word of its own
//! slot until the grant is written there.
//!
//! **One-hop hand-offs.** For every token or lock a client holds, the
//! daemon publishes in shared memory the successor its policy core would
//! grant on the release (the FIFO head of the token's queue; the request
//! an engine-lock release would satisfy). The releasing client grants that
//! successor itself and only then rings the daemon, which finishes the
//! release in its core before it handles anything else: one wake-up lies
//! between a release and the next holder running, as in the in-process
//! arbiter (docs/design/arbiter.md). Releases with nothing published (an
//! empty queue, where R3's stealing looks at every queue; a release that
//! satisfies two requests) go through the daemon.
//!
//! **Crash safety.** A client that dies, whatever it held or waited for, is
//! seen at once: its socket reaches end-of-file (the kernel closes it with
//! the process). The daemon then finishes any hand-off it had begun,
//! withdraws it as a published successor, abandons its engine-lock
//! requests, cancels its token request or releases its token, and grants
//! the next waiters, within one pass of its event loop: no lock or GPU is
//! stranded, and nobody else blocks forever. Shared memory holds no lock a
//! dying client could leave held.
//!
//! Priority inheritance is applied by the daemon to the clients' threads
//! (it needs the privilege to change other processes' priorities).
//!
//! Where things live: `protocol.rs` (the messages on the socket),
//! `connection.rs` (the accept loop and per-connection reading and
//! writing, the daemon threads), `arbitration.rs` (the policy core and the
//! requests applied to it, grants, hand-off records, inheritance),
//! [`shared`] (the shared region) and `remote.rs` ([`RemoteClient`], the
//! client side).

mod arbitration;
mod connection;
mod listen;
mod protocol;
mod remote;
pub mod shared;

pub use connection::{serve, serve_with, spawn, spawn_limited, spawn_with, Limits, Spawned};
pub use listen::lock_path;
pub use remote::{RemoteClient, RemoteError, CONNECT_TIMEOUT};

/// Where `rtgpu daemon` listens, and the C and Python clients connect, by
/// default.
pub const DEFAULT_SOCKET: &str = "/tmp/rtgpud.sock";

/// Statistics of a daemon run, returned when it stops.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DaemonStats {
    pub clients: u64,
    pub crashed_clients: u64,
    pub token_grants: u64,
    pub lock_grants: u64,
    /// Grants a releasing client made itself to the successor the daemon
    /// had published (one-hop hand-offs; included in the grants above).
    pub direct_handoffs: u64,
    /// Hand-offs whose successor differed from the policy core's choice
    /// (never expected: a nonzero count is a bug, reported when it stops).
    pub handoff_mismatches: u64,
    /// Inherited priorities the OS refused to apply to client threads.
    pub apply_errors: u64,
    /// Connections the daemon closed itself: handshake or idle timeouts,
    /// clients that did not read their replies, refused or evicted ones.
    pub disconnected: u64,
}

/// How the daemon waits for requests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Waiting {
    /// Sleeps in `poll` until a request arrives. Contended hand-offs with a
    /// published successor do not wait for it; the rest (an empty queue,
    /// a first request) cost its wake-up too.
    #[default]
    Sleep,
    /// Polls without sleeping, pinned to one CPU it then keeps busy: the
    /// daemon's wake-up disappears from every request (a dedicated arbiter
    /// core, as polled I/O uses one).
    Spin { cpu: Option<usize> },
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arbiter::{ArbiterConfig, Engine};
    use protocol::NO_TOKEN;
    use shared::{Successor, CLOSED, LOCK_RECORDS, TOKEN_RECORD};
    use std::sync::atomic::Ordering;

    /// A daemon thread on a socket in a fresh temporary directory.
    struct TestDaemon {
        dir: std::path::PathBuf,
        sock: std::path::PathBuf,
        running: Spawned,
    }

    impl TestDaemon {
        fn start(name: &str, config: ArbiterConfig) -> TestDaemon {
            let dir = std::env::temp_dir().join(format!("rtgpu-{name}-{}", std::process::id()));
            std::fs::create_dir_all(&dir).expect("temp dir");
            let sock = dir.join("d.sock");
            let running = spawn(&sock, config).expect("daemon");
            TestDaemon { dir, sock, running }
        }

        /// Stops it; its statistics.
        fn finish(self) -> DaemonStats {
            let (stop, h) = self.running;
            stop.store(true, Ordering::Relaxed);
            let stats = h.join().expect("daemon thread").expect("daemon ran");
            let _ = std::fs::remove_dir_all(&self.dir);
            stats
        }
    }

    fn one_gpu_two_tokens() -> ArbiterConfig {
        ArbiterConfig::uniform(1, 1, 2, "shortest-queue", true, false).expect("config")
    }

    /// Waits (at most 5 s) until `c`'s record `record` has a successor
    /// published.
    fn until_published(c: &RemoteClient, record: usize) -> u64 {
        until_published_where(c, record, |_| true)
    }

    /// Waits (at most 5 s) until `c`'s record `record` publishes a
    /// successor for which `ok` holds; returns the record word.
    fn until_published_where(
        c: &RemoteClient,
        record: usize,
        ok: impl Fn(&Successor) -> bool,
    ) -> u64 {
        let t0 = std::time::Instant::now();
        loop {
            let slot = c.region.slot(c.slot).expect("slot");
            let w = slot.records[record].state.load(Ordering::Acquire);
            if Successor::of(w).is_some_and(|n| ok(&n)) {
                return w;
            }
            assert!(t0.elapsed().as_secs() < 5, "no such successor published");
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    /// A holder that dies after closing its record, before it could grant
    /// the successor (killed between the two steps), loses nothing: the
    /// daemon finishes the hand-off.
    #[test]
    fn a_hand_off_cut_short_by_a_crash_is_finished_by_the_daemon() {
        let d = TestDaemon::start("handoff", one_gpu_two_tokens());
        let sock = d.sock.clone();
        let mut a = RemoteClient::connect(&sock, 10).expect("a");
        a.token(1_000, 0, None, 0).expect("token a");
        let req = a.lock(Engine::Exec).expect("lock a");
        let s = sock.clone();
        let b = std::thread::spawn(move || {
            let mut b = RemoteClient::connect(&s, 20).expect("b");
            b.token(1_000, 1, None, 0).expect("token b");
            let r = b.lock(Engine::Exec).expect("lock b");
            b.unlock(r).expect("unlock b");
            b.release_token().expect("release b");
        });
        until_published(&a, LOCK_RECORDS[0]);
        // The first step of `unlock` only, then death (socket closed).
        let slot = a.region.slot(a.slot).expect("slot");
        let rec = &slot.records[LOCK_RECORDS[0]];
        assert_eq!(rec.key.load(Ordering::Acquire), req + 1);
        rec.state.swap(CLOSED, Ordering::AcqRel);
        drop(a);
        b.join().expect("b got the lock and finished");
        let stats = d.finish();
        assert_eq!(stats.direct_handoffs, 1, "{stats:?}");
        assert_eq!(stats.handoff_mismatches, 0, "{stats:?}");
    }

    /// With a third client waiting behind the successor, the releaser is
    /// asked to ring the daemon (it must publish the new holder's
    /// successor), and the whole chain passes in one-hop hand-offs.
    #[test]
    fn a_queue_behind_the_successor_asks_for_the_daemon() {
        let config =
            ArbiterConfig::uniform(1, 1, 3, "shortest-queue", true, false).expect("config");
        let d = TestDaemon::start("ring", config);
        let sock = d.sock.clone();
        let mut a = RemoteClient::connect(&sock, 10).expect("a");
        a.token(1_000, 0, None, 0).expect("token a");
        let held = a.lock(Engine::Exec).expect("lock a");
        let waiter = |prio: u8| {
            let s = sock.clone();
            std::thread::spawn(move || {
                let mut c = RemoteClient::connect(&s, prio).expect("connect");
                c.token(1_000, 1, None, 0).expect("token");
                let r = c.lock(Engine::Exec).expect("lock");
                std::thread::sleep(std::time::Duration::from_millis(20));
                c.unlock(r).expect("unlock");
                c.release_token().expect("release");
            })
        };
        // Both less urgent than a: nothing is inherited, only the queue rings.
        let b = waiter(5);
        let first = until_published(&a, LOCK_RECORDS[0]);
        let c = waiter(3);
        // The daemon re-publishes the same successor, now asking to be rung.
        let rung = until_published_where(&a, LOCK_RECORDS[0], |n| n.ring);
        let rung = Successor::of(rung).expect("published");
        let was = Successor::of(first).expect("published");
        assert_eq!((rung.slot, rung.want), (was.slot, was.want));
        assert!(!was.ring);
        a.unlock(held).expect("unlock a");
        b.join().expect("b");
        c.join().expect("c");
        a.release_token().expect("release a");
        drop(a);
        let stats = d.finish();
        assert_eq!(stats.lock_grants, 3, "{stats:?}");
        assert!(stats.direct_handoffs >= 1, "{stats:?}");
        assert_eq!(stats.handoff_mismatches, 0, "{stats:?}");
    }

    /// A releaser that inherited its successor's priority asks to ring the
    /// daemon, which must restore the releaser's own priority at once.
    #[test]
    fn a_boosted_releaser_asks_for_the_daemon() {
        let config =
            ArbiterConfig::uniform(1, 1, 1, "shortest-queue", true, false).expect("config");
        let d = TestDaemon::start("boost", config);
        let sock = d.sock.clone();
        let mut a = RemoteClient::connect(&sock, 10).expect("a");
        a.token(1_000, 0, None, 0).expect("token a");
        let s = sock.clone();
        let b = std::thread::spawn(move || {
            // More urgent than a: a inherits SCHED_FIFO 20 while b waits.
            let mut b = RemoteClient::connect(&s, 20).expect("b");
            b.token(1_000, 1, None, 0).expect("token b");
            b.release_token().expect("release b");
        });
        let w = until_published(&a, TOKEN_RECORD);
        assert!(Successor::of(w).expect("published").ring, "{w:#x}");
        a.release_token().expect("release a");
        b.join().expect("b");
        drop(a);
        let stats = d.finish();
        assert_eq!(stats.handoff_mismatches, 0, "{stats:?}");
    }

    /// With R3's stealing (k-FMLP) no token successor is published: a
    /// waiter published on one token could be stolen for another by the
    /// daemon, and two grants would race for it (the reviewer's case: A
    /// and B hold tokens 0 and 1, X waits on 1; B hands 1 to X directly
    /// while the daemon, releasing A's token with its queue empty, steals
    /// X for token 0). Every client then holds a token of its own.
    #[test]
    fn with_stealing_token_successors_are_not_published() {
        let config = ArbiterConfig::uniform(2, 1, 1, "k-fmlp", true, false).expect("config");
        let d = TestDaemon::start("steal", config);
        let sock = d.sock.clone();
        let mut a = RemoteClient::connect(&sock, 10).expect("a");
        let mut b = RemoteClient::connect(&sock, 10).expect("b");
        assert_eq!(a.token(1_000_000, 0, None, 0).expect("a").1, 0);
        assert_eq!(b.token(10, 1, None, 0).expect("b").1, 1);
        let s = sock.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        let x = std::thread::spawn(move || {
            let mut x = RemoteClient::connect(&s, 10).expect("x");
            let t = x.token(50, 2, None, 0).expect("x gets a token");
            tx.send(t).expect("report");
            // Hold it until the test has checked nobody else got it.
            std::thread::sleep(std::time::Duration::from_millis(300));
            x.release_token().expect("release x");
        });
        // X queues on token 1 (l-aware: 10 < 1,000,000); give the daemon
        // time to publish, if it would.
        std::thread::sleep(std::time::Duration::from_millis(100));
        let slot = b.region.slot(b.slot).expect("slot");
        let w = slot.records[TOKEN_RECORD].state.load(Ordering::Acquire);
        assert_eq!(Successor::of(w), None, "published {w:#x}");
        b.release_token().expect("release b");
        a.release_token().expect("release a");
        let (_, xt) = rx.recv().expect("x's token");
        let mut z = RemoteClient::connect(&sock, 10).expect("z");
        let (_, zt) = z.token(1, 3, None, 0).expect("z gets the other token");
        assert_ne!(xt, zt, "two holders of token {xt}");
        z.release_token().expect("release z");
        x.join().expect("x");
        drop((a, b, z));
        let stats = d.finish();
        assert_eq!(stats.handoff_mismatches, 0, "{stats:?}");
    }

    /// A token's successor is published too, and a one-hop token hand-off
    /// is finished by the daemon (the new holder can lock at once).
    #[test]
    fn tokens_are_handed_off_in_one_hop() {
        let config =
            ArbiterConfig::uniform(1, 1, 1, "shortest-queue", true, false).expect("config");
        let d = TestDaemon::start("tokhop", config);
        let sock = d.sock.clone();
        // b (SCHED_FIFO 5) is less urgent than a (10): a inherits nothing.
        let mut a = RemoteClient::connect(&sock, 10).expect("a");
        assert_eq!(a.token(1_000, 0, None, 0).expect("token a"), (0, 0));
        let s = sock.clone();
        let b = std::thread::spawn(move || {
            let mut b = RemoteClient::connect(&s, 5).expect("b");
            let t = b.token(1_000, 1, None, 0).expect("token b");
            let r = b.lock(Engine::Exec).expect("lock after a one-hop token");
            b.unlock(r).expect("unlock b");
            b.release_token().expect("release b");
            t
        });
        let w = until_published(&a, TOKEN_RECORD);
        assert!(
            !Successor::of(w).expect("published").ring,
            "nobody behind the successor, nothing inherited: no need to ring"
        );
        a.release_token().expect("release a");
        assert_eq!(b.join().expect("b"), (0, 0));
        // Refusals still reach the client, through its slot.
        assert!(matches!(
            a.lock(Engine::Exec),
            Err(RemoteError::Refused(NO_TOKEN, _))
        ));
        drop(a);
        let stats = d.finish();
        assert_eq!(stats.direct_handoffs, 1, "{stats:?}");
        assert_eq!(stats.handoff_mismatches, 0, "{stats:?}");
        assert_eq!(stats.token_grants, 2, "{stats:?}");
    }
}
