//! # rtgpu-capi
//!
//! The C ABI of rtgpu's in-process GPU arbiter (`include/rtgpu.h`), for
//! CUDA C/C++ programs: opaque handles for the arbiter, a registered client
//! thread, a held GPU token and a held engine lock. Functions that return a
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

use rtgpu_runtime::arbiter::{
    Arbiter, ArbiterConfig, Client, Engine, EngineGuard, QueueRule, TokenConfig, TokenGuard,
};

/// `rtgpu_arbiter` in C.
pub struct rtgpu_arbiter(Arc<Arbiter>, usize);
/// `rtgpu_client` in C.
pub struct rtgpu_client(Client, usize);
/// `rtgpu_token` in C.
pub struct rtgpu_token(TokenGuard, usize);
/// `rtgpu_lock` in C.
pub struct rtgpu_lock(#[allow(dead_code)] EngineGuard);

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
        let (rule, stealing) = match name.as_str() {
            "gpusync" => (QueueRule::EarliestCompletion, false),
            "shortest-queue" => (QueueRule::ShortestQueue, false),
            "k-fmlp" => (QueueRule::LAware, true),
            "static" => (QueueRule::Static, false),
            other => {
                return Err(format!(
                "unknown allocator {other:?}: expected gpusync, shortest-queue, k-fmlp or static"
            ))
            }
        };
        if gpus == 0 {
            return Err("gpus must be at least 1".to_string());
        }
        if !(1..=2).contains(&copy_engines) {
            return Err(format!("copy_engines must be 1 or 2, got {copy_engines}"));
        }
        if tokens_per_gpu == 0 {
            return Err("tokens_per_gpu must be at least 1".to_string());
        }
        let gpus = gpus as usize;
        let arbiter = Arbiter::new(&ArbiterConfig {
            copy_engines: vec![copy_engines as u8; gpus],
            tokens: TokenConfig {
                gpus,
                tokens_per_gpu: tokens_per_gpu as usize,
                rule,
                stealing,
            },
            distance: Vec::new(),
            engine_locks: engine_locks != 0,
            apply_priorities: true,
            priors: Vec::new(),
        });
        Ok(Box::new(rtgpu_arbiter(arbiter, gpus)))
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
        let prio = u8::try_from(fifo_priority)
            .ok()
            .filter(|p| (1..=99).contains(p))
            .ok_or_else(|| format!("fifo_priority must be 1..=99, got {fifo_priority}"))?;
        let c = a.0.register(prio).map_err(|e| e.to_string())?;
        Ok(Box::new(rtgpu_client(c, a.1)))
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
        let gpus = c.1;
        Ok(Box::new(rtgpu_token(t, gpus)))
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
        let src = src_gpu as usize;
        if src >= t.1 {
            return Err(format!(
                "src_gpu {src} is out of range: the arbiter has {} GPU(s)",
                t.1
            ));
        }
        let g =
            t.0.locks(&[(src, Engine::CopyOut), (t.0.gpu(), Engine::CopyIn)])
                .map_err(|e| e.to_string())?;
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
