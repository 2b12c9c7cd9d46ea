//! One client API over both arbiter modes (issue 5's client APIs): a thread
//! registered with the in-process [`Arbiter`] or with the cross-process
//! daemon (`rtgpu daemon`, [`crate::daemon`]) takes GPU tokens and engine
//! locks the same way, as guards that release what they hold when dropped.
//! The C library and the Python module are thin layers over this.

use std::path::Path;
use std::sync::{Arc, Mutex};

use crate::arbiter::{Arbiter, ArbiterError, Client, Engine, EngineGuard, TokenGuard};
use crate::daemon::{RemoteClient, RemoteError};
use crate::os::Nanos;

/// Why a client call failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error(transparent)]
    Local(#[from] ArbiterError),
    #[error(transparent)]
    Remote(#[from] RemoteError),
    #[error("the connection to the rtgpu daemon was poisoned by a panicking thread")]
    Poisoned,
    #[error("{what} {gpu} is out of range: the arbiter has {gpus} GPU(s)")]
    NoSuchGpu {
        what: &'static str,
        gpu: usize,
        gpus: usize,
    },
}

type Remote = Arc<Mutex<RemoteClient>>;

/// A registered thread, of either mode. Cloning shares the registration.
#[derive(Clone)]
pub enum AnyClient {
    /// Registered with an [`Arbiter`] in this process.
    Local { client: Client, gpus: usize },
    /// Registered with the daemon; one connection per registered thread.
    Remote(Remote),
}

/// A held GPU token of either mode; released when dropped.
pub enum AnyToken {
    Local { guard: TokenGuard, gpus: usize },
    Remote { client: Remote, gpu: usize },
}

/// A held engine lock (or a dynamic group of two) of either mode; released
/// when dropped.
pub enum AnyLock {
    Local(EngineGuard),
    Remote { client: Remote, req: u64 },
}

impl AnyClient {
    /// Registers the calling thread with `arbiter` at base SCHED_FIFO
    /// priority `fifo`.
    pub fn local(arbiter: &Arc<Arbiter>, fifo: u8) -> Result<AnyClient, ClientError> {
        Ok(AnyClient::Local {
            client: arbiter.register(fifo)?,
            gpus: arbiter.gpus(),
        })
    }

    /// Connects to the daemon at `socket` and registers the calling thread
    /// at base SCHED_FIFO priority `fifo` (the daemon applies inheritance to
    /// this thread).
    pub fn connect(socket: &Path, fifo: u8) -> Result<AnyClient, ClientError> {
        Ok(AnyClient::Remote(Arc::new(Mutex::new(
            RemoteClient::connect(socket, fifo)?,
        ))))
    }

    /// The number of GPUs the arbiter manages.
    pub fn gpus(&self) -> usize {
        match self {
            AnyClient::Local { gpus, .. } => *gpus,
            AnyClient::Remote(r) => r.lock().map_or(0, |r| r.gpus()),
        }
    }

    /// The job id the arbiter gave this thread.
    pub fn job(&self) -> u64 {
        match self {
            AnyClient::Local { client, .. } => u64::from(client.job()),
            AnyClient::Remote(r) => r.lock().map_or(u64::MAX, |r| r.job()),
        }
    }

    /// Checks that `gpu` names one of the arbiter's GPUs.
    pub fn check_gpu(&self, what: &'static str, gpu: usize) -> Result<(), ClientError> {
        let gpus = self.gpus();
        if gpu < gpus {
            Ok(())
        } else {
            Err(ClientError::NoSuchGpu { what, gpu, gpus })
        }
    }

    /// Acquires a GPU token (blocking). `task` and `hold` (the worst-case
    /// hold time) feed the allocator's queue choice, `last_gpu` its
    /// migration-cost prediction, `static_gpu` the static allocator.
    pub fn token(
        &self,
        task: usize,
        hold: Nanos,
        last_gpu: Option<usize>,
        static_gpu: usize,
    ) -> Result<AnyToken, ClientError> {
        if let Some(g) = last_gpu {
            self.check_gpu("last_gpu", g)?;
        }
        self.check_gpu("gpu", static_gpu)?;
        match self {
            AnyClient::Local { client, gpus } => Ok(AnyToken::Local {
                guard: client.token(task, hold, last_gpu, static_gpu)?,
                gpus: *gpus,
            }),
            AnyClient::Remote(r) => {
                let (gpu, _token) = lock(r)?.token(hold, task as u64, last_gpu, static_gpu)?;
                Ok(AnyToken::Remote {
                    client: Arc::clone(r),
                    gpu,
                })
            }
        }
    }
}

fn lock(r: &Remote) -> Result<std::sync::MutexGuard<'_, RemoteClient>, ClientError> {
    r.lock().map_err(|_| ClientError::Poisoned)
}

impl AnyToken {
    /// The GPU the token is for.
    pub fn gpu(&self) -> usize {
        match self {
            AnyToken::Local { guard, .. } => guard.gpu(),
            AnyToken::Remote { gpu, .. } => *gpu,
        }
    }

