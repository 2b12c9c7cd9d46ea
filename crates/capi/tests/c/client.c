/* A C client of librtgpu: four threads take GPU tokens and engine locks on
 * two GPUs; checks mutual exclusion, errors and the documented API.
 * Built and run by tests/c_client.rs. Exit status 0 on success. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "rtgpu.h"

static rtgpu_arbiter *arb;
static atomic_int exec_holders[2];
static atomic_int worst;
static atomic_int failures;

static void *worker(void *arg) {
    int prio = (int)(long)arg;
    rtgpu_client *me = rtgpu_register(arb, prio);
    if (!me) { fprintf(stderr, "register: %s\n", rtgpu_last_error()); atomic_fetch_add(&failures, 1); return NULL; }
    for (int i = 0; i < 100; i++) {
        int gpu = -1;
        rtgpu_token *tok = rtgpu_token_acquire(me, 1000000, &gpu);
        if (!tok || gpu < 0 || gpu > 1) { atomic_fetch_add(&failures, 1); break; }
        rtgpu_lock *l = rtgpu_engine_lock(tok, RTGPU_EXEC);
        if (!l) { atomic_fetch_add(&failures, 1); rtgpu_token_release(tok); break; }
        int now = atomic_fetch_add(&exec_holders[gpu], 1) + 1;
        int w = atomic_load(&worst);
        while (now > w && !atomic_compare_exchange_weak(&worst, &w, now)) {}
        usleep(50);
        atomic_fetch_sub(&exec_holders[gpu], 1);
        rtgpu_engine_unlock(l);
        rtgpu_token_release(tok);
    }
    rtgpu_client_free(me);
    return NULL;
}

int main(void) {
    /* Errors: NULL and a message naming the problem. */
    if (rtgpu_arbiter_new(1, 2, 2, "round-robin", 1) != NULL) return 10;
    if (strstr(rtgpu_last_error(), "unknown allocator") == NULL) return 11;
    if (rtgpu_arbiter_new(0, 2, 2, "gpusync", 1) != NULL) return 12;

    arb = rtgpu_arbiter_new(2, 1, 1, "gpusync", 1);
    if (!arb) { fprintf(stderr, "%s\n", rtgpu_last_error()); return 13; }
    if (rtgpu_register(arb, 0) != NULL) return 14;
    if (strstr(rtgpu_last_error(), "fifo_priority") == NULL) return 15;

    pthread_t t[4];
    for (long i = 0; i < 4; i++) pthread_create(&t[i], NULL, worker, (void *)(10 + i));
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    if (atomic_load(&failures) != 0) return 16;
    if (atomic_load(&worst) != 1) { fprintf(stderr, "two exec holders at once\n"); return 17; }

    /* A bad engine and a bad peer GPU are refused; the token stays usable. */
    rtgpu_client *me = rtgpu_register(arb, 20);
    rtgpu_token *tok = rtgpu_token_acquire(me, 1, NULL);
    if (rtgpu_engine_lock(tok, 7) != NULL) return 18;
    if (rtgpu_peer_copy_lock(tok, 5) != NULL) return 19;
    rtgpu_lock *both = rtgpu_peer_copy_lock(tok, 0);
    if (!both) return 20;
    rtgpu_engine_unlock(both);
    rtgpu_token_release(tok);
    /* Handles may be freed in any order. */
    rtgpu_arbiter_free(arb);
    rtgpu_client_free(me);
    printf("C client: 400 GPU sections on 2 GPUs, one exec holder at a time\n");
    return 0;
}
