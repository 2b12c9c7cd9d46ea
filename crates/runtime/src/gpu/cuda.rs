//! The CUDA backend: the NVIDIA driver API loaded at run time from
//! `libcuda.so.1` (the driver's own library, present wherever the driver is),
//! so rtgpu builds and runs its tests on machines without CUDA and says
//! plainly why the backend is unavailable there.
//!
//! Per GPU it keeps the primary context, one non-blocking stream per engine
//! (execution, host-to-device, device-to-host: GPUSync's engines, seed 004
//! §2), pinned host and device scratch buffers that grow on demand, and a
//! spin kernel loaded from PTX. A kernel of modelled duration `ns` is one
//! thread that spins on `%globaltimer` (nanoseconds) until `ns` have
//! passed: it occupies the execution engine for that long on any GPU
//! without a calibration step. Durations are measured with CUDA events
//! around the operation on its stream; the caller waits on a blocking-sync
//! event, so it sleeps (self-suspends) rather than spinning.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::sync::{Arc, Mutex};

use libloading::Library;

use super::{check_gpu, Bytes, CopyDir, DeviceInfo, GpuBackend, GpuError, GpuOp, InFlight, OnDone};
use crate::os::Nanos;

type CuResult = c_int;
type CuDevice = c_int;
type CuDevicePtr = u64;
type Handle = *mut c_void;
type HostFn = unsafe extern "C" fn(*mut c_void);

const CUDA_SUCCESS: CuResult = 0;
const CU_STREAM_NON_BLOCKING: c_uint = 1;
const CU_EVENT_BLOCKING_SYNC: c_uint = 1;
const CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: c_int = 33;
const CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: c_int = 34;
const CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: c_int = 40;
const CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID: c_int = 50;

/// The spin kernel: waits until `%globaltimer` has advanced by `ns`.
const SPIN_PTX: &str = "\
.version 7.0
.target sm_70
.address_size 64

.visible .entry rtgpu_spin(.param .u64 ns)
{
    .reg .pred %p;
    .reg .b64 %d, %t0, %t1, %e;
    ld.param.u64 %d, [ns];
    mov.u64 %t0, %globaltimer;
SPIN:
    mov.u64 %t1, %globaltimer;
    sub.u64 %e, %t1, %t0;
    setp.lt.u64 %p, %e, %d;
    @%p bra SPIN;
    ret;
}
\0";

/// The driver entry points rtgpu uses, resolved once from libcuda.so.1.
struct Api {
    cu_init: unsafe extern "C" fn(c_uint) -> CuResult,
    cu_driver_get_version: unsafe extern "C" fn(*mut c_int) -> CuResult,
    cu_device_get_count: unsafe extern "C" fn(*mut c_int) -> CuResult,
    cu_device_get: unsafe extern "C" fn(*mut CuDevice, c_int) -> CuResult,
    cu_device_get_name: unsafe extern "C" fn(*mut c_char, c_int, CuDevice) -> CuResult,
    cu_device_total_mem: unsafe extern "C" fn(*mut usize, CuDevice) -> CuResult,
    cu_device_get_attribute: unsafe extern "C" fn(*mut c_int, c_int, CuDevice) -> CuResult,
    cu_device_can_access_peer: unsafe extern "C" fn(*mut c_int, CuDevice, CuDevice) -> CuResult,
    cu_primary_ctx_retain: unsafe extern "C" fn(*mut Handle, CuDevice) -> CuResult,
    cu_primary_ctx_release: unsafe extern "C" fn(CuDevice) -> CuResult,
    cu_ctx_set_current: unsafe extern "C" fn(Handle) -> CuResult,
    cu_ctx_enable_peer_access: unsafe extern "C" fn(Handle, c_uint) -> CuResult,
    cu_stream_create: unsafe extern "C" fn(*mut Handle, c_uint) -> CuResult,
    cu_stream_destroy: unsafe extern "C" fn(Handle) -> CuResult,
    cu_event_create: unsafe extern "C" fn(*mut Handle, c_uint) -> CuResult,
    cu_event_destroy: unsafe extern "C" fn(Handle) -> CuResult,
    cu_event_record: unsafe extern "C" fn(Handle, Handle) -> CuResult,
    cu_event_synchronize: unsafe extern "C" fn(Handle) -> CuResult,
    cu_event_elapsed_time: unsafe extern "C" fn(*mut f32, Handle, Handle) -> CuResult,
    cu_mem_alloc: unsafe extern "C" fn(*mut CuDevicePtr, usize) -> CuResult,
    cu_mem_free: unsafe extern "C" fn(CuDevicePtr) -> CuResult,
    cu_mem_alloc_host: unsafe extern "C" fn(*mut *mut c_void, usize) -> CuResult,
    cu_mem_free_host: unsafe extern "C" fn(*mut c_void) -> CuResult,
    cu_memcpy_htod_async:
        unsafe extern "C" fn(CuDevicePtr, *const c_void, usize, Handle) -> CuResult,
    cu_memcpy_dtoh_async: unsafe extern "C" fn(*mut c_void, CuDevicePtr, usize, Handle) -> CuResult,
    cu_memcpy_peer_async:
        unsafe extern "C" fn(CuDevicePtr, Handle, CuDevicePtr, Handle, usize, Handle) -> CuResult,
    cu_memset_d8_async: unsafe extern "C" fn(CuDevicePtr, u8, usize, Handle) -> CuResult,
    cu_stream_synchronize: unsafe extern "C" fn(Handle) -> CuResult,
    cu_module_load_data: unsafe extern "C" fn(*mut Handle, *const c_void) -> CuResult,
    cu_module_get_function: unsafe extern "C" fn(*mut Handle, Handle, *const c_char) -> CuResult,
    #[allow(clippy::type_complexity)]
    cu_launch_kernel: unsafe extern "C" fn(
        Handle,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        Handle,
        *mut *mut c_void,
        *mut *mut c_void,
    ) -> CuResult,
    cu_get_error_name: unsafe extern "C" fn(CuResult, *mut *const c_char) -> CuResult,
    cu_get_error_string: unsafe extern "C" fn(CuResult, *mut *const c_char) -> CuResult,
    /// cuLaunchHostFunc (CUDA 10.0+): the completion signal of submitted
    /// operations.
    cu_launch_host_func: unsafe extern "C" fn(Handle, HostFn, *mut c_void) -> CuResult,
    // Keeps the library mapped as long as the function pointers live.
    _lib: Library,
}

