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

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rtgpu_arbiter rtgpu_arbiter;
typedef struct rtgpu_client rtgpu_client;
typedef struct rtgpu_token rtgpu_token;
typedef struct rtgpu_lock rtgpu_lock;

enum rtgpu_engine {
    RTGPU_EXEC = 0,     /* execution engine */
    RTGPU_COPY_IN = 1,  /* host-to-device copy engine */
    RTGPU_COPY_OUT = 2  /* device-to-host copy engine (the same one on a GPU with one) */
};

/* allocator: "gpusync", "shortest-queue", "k-fmlp" or "static". */
rtgpu_arbiter *rtgpu_arbiter_new(unsigned gpus, unsigned copy_engines,
                                 unsigned tokens_per_gpu, const char *allocator,
                                 int engine_locks);
void rtgpu_arbiter_free(rtgpu_arbiter *arbiter);

/* Registers the calling thread with its base SCHED_FIFO priority (1-99). */
rtgpu_client *rtgpu_register(rtgpu_arbiter *arbiter, int fifo_priority);
/* Cross-process mode: connects the calling thread to `rtgpu daemon` at
 * socket (NULL: /tmp/rtgpud.sock) with its base SCHED_FIFO priority. The
 * token and lock calls below work the same on such a client; if this process
 * dies, the daemon releases whatever it held at once. */
rtgpu_client *rtgpu_connect(const char *socket, int fifo_priority);
void rtgpu_client_free(rtgpu_client *client);

/* Blocks until a GPU token is granted; *gpu_out (if not NULL) gets its GPU.
 * hold_ns: worst-case time the token is held (the allocator's queue choice). */
rtgpu_token *rtgpu_token_acquire(rtgpu_client *client, uint64_t hold_ns, int *gpu_out);
void rtgpu_token_release(rtgpu_token *token);

/* Blocks until the engine lock of the token's GPU is granted. */
rtgpu_lock *rtgpu_engine_lock(rtgpu_token *token, int engine);
/* Both copy locks of a peer copy from src_gpu to the token's GPU, atomically. */
rtgpu_lock *rtgpu_peer_copy_lock(rtgpu_token *token, unsigned src_gpu);
void rtgpu_engine_unlock(rtgpu_lock *lock);

/* Why the last call of this thread that returned NULL failed. */
const char *rtgpu_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* RTGPU_H */
