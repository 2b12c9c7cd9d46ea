//! `rtgpu daemon`: the cross-process GPU arbiter (docs/runtime.md).

use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

use rtgpu_runtime::arbiter::ArbiterConfig;

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

pub struct Options<'a> {
    pub socket: &'a Path,
    pub gpus: usize,
    pub copy_engines: u8,
    pub tokens_per_gpu: usize,
    pub allocator: &'a str,
    pub engine_locks: bool,
    pub waiting: rtgpu_runtime::daemon::Waiting,
}

pub fn run(o: &Options) -> ExitCode {
    let mut config = match ArbiterConfig::uniform(
        o.gpus,
        u64::from(o.copy_engines),
        o.tokens_per_gpu,
        o.allocator,
        o.engine_locks,
        false,
    ) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("rtgpu daemon: {e}");
            return ExitCode::from(2);
        }
    };
    let caps = rtgpu_runtime::os::probe_capabilities();
    config.apply_priorities = caps.fifo;
    if let Some(why) = &caps.reason {
        println!("WARNING: priority inheritance cannot be applied to clients: {why}");
    }
    // SAFETY: installing a handler that only stores to an atomic.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
    println!(
        "rtgpu daemon on {}: {} GPU(s), {} token(s) each, {} allocator; Ctrl-C to stop",
        o.socket.display(),
        o.gpus,
        config.tokens.tokens_per_gpu,
        o.allocator
    );
    if config.tokens.tokens_per_gpu != o.tokens_per_gpu {
        println!("the k-FMLP has one token per GPU: --tokens-per-gpu is not used");
    }
    match o.waiting {
        rtgpu_runtime::daemon::Waiting::Spin { cpu } => println!(
            "spinning: polls without sleeping{} (one CPU kept busy; no request waits for the daemon's wake-up)",
            cpu.map(|c| format!(" on CPU {c}")).unwrap_or_default()
        ),
        rtgpu_runtime::daemon::Waiting::Sleep if caps.fifo => {
            println!("sleeping between requests at SCHED_FIFO 99 (above every client)")
        }
        rtgpu_runtime::daemon::Waiting::Sleep => println!(
            "sleeping between requests at ordinary priority (no real-time privilege): \
             requests the clients cannot hand off themselves may wait behind other work"
        ),
    }
    match rtgpu_runtime::daemon::serve(o.socket, &config, o.waiting, &STOP) {
        Ok(s) => {
            println!(
                "stopped: {} client(s), {} died holding or waiting (their holdings released), \
                 {} token and {} engine-lock grants, {} of them handed off by the releasing \
                 client (one hop)",
                s.clients, s.crashed_clients, s.token_grants, s.lock_grants, s.direct_handoffs
            );
            if s.disconnected > 0 {
                println!(
                    "{} connection(s) closed by the daemon (timeouts, unread replies, refused, \
                     or evicted when full)",
                    s.disconnected
                );
            }
            if s.apply_errors > 0 {
                println!(
                    "WARNING: {} inherited priorities could not be applied to client threads \
                     (no privilege to change other processes' scheduling)",
                    s.apply_errors
                );
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("rtgpu: daemon on {}: {e}", o.socket.display());
            ExitCode::from(2)
        }
    }
}