impl Api {
    fn load(path: &str) -> Result<Api, GpuError> {
        // SAFETY: loading the NVIDIA driver library runs its initialisers,
        // which is what every CUDA program does.
        let lib = unsafe { Library::new(path) }.map_err(|e| {
            GpuError::Unavailable(format!(
                "cannot load the NVIDIA driver library {path}: {e}. Is the NVIDIA driver \
                 installed? Without a GPU, use the emulated backend (`--backend emulated`; \
                 `auto`, the default, falls back to it)."
            ))
        })?;
        macro_rules! sym {
            ($name:literal) => {{
                // SAFETY: the symbol's type is the driver API's documented
                // prototype (cuda.h), written out in the field's type.
                let s = unsafe { lib.get(concat!($name, "\0").as_bytes()) }.map_err(|e| {
                    GpuError::Unavailable(format!("{path} lacks {}: {e} (driver too old?)", $name))
                })?;
                *s
            }};
        }
        Ok(Api {
            cu_init: sym!("cuInit"),
            cu_driver_get_version: sym!("cuDriverGetVersion"),
            cu_device_get_count: sym!("cuDeviceGetCount"),
            cu_device_get: sym!("cuDeviceGet"),
            cu_device_get_name: sym!("cuDeviceGetName"),
            cu_device_total_mem: sym!("cuDeviceTotalMem_v2"),
            cu_device_get_attribute: sym!("cuDeviceGetAttribute"),
            cu_device_can_access_peer: sym!("cuDeviceCanAccessPeer"),
            cu_primary_ctx_retain: sym!("cuDevicePrimaryCtxRetain"),
            cu_primary_ctx_release: sym!("cuDevicePrimaryCtxRelease_v2"),
            cu_ctx_set_current: sym!("cuCtxSetCurrent"),
            cu_ctx_enable_peer_access: sym!("cuCtxEnablePeerAccess"),
            cu_stream_create: sym!("cuStreamCreate"),
            cu_stream_destroy: sym!("cuStreamDestroy_v2"),
            cu_event_create: sym!("cuEventCreate"),
            cu_event_destroy: sym!("cuEventDestroy_v2"),
            cu_event_record: sym!("cuEventRecord"),
            cu_event_synchronize: sym!("cuEventSynchronize"),
            cu_event_elapsed_time: sym!("cuEventElapsedTime"),
            cu_mem_alloc: sym!("cuMemAlloc_v2"),
            cu_mem_free: sym!("cuMemFree_v2"),
            cu_mem_alloc_host: sym!("cuMemAllocHost_v2"),
            cu_mem_free_host: sym!("cuMemFreeHost"),
            cu_memcpy_htod_async: sym!("cuMemcpyHtoDAsync_v2"),
            cu_memcpy_dtoh_async: sym!("cuMemcpyDtoHAsync_v2"),
            cu_memcpy_peer_async: sym!("cuMemcpyPeerAsync"),
            cu_memset_d8_async: sym!("cuMemsetD8Async"),
            cu_stream_synchronize: sym!("cuStreamSynchronize"),
            cu_module_load_data: sym!("cuModuleLoadData"),
            cu_module_get_function: sym!("cuModuleGetFunction"),
            cu_launch_kernel: sym!("cuLaunchKernel"),
            cu_get_error_name: sym!("cuGetErrorName"),
            cu_get_error_string: sym!("cuGetErrorString"),
            cu_launch_host_func: sym!("cuLaunchHostFunc"),
            _lib: lib,
        })
    }

