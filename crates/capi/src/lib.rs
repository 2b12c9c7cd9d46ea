//! # rtgpu-capi
//!
//! The C ABI of rtgpu's GPU arbiter (`include/rtgpu.h`), for CUDA C/C++
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

use std::cell::RefCell;
use std::ffi::{c_char, c_int, c_uint, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use rtgpu_runtime::arbiter::{Arbiter, ArbiterConfig, Engine};
use rtgpu_runtime::client::{AnyClient, AnyLock, AnyToken};

/// `rtgpu_arbiter` in C.
pub struct rtgpu_arbiter(Arc<Arbiter>);
/// `rtgpu_client` in C.
pub struct rtgpu_client(AnyClient);
/// `rtgpu_token` in C.
pub struct rtgpu_token(AnyToken);
/// `rtgpu_lock` in C.
pub struct rtgpu_lock(#[allow(dead_code)] AnyLock);

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

/// # Safety
/// `arbiter` is NULL or from [`rtgpu_arbiter_new`], freed once.
#[no_mangle]
pub unsafe extern "C" fn rtgpu_arbiter_free(arbiter: *mut rtgpu_arbiter) {
    // SAFETY: per the contract.
    unsafe { free(arbiter) }
}

/// # Safety
/// `arbiter` is a live handle from [`rtgpu_arbiter_new`].
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

/// Connects the calling thread to `rtgpu daemon` at `socket` (NULL: the
/// daemon's default path) with base SCHED_FIFO priority `fifo_priority`.
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

/// # Safety
/// `client` is NULL or from [`rtgpu_register`], freed once.
#[no_mangle]
pub unsafe extern "C" fn rtgpu_client_free(client: *mut rtgpu_client) {
    // SAFETY: per the contract.
    unsafe { free(client) }
}

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

/// # Safety
/// `token` is NULL or from [`rtgpu_token_acquire`], released once.
#[no_mangle]
pub unsafe extern "C" fn rtgpu_token_release(token: *mut rtgpu_token) {
    // SAFETY: per the contract.
    unsafe { free(token) }
}

/// # Safety
/// `token` is a live handle from [`rtgpu_token_acquire`].
#[no_mangle]
pub unsafe extern "C" fn rtgpu_engine_lock(
    token: *mut rtgpu_token,
    engine: c_int,
) -> *mut rtgpu_lock {
    guarded(|| {
        // SAFETY: a live handle per the contract.
        let t = unsafe { token.as_ref() }.ok_or("token is NULL")?;
        let e = match engine {
            0 => Engine::Exec,
            1 => Engine::CopyIn,
            2 => Engine::CopyOut,
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

/// # Safety
/// `token` is a live handle from [`rtgpu_token_acquire`].
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

/// # Safety
/// `lock` is NULL or from an engine-lock function, unlocked once.
#[no_mangle]
pub unsafe extern "C" fn rtgpu_engine_unlock(lock: *mut rtgpu_lock) {
    // SAFETY: per the contract.
    unsafe { free(lock) }
}

/// The calling thread's last error message (empty if none). Valid until
/// the thread's next failing call.
#[no_mangle]
pub extern "C" fn rtgpu_last_error() -> *const c_char {
    LAST_ERROR.with(|e| e.borrow().as_ptr())
}
