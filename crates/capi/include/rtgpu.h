/*
 * rtgpu.h: the C API of rtgpu's GPU arbiter (crates/capi).
 *
 * Wrap your own CUDA calls in a GPU token and engine locks, under the rules
 * the analysis assumes (GPUSync, seed 004 §4; k-FMLP, seed 000 App. A):
 *
 *     rtgpu_arbiter *arb = rtgpu_arbiter_new(1, 2, 2, "gpusync", 1);
 *     rtgpu_client *me = rtgpu_register(arb, 50);     // SCHED_FIFO priority
 *     int gpu;
 *     rtgpu_token *tok = rtgpu_token_acquire(me, 5000000, &gpu);
 *     rtgpu_lock *l = rtgpu_engine_lock(tok, RTGPU_COPY_IN);
 *     cudaMemcpyAsync(...); cudaStreamSynchronize(s);
 *     rtgpu_engine_unlock(l);
 *     l = rtgpu_engine_lock(tok, RTGPU_EXEC);
 *     kernel<<<...>>>(...); cudaStreamSynchronize(s);
 *     rtgpu_engine_unlock(l);
 *     rtgpu_token_release(tok);
 *
 * Functions that return a pointer return NULL on error; rtgpu_last_error()
 * then says why (per thread). Acquire calls block the calling thread.
 * Every handle is freed exactly once by its own function; a client, token
 * or lock keeps what it needs of the arbiter alive, so they may be freed in
 * any order. Link with -lrtgpu (pkg-config --libs rtgpu).
 */

#ifndef RTGPU_H
#define RTGPU_H

/* Generated from crates/capi/src/lib.rs by cbindgen (crates/capi/tests/header.rs): do not edit. */

#include <stdint.h>

// The engines of a GPU, for `rtgpu_engine_lock`.
typedef enum {
    // The execution engine.
    RTGPU_EXEC = 0,
    // The host-to-device copy engine.
    RTGPU_COPY_IN = 1,
    // The device-to-host copy engine (the same one on a GPU with one).
    RTGPU_COPY_OUT = 2,
} rtgpu_engine;

// An arbiter of this process: GPUs, their tokens and engine locks.
typedef struct rtgpu_arbiter rtgpu_arbiter;

// A registered thread, of this process's arbiter or of `rtgpu daemon`.
typedef struct rtgpu_client rtgpu_client;

// A held engine lock.
typedef struct rtgpu_lock rtgpu_lock;

// A held GPU token.
typedef struct rtgpu_token rtgpu_token;

#ifdef __cplusplus
extern "C" {
#endif // __cplusplus

// An arbiter of `gpus` GPUs with `copy_engines` copy engines (1 or 2) and
// `tokens_per_gpu` tokens each; `allocator` is "gpusync" (NULL),
// "shortest-queue", "k-fmlp" or "static"; `engine_locks` non-zero to
// arbitrate the engines too.
//
// # Safety
// `allocator` is NULL or a NUL-terminated string.
rtgpu_arbiter *rtgpu_arbiter_new(unsigned int gpus,
                                 unsigned int copy_engines,
                                 unsigned int tokens_per_gpu,
                                 const char *allocator,
                                 int engine_locks);

// Frees an arbiter (NULL: nothing). Its clients, tokens and locks keep
// what they need of it.
//
// # Safety
// `arbiter` is NULL or from `rtgpu_arbiter_new`, freed once.
void rtgpu_arbiter_free(rtgpu_arbiter *arbiter);

// Registers the calling thread with its base SCHED_FIFO priority (1-99).
//
// # Safety
// `arbiter` is a live handle from `rtgpu_arbiter_new`.
rtgpu_client *rtgpu_register(rtgpu_arbiter *arbiter, int fifo_priority);

// Cross-process mode: connects the calling thread to `rtgpu daemon` at
// `socket` (NULL: /tmp/rtgpud.sock) with its base SCHED_FIFO priority
// (1-99). The token and lock calls work the same on such a client; if this
// process dies, the daemon releases whatever it held at once.
//
// # Safety
// `socket` is NULL or a NUL-terminated string.
rtgpu_client *rtgpu_connect(const char *socket, int fifo_priority);

// Frees a client (NULL: nothing).
//
// # Safety
// `client` is NULL or from `rtgpu_register` or `rtgpu_connect`, freed once.
void rtgpu_client_free(rtgpu_client *client);

// Blocks until a GPU token is granted; `*gpu_out` (if not NULL) gets its
// GPU. `hold_ns`: the worst-case time the token is held (the allocator's
// queue choice).
//
// # Safety
// `client` is a live handle; `gpu_out` is NULL or points to an int.
rtgpu_token *rtgpu_token_acquire(rtgpu_client *client, uint64_t hold_ns, int *gpu_out);

// Releases a token (NULL: nothing).
//
// # Safety
// `token` is NULL or from `rtgpu_token_acquire`, released once.
void rtgpu_token_release(rtgpu_token *token);

// Blocks until the engine lock (an `rtgpu_engine`) of the token's GPU is
// granted.
//
// # Safety
// `token` is a live handle from `rtgpu_token_acquire`.
rtgpu_lock *rtgpu_engine_lock(rtgpu_token *token, int engine);

// Both copy locks of a peer copy from `src_gpu` to the token's GPU,
// atomically.
//
// # Safety
// `token` is a live handle from `rtgpu_token_acquire`.
rtgpu_lock *rtgpu_peer_copy_lock(rtgpu_token *token, unsigned int src_gpu);

// Unlocks an engine lock (NULL: nothing).
//
// # Safety
// `lock` is NULL or from an engine-lock function, unlocked once.
void rtgpu_engine_unlock(rtgpu_lock *lock);

// Why the calling thread's last call that returned NULL failed (empty if
// none). Valid until the thread's next failing call.
const char *rtgpu_last_error(void);

#ifdef __cplusplus
}  // extern "C"
#endif  // __cplusplus

#endif  /* RTGPU_H */