    fn check(&self, call: &'static str, rc: CuResult) -> Result<(), GpuError> {
        if rc == CUDA_SUCCESS {
            return Ok(());
        }
        let text = |f: unsafe extern "C" fn(CuResult, *mut *const c_char) -> CuResult| {
            let mut p: *const c_char = std::ptr::null();
            // SAFETY: the driver returns a pointer to a static string or an error.
            if unsafe { f(rc, &mut p) } == CUDA_SUCCESS && !p.is_null() {
                // SAFETY: non-null, NUL-terminated static string from the driver.
                unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
            } else {
                "unknown error".to_string()
            }
        };
        Err(GpuError::Cuda {
            call,
            code: rc,
            name: text(self.cu_get_error_name),
            description: text(self.cu_get_error_string),
        })
    }
}

/// Scratch buffers of one GPU, grown on demand; the contents do not matter
/// for modelled copies. Outgrown buffers are retired, not freed, until the
/// backend is dropped: a copy still in flight on another thread may use them
/// (geometric growth bounds the waste below the current size).
struct Buffers {
    host: *mut c_void,
    device: CuDevicePtr,
    capacity: usize,
    retired: Vec<(*mut c_void, CuDevicePtr)>,
}

/// One engine's stream; its mutex makes "record start, enqueue, record end"
/// atomic so concurrent callers never interleave inside one measurement.
struct Stream {
    handle: Handle,
    lock: Mutex<()>,
}

struct Gpu {
    device: CuDevice,
    context: Handle,
    exec: Stream,
    h2d: Stream,
    /// None on a GPU with one copy engine: copies out queue on `h2d`, so
    /// that copies in both directions execute in submission order, as
    /// [`GpuBackend`]'s contract and the device-side hand-off of the shared
    /// copy lock require.
    d2h: Option<Stream>,
    spin: Handle,
    buffers: Mutex<Buffers>,
}

impl Gpu {
    /// The stream of the outgoing copy engine (the only one's, if one).
    fn copy_out(&self) -> &Stream {
        self.d2h.as_ref().unwrap_or(&self.h2d)
    }
}

/// The CUDA backend. Construct with [`CudaBackend::open`].
pub struct CudaBackend {
    api: Arc<Api>,
    driver_version: i32,
    devices: Vec<DeviceInfo>,
    gpus: Vec<Gpu>,
}

// SAFETY: CUDA driver handles are usable from any thread once the context
// is made current (every call here does so first); the raw buffer pointers
// are only touched under their mutex.
unsafe impl Send for CudaBackend {}
// SAFETY: see Send; shared access goes through the per-stream and
// per-buffer mutexes.
unsafe impl Sync for CudaBackend {}

impl CudaBackend {
    /// Loads `libcuda.so.1` and opens every GPU.
    pub fn open() -> Result<CudaBackend, GpuError> {
        Self::open_library("libcuda.so.1")
    }

