/* A C client of librtgpu: four threads take GPU tokens and engine locks on
 * two GPUs; checks mutual exclusion, errors and the documented API.
 * `client SOCKET` does the same as two processes of two threads each,
 * connected to `rtgpu daemon` at SOCKET (cross-process mode).
 * Built and run by tests/c_client.rs. Exit status 0 on success. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rtgpu.h"

static rtgpu_arbiter *arb;
static const char *daemon_socket;
/* Shared between processes in cross-process mode (MAP_SHARED). */
struct counters { atomic_int exec_holders[2]; atomic_int worst; atomic_int failures; };
static struct counters *k;
#define exec_holders (k->exec_holders)
#define worst (k->worst)
#define failures (k->failures)

static void *worker(void *arg) {
    int prio = (int)(long)arg;
    rtgpu_client *me = daemon_socket ? rtgpu_connect(daemon_socket, prio) : rtgpu_register(arb, prio);
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

static int run_threads(long first_prio, int n) {
    pthread_t t[4];
    for (long i = 0; i < n; i++) pthread_create(&t[i], NULL, worker, (void *)(first_prio + i));
    for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
    return atomic_load(&failures);
}

/* Two processes of two threads each, all clients of the daemon. */
static int cross_process(void) {
    if (rtgpu_connect("/nonexistent/rtgpud.sock", 10) != NULL) return 30;
    if (strstr(rtgpu_last_error(), "/nonexistent/rtgpud.sock") == NULL) return 31;
    pid_t kids[2];
    for (int p = 0; p < 2; p++) {
        kids[p] = fork();
        if (kids[p] == 0) _exit(run_threads(10 + 2 * p, 2) ? 1 : 0);
    }
    for (int p = 0; p < 2; p++) {
        int st = 0;
        if (waitpid(kids[p], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) return 32;
    }
    if (atomic_load(&worst) != 1) { fprintf(stderr, "two exec holders at once\n"); return 33; }
    /* A bad peer GPU is refused by a daemon client too. */
    rtgpu_client *me = rtgpu_connect(daemon_socket, 20);
    if (!me) { fprintf(stderr, "connect: %s\n", rtgpu_last_error()); return 34; }
    rtgpu_token *tok = rtgpu_token_acquire(me, 1, NULL);
    if (!tok) return 35;
    if (rtgpu_peer_copy_lock(tok, 5) != NULL) return 36;
    rtgpu_lock *both = rtgpu_peer_copy_lock(tok, 0);
    if (!both) { fprintf(stderr, "peer copy: %s\n", rtgpu_last_error()); return 37; }
    rtgpu_engine_unlock(both);
    rtgpu_token_release(tok);
    rtgpu_client_free(me);
    printf("C clients of the daemon: 400 GPU sections in 2 processes, one exec holder at a time\n");
    return 0;
}

int main(int argc, char **argv) {
    k = mmap(NULL, sizeof *k, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (k == MAP_FAILED) return 9;
    if (argc > 1) {
        daemon_socket = argv[1];
        return cross_process();
    }
    /* Errors: NULL and a message naming the problem. */
    if (rtgpu_arbiter_new(1, 2, 2, "round-robin", 1) != NULL) return 10;
    if (strstr(rtgpu_last_error(), "unknown allocator") == NULL) return 11;
    if (rtgpu_arbiter_new(0, 2, 2, "gpusync", 1) != NULL) return 12;

    arb = rtgpu_arbiter_new(2, 1, 1, "gpusync", 1);
    if (!arb) { fprintf(stderr, "%s\n", rtgpu_last_error()); return 13; }
    if (rtgpu_register(arb, 0) != NULL) return 14;
    if (strstr(rtgpu_last_error(), "fifo_priority") == NULL) return 15;

    if (run_threads(10, 4) != 0) return 16;
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
