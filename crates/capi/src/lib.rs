//! # rtgpu-capi
//!
//! The C ABI of rtgpu's GPU arbiter (`include/rtgpu.h`, generated from
//! this file by cbindgen: `tests/header.rs` fails when it is stale, and
//! `RTGPU_BLESS=1 cargo test -p rtgpu-capi --test header` rewrites it), for CUDA C/C++
//! programs: opaque handles for the in-process arbiter, a registered client
//! thread (of the in-process arbiter or of `rtgpu daemon`), a held GPU token
//! and a held engine lock. Functions that return a
//! handle return NULL on error and leave the reason in a thread-local
//! message ([`rtgpu_last_error`]). No panic crosses the boundary: every entry
//! point catches unwinding and reports it as an error.
//!
//! Build and install: `scripts/install-capi.sh PREFIX` (library, header and
//! pkg-config file); the test `tests/c_client.rs` compiles and runs a C
//! program against the built library.

#![allow(non_camel_case_types)]
#![allow(clippy::enum_variant_names)]

use std::cell::RefCell;
use std::ffi::{c_char, c_int, c_uint, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use rtgpu_runtime::arbiter::{Arbiter, ArbiterConfig, Engine};
use rtgpu_runtime::client::{AnyClient, AnyLock, AnyToken};

/// An arbiter of this process: GPUs, their tokens and engine locks.
pub struct rtgpu_arbiter(Arc<Arbiter>);
/// A registered thread, of this process's arbiter or of `rtgpu daemon`.
pub struct rtgpu_client(AnyClient);
/// A held GPU token.
pub struct rtgpu_token(AnyToken);
/// A held engine lock.
pub struct rtgpu_lock(#[allow(dead_code)] AnyLock);

/// The engines of a GPU, for `rtgpu_engine_lock`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum rtgpu_engine {
    /// The execution engine.
    RTGPU_EXEC = 0,
    /// The host-to-device copy engine.
    RTGPU_COPY_IN = 1,
    /// The device-to-host copy engine (the same one on a GPU with one).
    RTGPU_COPY_OUT = 2,
}

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

fn set_error(msg: impl Into<String>) {
    let msg = msg.into().replace('\0', " ");
    LAST_ERROR.with(|e| *e.borrow_mut() = CString::new(msg).unwrap_or_default());
}

/// Runs `f`, turning an `Err` or a panic into NULL and the thread's error.
fn guarded<T>(f: impl FnOnce() -> Result<Box<T>, String>) -> *mut T {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(b)) => Box::into_raw(b),
        Ok(Err(msg)) => {
            set_error(msg);
            std::ptr::null_mut()
        }
        Err(_) => {
            set_error("internal error (a panic inside rtgpu)");
            std::ptr::null_mut()
        }
    }
}

/// Frees a handle made by `Box::into_raw`, catching a panic in its drop.
///
/// # Safety
/// `p` is NULL or a handle of type `T` from this library, freed once.
unsafe fn free<T>(p: *mut T) {
    if !p.is_null() {
        // SAFETY: per the function's contract.
        let b = unsafe { Box::from_raw(p) };
        let _ = catch_unwind(AssertUnwindSafe(move || drop(b)));
    }
}

/// An arbiter of `gpus` GPUs with `copy_engines` copy engines (1 or 2) and
/// `tokens_per_gpu` tokens each; `allocator` is "gpusync" (NULL),
/// "shortest-queue", "k-fmlp" or "static"; `engine_locks` non-zero to
/// arbitrate the engines too.
///
/// # Safety
/// `allocator` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn rtgpu_arbiter_new(
    gpus: c_uint,
    copy_engines: c_uint,
    tokens_per_gpu: c_uint,
    allocator: *const c_char,
    engine_locks: c_int,
) -> *mut rtgpu_arbiter {
    guarded(|| {
        let name = if allocator.is_null() {
            "gpusync".to_string()
        } else {
            // SAFETY: a NUL-terminated string per the contract.
            unsafe { CStr::from_ptr(allocator) }
                .to_string_lossy()
                .into_owned()
        };
        let config = ArbiterConfig::uniform(
            gpus as usize,
            u64::from(copy_engines),
            tokens_per_gpu as usize,
            &name,
            engine_locks != 0,
            true,
        )
        .map_err(|e| e.to_string())?;
        let arbiter = Arbiter::new(&config);
        Ok(Box::new(rtgpu_arbiter(arbiter)))
    })
}

/// Frees an arbiter (NULL: nothing). Its clients, tokens and locks keep
/// what they need of it.
///
/// # Safety
/// `arbiter` is NULL or from `rtgpu_arbiter_new`, freed once.
#[no_mangle]
pub unsafe extern "C" fn rtgpu_arbiter_free(arbiter: *mut rtgpu_arbiter) {
    // SAFETY: per the contract.
    unsafe { free(arbiter) }
}

/// Registers the calling thread with its base SCHED_FIFO priority (1-99).
///
/// # Safety
/// `arbiter` is a live handle from `rtgpu_arbiter_new`.
#[no_mangle]
pub unsafe extern "C" fn rtgpu_register(
    arbiter: *mut rtgpu_arbiter,
    fifo_priority: c_int,
) -> *mut rtgpu_client {
    guarded(|| {
        // SAFETY: a live handle per the contract.
        let a = unsafe { arbiter.as_ref() }.ok_or("arbiter is NULL")?;
        let c = AnyClient::local(&a.0, fifo(fifo_priority)?).map_err(|e| e.to_string())?;
        Ok(Box::new(rtgpu_client(c)))
    })
}