    /// As [`CudaBackend::open`], from a given library path (tests use a
    /// missing path to check the error).
    pub fn open_library(path: &str) -> Result<CudaBackend, GpuError> {
        let api = Api::load(path)?;
        // SAFETY: plain driver calls with valid out-pointers throughout.
        unsafe {
            api.check("cuInit", (api.cu_init)(0))?;
            let mut version = 0;
            api.check(
                "cuDriverGetVersion",
                (api.cu_driver_get_version)(&mut version),
            )?;
            let mut count = 0;
            api.check("cuDeviceGetCount", (api.cu_device_get_count)(&mut count))?;
            if count <= 0 {
                return Err(GpuError::Unavailable(
                    "the NVIDIA driver is loaded but reports no GPU".to_string(),
                ));
            }
            let mut backend = CudaBackend {
                api: Arc::new(api),
                driver_version: version,
                devices: Vec::new(),
                gpus: Vec::new(),
            };
            for ordinal in 0..count {
                backend.open_gpu(ordinal)?;
            }
            backend.enable_peer_access();
            Ok(backend)
        }
    }

    /// # Safety
    /// Driver calls with valid out-pointers; `self.api` is loaded.
    unsafe fn open_gpu(&mut self, ordinal: c_int) -> Result<(), GpuError> {
        let api = &self.api;
        let mut dev: CuDevice = 0;
        api.check("cuDeviceGet", (api.cu_device_get)(&mut dev, ordinal))?;
        let mut name = [0 as c_char; 256];
        api.check(
            "cuDeviceGetName",
            (api.cu_device_get_name)(name.as_mut_ptr(), name.len() as c_int, dev),
        )?;
        let name = CStr::from_ptr(name.as_ptr()).to_string_lossy().into_owned();
        let mut memory = 0usize;
        api.check(
            "cuDeviceTotalMem",
            (api.cu_device_total_mem)(&mut memory, dev),
        )?;
        let attr = |a: c_int| -> Result<c_int, GpuError> {
            let mut v = 0;
            api.check(
                "cuDeviceGetAttribute",
                (api.cu_device_get_attribute)(&mut v, a, dev),
            )?;
            Ok(v)
        };
        let engines = attr(CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT)?;
        let pci = format!(
            "{:04x}:{:02x}:{:02x}",
            attr(CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID)?,
            attr(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID)?,
            attr(CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID)?
        );
        let mut ctx: Handle = std::ptr::null_mut();
        api.check(
            "cuDevicePrimaryCtxRetain",
            (api.cu_primary_ctx_retain)(&mut ctx, dev),
        )?;
        api.check("cuCtxSetCurrent", (api.cu_ctx_set_current)(ctx))?;
        let stream = || -> Result<Stream, GpuError> {
            let mut s: Handle = std::ptr::null_mut();
            api.check(
                "cuStreamCreate",
                (api.cu_stream_create)(&mut s, CU_STREAM_NON_BLOCKING),
            )?;
            Ok(Stream {
                handle: s,
                lock: Mutex::new(()),
            })
        };
        let (exec, h2d) = (stream()?, stream()?);
        let d2h = if engines >= 2 { Some(stream()?) } else { None };
        let mut module: Handle = std::ptr::null_mut();
        api.check(
            "cuModuleLoadData (spin kernel PTX)",
            (api.cu_module_load_data)(&mut module, SPIN_PTX.as_ptr().cast()),
        )?;
        let mut spin: Handle = std::ptr::null_mut();
        api.check(
            "cuModuleGetFunction",
            (api.cu_module_get_function)(&mut spin, module, c"rtgpu_spin".as_ptr()),
        )?;
        self.devices.push(DeviceInfo {
            index: self.gpus.len(),
            name,
            copy_engines: u8::try_from(engines.clamp(1, 2)).unwrap_or(1),
            memory: memory as u64,
            pci_bus_id: Some(pci),
        });
        self.gpus.push(Gpu {
            device: dev,
            context: ctx,
            exec,
            h2d,
            d2h,
            spin,
            buffers: Mutex::new(Buffers {
                host: std::ptr::null_mut(),
                device: 0,
                capacity: 0,
                retired: Vec::new(),
            }),
        });
        Ok(())
    }

    /// Enables peer access between every pair of GPUs that supports it;
    /// where it is not supported, peer copies go through host memory (the
    /// driver does that itself in cuMemcpyPeer).
    fn enable_peer_access(&self) {
        for a in &self.gpus {
            for b in &self.gpus {
                if a.device == b.device {
                    continue;
                }
                let mut can = 0;
                // SAFETY: valid out-pointer and devices.
                unsafe {
                    if (self.api.cu_device_can_access_peer)(&mut can, a.device, b.device)
                        == CUDA_SUCCESS
                        && can == 1
                        && (self.api.cu_ctx_set_current)(a.context) == CUDA_SUCCESS
                    {
                        let _ = (self.api.cu_ctx_enable_peer_access)(b.context, 0);
                    }
                }
            }
        }
    }