    /// Acquires one engine lock of the token's GPU (blocking).
    pub fn engine(&self, engine: Engine) -> Result<AnyLock, ClientError> {
        self.locks(&[(self.gpu(), engine)])
    }

    /// Acquires the two copy locks of a peer copy from GPU `src` to this
    /// token's GPU atomically (a dynamic group lock, seed 004 §4.3).
    pub fn peer_copy(&self, src: usize) -> Result<AnyLock, ClientError> {
        self.locks(&[(src, Engine::CopyOut), (self.gpu(), Engine::CopyIn)])
    }

    /// Acquires one engine lock, or two atomically (blocking).
    pub fn locks(&self, wanted: &[(usize, Engine)]) -> Result<AnyLock, ClientError> {
        let gpus = match self {
            AnyToken::Local { gpus, .. } => *gpus,
            AnyToken::Remote { client, .. } => lock(client)?.gpus(),
        };
        if let Some(&(gpu, _)) = wanted.iter().find(|w| w.0 >= gpus) {
            return Err(ClientError::NoSuchGpu {
                what: "engine-lock GPU",
                gpu,
                gpus,
            });
        }
        match self {
            AnyToken::Local { guard, .. } => Ok(AnyLock::Local(guard.locks(wanted)?)),
            AnyToken::Remote { client, .. } => {
                let req = lock(client)?.locks(wanted)?;
                Ok(AnyLock::Remote {
                    client: Arc::clone(client),
                    req,
                })
            }
        }
    }
}

impl Drop for AnyToken {
    fn drop(&mut self) {
        if let AnyToken::Remote { client, .. } = self {
            // A daemon that is gone has released everything already.
            if let Ok(mut c) = client.lock() {
                let _ = c.release_token();
            }
        }
    }
}

impl Drop for AnyLock {
    fn drop(&mut self) {
        if let AnyLock::Remote { client, req } = self {
            if let Ok(mut c) = client.lock() {
                let _ = c.unlock(*req);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arbiter::{ArbiterConfig, QueueRule, TokenConfig};

    fn config(gpus: usize) -> ArbiterConfig {
        ArbiterConfig {
            copy_engines: vec![2; gpus],
            tokens: TokenConfig {
                gpus,
                tokens_per_gpu: 1,
                rule: QueueRule::ShortestQueue,
                stealing: false,
                queue_cap: usize::MAX,
            },
            distance: Vec::new(),
            engine_locks: true,
            apply_priorities: false,
            priors: Vec::new(),
        }
    }

    /// The same calls work in both modes, and a peer copy's two locks are
    /// exclusive against a single copy lock of either GPU while held.
    fn exercise(a: AnyClient, b: AnyClient) {
        assert_eq!(a.gpus(), 2);
        let t = a.token(0, 1_000, None, 0).expect("token");
        assert!(t.gpu() < 2);
        let peer = t.peer_copy(1 - t.gpu()).expect("peer copy locks");
        // b cannot get the destination's copy-in lock while a holds it.
        let tb = b.token(0, 1_000, None, 1).expect("b's token");
        assert_ne!(tb.gpu(), t.gpu(), "one token per GPU");
        let (tx, rx) = std::sync::mpsc::channel();
        let target = t.gpu();
        let h = std::thread::spawn(move || {
            let l = tb.locks(&[(target, Engine::CopyIn)]).expect("b's lock");
            tx.send(()).expect("send");
            drop(l);
        });
        assert!(
            rx.recv_timeout(std::time::Duration::from_millis(100))
                .is_err(),
            "the copy-in lock was granted twice"
        );
        drop(peer);
        rx.recv_timeout(std::time::Duration::from_secs(5))
            .expect("b granted once a released the group");
        h.join().expect("b's thread");
        assert!(matches!(
            t.locks(&[(7, Engine::Exec)]),
            Err(ClientError::NoSuchGpu { gpu: 7, .. })
        ));
        assert!(matches!(
            a.token(0, 1, Some(5), 0),
            Err(ClientError::NoSuchGpu { gpu: 5, .. })
        ));
    }

    #[test]
    fn in_process_mode() {
        let arb = Arbiter::new(&config(2));
        let a = AnyClient::local(&arb, 10).expect("register a");
        let b = AnyClient::local(&arb, 20).expect("register b");
        exercise(a, b);
    }

    #[test]
    fn daemon_mode() {
        daemon_mode_with(crate::daemon::Waiting::Sleep, "sleep");
    }

    #[test]
    fn daemon_mode_spinning() {
        daemon_mode_with(crate::daemon::Waiting::Spin { cpu: None }, "spin");
    }

    fn daemon_mode_with(waiting: crate::daemon::Waiting, name: &str) {
        let dir = std::env::temp_dir().join(format!("rtgpu-client-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let sock = dir.join("d.sock");
        let (stop, h) = crate::daemon::spawn_with(&sock, config(2), waiting).expect("daemon");
        let a = AnyClient::connect(&sock, 10).expect("connect a");
        let b = AnyClient::connect(&sock, 20).expect("connect b");
        exercise(a, b);
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let stats = h.join().expect("daemon thread").expect("daemon ran");
        assert_eq!(stats.clients, 2);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
