/* bench_c_client.c — the C-client side of clients/python/bench.py: steps a herd-server session through
 * clients/c/herd_client.h exactly as the Python bench does through the herd package, so that the two
 * throughputs can be compared in the same run against the same server.
 *
 *   herd-bench-c-client --address EP --env anymal_c-walk --worlds 4096 --steps S --warmup W
 *                       --actions FILE --nsets K [--batch B] [--repeats R] [--timeout-ms T]
 *
 * FILE holds K sets of worlds x act_dim float32 actions (little-endian); step k uses set k % K.
 * Every repeat: reset every world with seeds 1000 + i, W untimed steps, then S timed steps.
 * batch 0: one full-batch step request at a time (what VectorEnv.step does); batch B > 0: the worlds in
 * batches of B consecutive worlds, each batch keeping one step in flight (EnvPool-style pipelining).
 * obs, reward, terminated and truncated of every reply are copied into caller buffers (as a trainer
 * would use them).  Prints one JSON line: {"bench":"c_client", ..., "steps_per_s": median over repeats}.
 *
 * Built by bench.py (or the Makefile) against the C client's layers: build/libherd_client.a and libherd_protocol.a.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "herd_client.h"

static const char *arg(int argc, char **argv, const char *name, const char *def)
{
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], name)) return argv[i + 1];
    return def;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void die(const herd_error *e)
{
    fprintf(stderr, "herd-bench-c-client: %s: %s\n", proto_code_name(e->code), e->message);
    exit(1);
}

int main(int argc, char **argv)
{
    const char *ep = arg(argc, argv, "--address", "tcp://127.0.0.1:5555");
    const char *env = arg(argc, argv, "--env", "anymal_c-walk");
    const char *afile = arg(argc, argv, "--actions", NULL);
    int N = atoi(arg(argc, argv, "--worlds", "4096"));
    int S = atoi(arg(argc, argv, "--steps", "20"));
    int W = atoi(arg(argc, argv, "--warmup", "5"));
    int K = atoi(arg(argc, argv, "--nsets", "8"));
    int B = atoi(arg(argc, argv, "--batch", "0"));
    int R = atoi(arg(argc, argv, "--repeats", "1"));
    int timeout_ms = atoi(arg(argc, argv, "--timeout-ms", "120000"));
    if (!afile || N < 1 || S < 1 || K < 1 || R < 1 || B < 0) {
        fprintf(stderr, "usage: herd-bench-c-client --address EP --actions FILE [--env E] [--worlds N] [--steps S] "
                        "[--warmup W] [--nsets K] [--batch B] [--repeats R] [--timeout-ms T]\n");
        return 2;
    }
    herd_error e;
    herd_client *c = herd_client_new(&ep, 1, timeout_ms, &e);
    if (!c) die(&e);
    herd_session s;
    if (herd_client_make(c, 0, env, N, NULL, 0, 0, ENV_AUTORESET_NEXT_STEP, &s, &e)) die(&e);
    const int od = s.obs_dim, ad = s.act_dim;
    size_t na = (size_t)K * N * ad;
    float *act = malloc(sizeof(float) * na);
    FILE *f = fopen(afile, "rb");
    if (!f || fread(act, sizeof(float), na, f) != na) {
        fprintf(stderr, "herd-bench-c-client: cannot read %zu actions from %s\n", na, afile);
        return 1;
    }
    fclose(f);
    uint64_t *seeds = malloc(sizeof *seeds * (size_t)N);
    int32_t *ids = malloc(sizeof *ids * (size_t)N);
    for (int i = 0; i < N; i++) seeds[i] = 1000 + (uint64_t)i, ids[i] = i;
    float *obs = malloc(sizeof(float) * (size_t)N * od), *rew = malloc(sizeof(float) * (size_t)N);
    uint8_t *term = malloc((size_t)N), *trunc = malloc((size_t)N);
    double *rate = malloc(sizeof(double) * (size_t)R);
    int bs = B > 0 && B < N ? B : N, nb = (N + bs - 1) / bs;
    uint64_t *rid = calloc((size_t)nb, sizeof *rid);
    int *done = calloc((size_t)nb, sizeof *done);

    for (int r = 0; r < R; r++) {
        if (herd_client_reset(c, &s, -1, NULL, seeds, obs, &e)) die(&e);
        for (int k = 0; k < W; k++) {
            herd_step_out out = {.obs = obs, .reward = rew, .terminated = term, .truncated = trunc};
            if (herd_client_step(c, &s, -1, NULL, act + (size_t)(k % K) * N * ad, 0, &out, &e)) die(&e);
        }
        double t0 = now_s();
        if (nb == 1) {
            for (int k = W; k < W + S; k++) {
                herd_step_out out = {.obs = obs, .reward = rew, .terminated = term, .truncated = trunc};
                if (herd_client_step(c, &s, -1, NULL, act + (size_t)(k % K) * N * ad, 0, &out, &e)) die(&e);
            }
        } else {
            for (int b = 0; b < nb; b++) {
                int first = b * bs, n = first + bs <= N ? bs : N - first;
                done[b] = 0;
                rid[b] = herd_client_step_send(c, &s, n, ids + first, act + (size_t)(W % K) * N * ad + (size_t)first * ad,
                                               0, &e);
                if (!rid[b]) die(&e);
            }
            int active = nb;
            while (active) {
                herd_reply *rep;
                if (herd_client_recv(c, -1, &rep, &e)) die(&e);
                int b = 0;
                while (b < nb && rid[b] != rep->id) b++;
                if (b == nb) {
                    herd_reply_destroy(&rep);
                    continue;
                }
                int first = b * bs, n = first + bs <= N ? bs : N - first;
                herd_step_out out = {.obs = obs + (size_t)first * od, .reward = rew + first, .terminated = term + first,
                                     .truncated = trunc + first};
                int rc = herd_reply_step(rep, &s, n, &out, &e);
                herd_reply_destroy(&rep);
                if (rc) die(&e);
                if (++done[b] == S) {
                    active--;
                    continue;
                }
                int k = W + done[b];
                rid[b] = herd_client_step_send(c, &s, n, ids + first, act + (size_t)(k % K) * N * ad + (size_t)first * ad,
                                               0, &e);
                if (!rid[b]) die(&e);
            }
        }
        rate[r] = (double)N * S / (now_s() - t0);
    }
    herd_client_close(c, &s, &e);
    qsort(rate, (size_t)R, sizeof *rate, cmp_d);
    double med = R % 2 ? rate[R / 2] : 0.5 * (rate[R / 2 - 1] + rate[R / 2]);
    printf("{\"bench\":\"c_client\",\"env\":\"%s\",\"worlds\":%d,\"batch\":%d,\"steps\":%d,\"repeats\":%d,"
           "\"steps_per_s\":%.1f}\n", env, N, B, S, R, med);
    free(act), free(seeds), free(ids), free(obs), free(rew), free(term), free(trunc), free(rate), free(rid), free(done);
    herd_client_destroy(&c);
    return 0;
}