    /// The driver version, e.g. 13000 for CUDA 13.0.
    pub fn driver_version(&self) -> i32 {
        self.driver_version
    }

    fn gpu(&self, gpu: usize) -> Result<&Gpu, GpuError> {
        check_gpu(&self.devices, gpu)?;
        let g = &self.gpus[gpu];
        // SAFETY: a retained primary context.
        self.api.check("cuCtxSetCurrent", unsafe {
            (self.api.cu_ctx_set_current)(g.context)
        })?;
        Ok(g)
    }

    /// Grows a GPU's scratch buffers to at least `bytes`; returns (host, device).
    fn buffers(&self, g: &Gpu, bytes: usize) -> Result<(*mut c_void, CuDevicePtr), GpuError> {
        let mut b = g
            .buffers
            .lock()
            .map_err(|_| GpuError::Stopped("a buffer lock was poisoned".to_string()))?;
        if b.capacity < bytes {
            let api = &self.api;
            let capacity = bytes.next_power_of_two();
            // SAFETY: allocation calls with valid out-pointers.
            unsafe {
                let mut host = std::ptr::null_mut();
                api.check(
                    "cuMemAllocHost",
                    (api.cu_mem_alloc_host)(&mut host, capacity),
                )?;
                let mut dev = 0;
                if let Err(e) = api.check("cuMemAlloc", (api.cu_mem_alloc)(&mut dev, capacity)) {
                    (api.cu_mem_free_host)(host);
                    return Err(e);
                }
                if !b.host.is_null() {
                    let old = (b.host, b.device);
                    b.retired.push(old);
                }
                b.host = host;
                b.device = dev;
                b.capacity = capacity;
            }
        }
        Ok((b.host, b.device))
    }

    /// Enqueues `op` on `stream` between two events, waits for the end
    /// event (sleeping, blocking-sync), and returns the device time.
    fn timed(
        &self,
        stream: &Stream,
        op: impl FnOnce(Handle) -> Result<(), GpuError>,
    ) -> Result<Nanos, GpuError> {
        let (start, end) = self.enqueue_timed(stream, op, None)?;
        finish_timed(&self.api, start, end)
    }

    /// Enqueues `op` on `stream` between two events and, with `on_done`,
    /// a host function after the end event that calls it (the completion
    /// signal). Returns the events; on error nothing stays allocated and
    /// `on_done` is dropped uncalled.
    fn enqueue_timed(
        &self,
        stream: &Stream,
        op: impl FnOnce(Handle) -> Result<(), GpuError>,
        on_done: Option<OnDone>,
    ) -> Result<(Handle, Handle), GpuError> {
        let api = &self.api;
        let mut start: Handle = std::ptr::null_mut();
        let mut end: Handle = std::ptr::null_mut();
        // SAFETY: driver calls with valid handles; events are destroyed below
        // on every path after creation.
        unsafe {
            api.check("cuEventCreate", (api.cu_event_create)(&mut start, 0))?;
            if let Err(e) = api.check(
                "cuEventCreate",
                (api.cu_event_create)(&mut end, CU_EVENT_BLOCKING_SYNC),
            ) {
                (api.cu_event_destroy)(start);
                return Err(e);
            }
        }
        let result = (|| {
            let _guard = stream
                .lock
                .lock()
                .map_err(|_| GpuError::Stopped("a stream lock was poisoned".to_string()))?;
            // SAFETY: valid events and stream.
            unsafe {
                api.check("cuEventRecord", (api.cu_event_record)(start, stream.handle))?;
                op(stream.handle)?;
                api.check("cuEventRecord", (api.cu_event_record)(end, stream.handle))?;
            }
            if let Some(f) = on_done {
                let data = Box::into_raw(Box::new(f)).cast::<c_void>();
                // SAFETY: host_done takes back the box leaked here; the
                // driver calls it exactly once after the end event.
                let rc = unsafe { (api.cu_launch_host_func)(stream.handle, host_done, data) };
                if rc != CUDA_SUCCESS {
                    // SAFETY: the driver did not take the pointer.
                    drop(unsafe { Box::from_raw(data.cast::<OnDone>()) });
                    api.check("cuLaunchHostFunc", rc)?;
                }
            }
            Ok(())
        })();
        match result {
            Ok(()) => Ok((start, end)),
            Err(e) => {
                // SAFETY: created above; work already enqueued keeps its own
                // reference (cuEventDestroy defers the release).
                unsafe {
                    (api.cu_event_destroy)(start);
                    (api.cu_event_destroy)(end);
                }
                Err(e)
            }
        }
    }