fn fifo(fifo_priority: c_int) -> Result<u8, String> {
    u8::try_from(fifo_priority)
        .ok()
        .filter(|p| (1..=99).contains(p))
        .ok_or_else(|| format!("fifo_priority must be 1..=99, got {fifo_priority}"))
}

/// Cross-process mode: connects the calling thread to `rtgpu daemon` at
/// `socket` (NULL: /tmp/rtgpud.sock) with its base SCHED_FIFO priority
/// (1-99). The token and lock calls work the same on such a client; if this
/// process dies, the daemon releases whatever it held at once.
///
/// # Safety
/// `socket` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn rtgpu_connect(
    socket: *const c_char,
    fifo_priority: c_int,
) -> *mut rtgpu_client {
    guarded(|| {
        let path = if socket.is_null() {
            rtgpu_runtime::daemon::DEFAULT_SOCKET.to_string()
        } else {
            // SAFETY: a NUL-terminated string per the contract.
            unsafe { CStr::from_ptr(socket) }
                .to_string_lossy()
                .into_owned()
        };
        let c = AnyClient::connect(std::path::Path::new(&path), fifo(fifo_priority)?)
            .map_err(|e| format!("{path}: {e}"))?;
        Ok(Box::new(rtgpu_client(c)))
    })
}

/// Frees a client (NULL: nothing).
///
/// # Safety
/// `client` is NULL or from `rtgpu_register` or `rtgpu_connect`, freed once.
#[no_mangle]
pub unsafe extern "C" fn rtgpu_client_free(client: *mut rtgpu_client) {
    // SAFETY: per the contract.
    unsafe { free(client) }
}

/// Blocks until a GPU token is granted; `*gpu_out` (if not NULL) gets its
/// GPU. `hold_ns`: the worst-case time the token is held (the allocator's
/// queue choice).
///
/// # Safety
/// `client` is a live handle; `gpu_out` is NULL or points to an int.
#[no_mangle]
pub unsafe extern "C" fn rtgpu_token_acquire(
    client: *mut rtgpu_client,
    hold_ns: u64,
    gpu_out: *mut c_int,
) -> *mut rtgpu_token {
    let p = guarded(|| {
        // SAFETY: a live handle per the contract.
        let c = unsafe { client.as_ref() }.ok_or("client is NULL")?;
        let t = c.0.token(0, hold_ns, None, 0).map_err(|e| e.to_string())?;
        Ok(Box::new(rtgpu_token(t)))
    });
    if !p.is_null() && !gpu_out.is_null() {
        // SAFETY: p is the token just made; gpu_out points to an int.
        unsafe { *gpu_out = c_int::try_from((*p).0.gpu()).unwrap_or(-1) };
    }
    p
}

/// Releases a token (NULL: nothing).
///
/// # Safety
/// `token` is NULL or from `rtgpu_token_acquire`, released once.
#[no_mangle]
pub unsafe extern "C" fn rtgpu_token_release(token: *mut rtgpu_token) {
    // SAFETY: per the contract.
    unsafe { free(token) }
}

/// Blocks until the engine lock (an `rtgpu_engine`) of the token's GPU is
/// granted.
///
/// # Safety
/// `token` is a live handle from `rtgpu_token_acquire`.
#[no_mangle]
pub unsafe extern "C" fn rtgpu_engine_lock(
    token: *mut rtgpu_token,
    engine: c_int,
) -> *mut rtgpu_lock {
    guarded(|| {
        // SAFETY: a live handle per the contract.
        let t = unsafe { token.as_ref() }.ok_or("token is NULL")?;
        let e = match engine {
            x if x == rtgpu_engine::RTGPU_EXEC as c_int => Engine::Exec,
            x if x == rtgpu_engine::RTGPU_COPY_IN as c_int => Engine::CopyIn,
            x if x == rtgpu_engine::RTGPU_COPY_OUT as c_int => Engine::CopyOut,
            other => {
                return Err(format!(
                    "engine must be RTGPU_EXEC, RTGPU_COPY_IN or RTGPU_COPY_OUT, got {other}"
                ))
            }
        };
        let g = t.0.engine(e).map_err(|e| e.to_string())?;
        Ok(Box::new(rtgpu_lock(g)))
    })
}

/// Both copy locks of a peer copy from `src_gpu` to the token's GPU,
/// atomically.
///
/// # Safety
/// `token` is a live handle from `rtgpu_token_acquire`.
#[no_mangle]
pub unsafe extern "C" fn rtgpu_peer_copy_lock(
    token: *mut rtgpu_token,
    src_gpu: c_uint,
) -> *mut rtgpu_lock {
    guarded(|| {
        // SAFETY: a live handle per the contract.
        let t = unsafe { token.as_ref() }.ok_or("token is NULL")?;
        let g = t.0.peer_copy(src_gpu as usize).map_err(|e| e.to_string())?;
        Ok(Box::new(rtgpu_lock(g)))
    })
}

/// Unlocks an engine lock (NULL: nothing).
///
/// # Safety
/// `lock` is NULL or from an engine-lock function, unlocked once.
#[no_mangle]
pub unsafe extern "C" fn rtgpu_engine_unlock(lock: *mut rtgpu_lock) {
    // SAFETY: per the contract.
    unsafe { free(lock) }
}

/// Why the calling thread's last call that returned NULL failed (empty if
/// none). Valid until the thread's next failing call.
#[no_mangle]
pub extern "C" fn rtgpu_last_error() -> *const c_char {
    LAST_ERROR.with(|e| e.borrow().as_ptr())
}
