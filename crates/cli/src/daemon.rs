//! `rtgpu daemon`: the cross-process GPU arbiter (docs/runtime.md).

use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

use rtgpu_runtime::arbiter::{ArbiterConfig, TokenConfig};

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
    let Some((rule, stealing)) = rtgpu_runtime::arbiter::allocator(o.allocator) else {
        eprintln!(
            "rtgpu: --allocator {:?}: expected one of {}",
            o.allocator,
            rtgpu_runtime::arbiter::ALLOCATORS.join(", ")
        );
        return ExitCode::from(2);
    };
    if o.gpus == 0 || !(1..=2).contains(&o.copy_engines) || o.tokens_per_gpu == 0 {
        eprintln!("rtgpu: --gpus and --tokens-per-gpu must be at least 1, --copy-engines 1 or 2");
        return ExitCode::from(2);
    }
    let caps = rtgpu_runtime::os::probe_capabilities();
    if let Some(why) = &caps.reason {
        println!("WARNING: priority inheritance cannot be applied to clients: {why}");
    }
    // SAFETY: installing a handler that only stores to an atomic.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
    let config = ArbiterConfig {
        copy_engines: vec![o.copy_engines; o.gpus],
        tokens: TokenConfig {
            gpus: o.gpus,
            tokens_per_gpu: o.tokens_per_gpu,
            rule,
            stealing,
        },
        distance: Vec::new(),
        engine_locks: o.engine_locks,
        apply_priorities: caps.fifo,
        priors: Vec::new(),
    };
    println!(
        "rtgpu daemon on {}: {} GPU(s), {} token(s) each, {} allocator; Ctrl-C to stop",
        o.socket.display(),
        o.gpus,
        o.tokens_per_gpu,
        o.allocator
    );
    if let rtgpu_runtime::daemon::Waiting::Spin { cpu } = o.waiting {
        println!(
            "spinning: polls without sleeping{} (one CPU kept busy; hand-offs cost one wake-up)",
            cpu.map(|c| format!(" on CPU {c}")).unwrap_or_default()
        );
    }
    match rtgpu_runtime::daemon::serve(o.socket, &config, o.waiting, &STOP) {
        Ok(s) => {
            println!(
                "stopped: {} client(s), {} died holding or waiting (their holdings released), \
                 {} token and {} engine-lock grants",
                s.clients, s.crashed_clients, s.token_grants, s.lock_grants
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("rtgpu: daemon on {}: {e}", o.socket.display());
            ExitCode::from(2)
        }
    }
}