    /// Copies a pattern to the GPU and back and checks every byte: proof that
    /// the copy path moves real data, used by `rtgpu gpu` and the GPU tests.
    pub fn verify_round_trip(&self, gpu: usize, bytes: usize) -> Result<(), GpuError> {
        let g = self.gpu(gpu)?;
        let api = &self.api;
        let pattern = |i: usize| (i as u64).wrapping_mul(2_654_435_761).to_le_bytes()[1];
        let mut host: *mut c_void = std::ptr::null_mut();
        let mut dev: CuDevicePtr = 0;
        // SAFETY: buffers of `bytes` bytes allocated here, used only here
        // (so no other operation can touch them) and freed on every path.
        unsafe {
            api.check(
                "cuMemAllocHost",
                (api.cu_mem_alloc_host)(&mut host, bytes.max(1)),
            )?;
            if let Err(e) = api.check("cuMemAlloc", (api.cu_mem_alloc)(&mut dev, bytes.max(1))) {
                (api.cu_mem_free_host)(host);
                return Err(e);
            }
            let result = (|| {
                let h = std::slice::from_raw_parts_mut(host.cast::<u8>(), bytes);
                for (i, b) in h.iter_mut().enumerate() {
                    *b = pattern(i);
                }
                let s = g.h2d.handle;
                api.check(
                    "cuMemsetD8Async",
                    (api.cu_memset_d8_async)(dev, 0, bytes, s),
                )?;
                api.check(
                    "cuMemcpyHtoDAsync",
                    (api.cu_memcpy_htod_async)(dev, host, bytes, s),
                )?;
                api.check("cuStreamSynchronize", (api.cu_stream_synchronize)(s))?;
                h.fill(0);
                api.check(
                    "cuMemcpyDtoHAsync",
                    (api.cu_memcpy_dtoh_async)(host, dev, bytes, s),
                )?;
                api.check("cuStreamSynchronize", (api.cu_stream_synchronize)(s))?;
                match h.iter().enumerate().position(|(i, &b)| b != pattern(i)) {
                    Some(i) => Err(GpuError::Stopped(format!(
                        "round trip of {bytes} bytes on GPU {gpu} corrupted byte {i}"
                    ))),
                    None => Ok(()),
                }
            })();
            (api.cu_mem_free_host)(host);
            (api.cu_mem_free)(dev);
            result
        }
    }
}

/// Waits for `end` (blocking-sync), returns the time between the events and
/// destroys both.
fn finish_timed(api: &Api, start: Handle, end: Handle) -> Result<Nanos, GpuError> {
    let mut ms = 0f32;
    // SAFETY: valid events recorded by enqueue_timed.
    let result = unsafe {
        api.check("cuEventSynchronize", (api.cu_event_synchronize)(end))
            .and_then(|()| {
                api.check(
                    "cuEventElapsedTime",
                    (api.cu_event_elapsed_time)(&mut ms, start, end),
                )
            })
    };
    // SAFETY: created by enqueue_timed, no longer used.
    unsafe {
        (api.cu_event_destroy)(start);
        (api.cu_event_destroy)(end);
    }
    // Reporting conversion: events resolve about 0.5 us.
    result.map(|()| (f64::from(ms) * 1e6).round() as Nanos)
}

/// The host function of submitted operations: calls their [`OnDone`].
/// Makes no CUDA call (the driver forbids it here) and lets no panic out.
unsafe extern "C" fn host_done(data: *mut c_void) {
    // SAFETY: `data` is the Box<OnDone> leaked by enqueue_timed; the driver
    // calls this once.
    let f = unsafe { Box::from_raw(data.cast::<OnDone>()) };
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || (*f)()));
}

/// An operation submitted to a CUDA stream, with its timing events.
struct CudaInFlight {
    api: Arc<Api>,
    context: Handle,
    start: Handle,
    end: Handle,
}

// SAFETY: CUDA events and contexts may be used from any thread; finish()
// makes the context current on its own thread first.
unsafe impl Send for CudaInFlight {}

impl InFlight for CudaInFlight {
    fn finish(self: Box<Self>) -> Result<Nanos, GpuError> {
        let api = &self.api;
        // SAFETY: a retained primary context (the backend outlives its
        // operations in every rtgpu caller).
        if let Err(e) = api.check("cuCtxSetCurrent", unsafe {
            (api.cu_ctx_set_current)(self.context)
        }) {
            // SAFETY: the events are not used again.
            unsafe {
                (api.cu_event_destroy)(self.start);
                (api.cu_event_destroy)(self.end);
            }
            return Err(e);
        }
        finish_timed(api, self.start, self.end)
    }
}

impl Drop for CudaBackend {
    fn drop(&mut self) {
        let api = &self.api;
        for g in &self.gpus {
            // SAFETY: releasing what open_gpu and buffers() created; errors at
            // teardown are ignored (the process may be exiting).
            unsafe {
                if (api.cu_ctx_set_current)(g.context) != CUDA_SUCCESS {
                    continue;
                }
                for s in [&g.exec, &g.h2d].into_iter().chain(g.d2h.as_ref()) {
                    (api.cu_stream_synchronize)(s.handle);
                    (api.cu_stream_destroy)(s.handle);
                }
                if let Ok(b) = g.buffers.lock() {
                    let current = (!b.host.is_null()).then_some((b.host, b.device));
                    for &(host, dev) in b.retired.iter().chain(current.iter()) {
                        (api.cu_mem_free_host)(host);
                        (api.cu_mem_free)(dev);
                    }
                }
                (api.cu_primary_ctx_release)(g.device);
            }
        }
    }
}

fn host_size(bytes: Bytes) -> Result<usize, GpuError> {
    usize::try_from(bytes).map_err(|_| {
        GpuError::Unavailable(format!(
            "a copy of {bytes} bytes exceeds this host's address space"
        ))
    })
}

impl GpuBackend for CudaBackend {
    fn name(&self) -> &'static str {
        "cuda"
    }

    fn devices(&self) -> &[DeviceInfo] {
        &self.devices
    }

    fn kernel(&self, gpu: usize, ns: Nanos) -> Result<Nanos, GpuError> {
        self.run_op(gpu, GpuOp::Kernel(ns))
    }

    fn copy(&self, gpu: usize, dir: CopyDir, bytes: Bytes) -> Result<Nanos, GpuError> {
        self.run_op(gpu, GpuOp::Copy(dir, bytes))
    }

    fn peer_copy(&self, src: usize, dst: usize, bytes: Bytes) -> Result<Nanos, GpuError> {
        self.run_op(src, GpuOp::PeerCopy { dst, bytes })
    }

    fn submit(
        &self,
        gpu: usize,
        op: GpuOp,
        on_done: OnDone,
    ) -> Result<Box<dyn InFlight>, GpuError> {
        let (stream, context, launch) = self.prepare(gpu, op)?;
        let (start, end) =
            self.enqueue_timed(stream, |s| self.launch(&launch, s), Some(on_done))?;
        Ok(Box::new(CudaInFlight {
            api: Arc::clone(&self.api),
            context,
            start,
            end,
        }))
    }

    /// Every operation on the execution engine's stream, in order (a
    /// stream serializes them; copies on it use the copy engines all the
    /// same), between two events; one blocking-sync wait for the last.
    fn run_sequence(&self, gpu: usize, ops: &[GpuOp]) -> Result<Nanos, GpuError> {
        let launches = ops
            .iter()
            .map(|&op| self.prepare(gpu, op).map(|(_, _, launch)| launch))
            .collect::<Result<Vec<Launch>, GpuError>>()?;
        let g = self.gpu(gpu)?;
        self.timed(&g.exec, |s| {
            launches.iter().try_for_each(|l| self.launch(l, s))
        })
    }
}

/// What one operation enqueues, with its buffers resolved.
enum Launch {
    Kernel {
        spin: Handle,
        ns: Nanos,
    },
    HostToDevice {
        dev: CuDevicePtr,
        host: *mut c_void,
        n: usize,
    },
    DeviceToHost {
        host: *mut c_void,
        dev: CuDevicePtr,
        n: usize,
    },
    Peer {
        dst: CuDevicePtr,
        dst_ctx: Handle,
        src: CuDevicePtr,
        src_ctx: Handle,
        n: usize,
    },
}

impl CudaBackend {
    /// The blocking path: enqueue and wait on a blocking-sync event.
    fn run_op(&self, gpu: usize, op: GpuOp) -> Result<Nanos, GpuError> {
        let (stream, _, launch) = self.prepare(gpu, op)?;
        self.timed(stream, |s| self.launch(&launch, s))
    }

    /// The stream (engine), its context and the launch of `op` on `gpu`;
    /// leaves that context current.
    fn prepare(&self, gpu: usize, op: GpuOp) -> Result<(&Stream, Handle, Launch), GpuError> {
        match op {
            GpuOp::Kernel(ns) => {
                let g = self.gpu(gpu)?;
                Ok((&g.exec, g.context, Launch::Kernel { spin: g.spin, ns }))
            }
            GpuOp::Copy(dir, bytes) => {
                let g = self.gpu(gpu)?;
                let n = host_size(bytes)?;
                let (host, dev) = self.buffers(g, n.max(1))?;
                Ok(match dir {
                    CopyDir::HostToDevice => {
                        (&g.h2d, g.context, Launch::HostToDevice { dev, host, n })
                    }
                    CopyDir::DeviceToHost => (
                        g.copy_out(),
                        g.context,
                        Launch::DeviceToHost { host, dev, n },
                    ),
                })
            }
            GpuOp::PeerCopy { dst, bytes } => {
                let src = gpu;
                let n = host_size(bytes)?;
                let d = self.gpu(dst)?;
                // A device-local copy (src == dst) goes from the first half
                // of a buffer of 2n bytes to the second, so the two ranges
                // never overlap.
                let local = src == dst;
                let (_, dst_base) = self.buffers(d, if local { 2 * n.max(1) } else { n.max(1) })?;
                let dst_ptr = if local { dst_base + n as u64 } else { dst_base };
                let s = self.gpu(src)?;
                let (_, src_ptr) = self.buffers(s, n.max(1))?;
                // On the source's outgoing copy engine: GPUSync's peer
                // migration (seed 004 §4.3) holds the copy locks of both
                // GPUs meanwhile.
                Ok((
                    s.copy_out(),
                    s.context,
                    Launch::Peer {
                        dst: dst_ptr,
                        dst_ctx: d.context,
                        src: src_ptr,
                        src_ctx: s.context,
                        n,
                    },
                ))
            }
        }
    }

    /// Enqueues `launch` on `stream`.
    fn launch(&self, launch: &Launch, stream: Handle) -> Result<(), GpuError> {
        let api = &self.api;
        match *launch {
            Launch::Kernel { spin, ns } => {
                let mut arg: u64 = ns;
                let mut params = [(&mut arg as *mut u64).cast::<c_void>()];
                // SAFETY: one u64 parameter, as the PTX entry declares; the
                // pointer array outlives the launch call (the driver copies it).
                api.check("cuLaunchKernel", unsafe {
                    (api.cu_launch_kernel)(
                        spin,
                        1,
                        1,
                        1,
                        1,
                        1,
                        1,
                        0,
                        stream,
                        params.as_mut_ptr(),
                        std::ptr::null_mut(),
                    )
                })
            }
            // SAFETY: host and device buffers hold at least n bytes.
            Launch::HostToDevice { dev, host, n } => api.check("cuMemcpyHtoDAsync", unsafe {
                (api.cu_memcpy_htod_async)(dev, host, n, stream)
            }),
            // SAFETY: as above.
            Launch::DeviceToHost { host, dev, n } => api.check("cuMemcpyDtoHAsync", unsafe {
                (api.cu_memcpy_dtoh_async)(host, dev, n, stream)
            }),
            Launch::Peer {
                dst,
                dst_ctx,
                src,
                src_ctx,
                n,
            } => {
                // SAFETY: both device buffers hold at least n bytes past the
                // pointers used (checked by the buffer sizes requested).
                api.check("cuMemcpyPeerAsync", unsafe {
                    (api.cu_memcpy_peer_async)(dst, dst_ctx, src, src_ctx, n, stream)
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_driver_library_is_a_clear_error() {
        let err = CudaBackend::open_library("libcuda-rtgpu-does-not-exist.so.1")
            .err()
            .expect("must fail");
        let msg = err.to_string();
        assert!(
            msg.starts_with("GPU backend unavailable: cannot load the NVIDIA driver library"),
            "{msg}"
        );
        assert!(msg.contains("emulated backend"), "{msg}");
    }

    #[test]
    fn the_spin_kernel_ptx_is_nul_terminated_and_declares_its_entry() {
        assert!(SPIN_PTX.ends_with('\0'));
        assert!(SPIN_PTX.contains(".entry rtgpu_spin(.param .u64 ns)"));
    }
}
