/* herd-trainer — a trainer-shaped driver for the deployment tests (tests/multiserver/run.sh,
 * tests/container/run.sh), written against the C client (clients/c/herd_client.h).
 *
 *     herd-trainer --endpoints EP[,EP...] [--worlds 3000] [--steps 20] [--seed 1] [--env anymal_c-walk]
 *                  [--episode-seconds 0.2] [--timeout-ms 5000] [--dump FILE]
 *
 * It spreads --worlds worlds over the servers in contiguous blocks (server j holds global worlds
 * [o_j, o_j + n_j)), makes one session per server, resets every world with its own seed (seed + global
 * index: PROTOCOL.md section 8 keys a world reset with `seeds` by that seed alone, whatever its server or
 * index) and steps them all, pipelined (one step request in flight per server), with actions that depend
 * only on (seed, global world, step, joint).  So any spread of the same worlds over any number of servers
 * must print the same hashes as a single server.
 *
 * stdout, one line each:
 *   spread <j> <endpoint> <first> <count>
 *   hash reset <hex>            FNV-1a 64 of the reset observations, in global world order
 *   hash step <k> <hex>         of step k: world by world in global order, its obs row, reward, terminated,
 *                               truncated and autoreset flag
 *   stepping                    after the first step (the kill test waits for it)
 *   done steps=<K> worlds=<N> episodes=<ended> seconds=<s> world_steps_per_s=<r>
 * --steps 0 steps until something fails (the kill test).  --dump FILE writes every step's results as raw
 * bytes (per step, per server in order: obs float32 [n, obs_dim], reward float32 [n], terminated,
 * truncated, autoreset uint8 [n]) for finding the first world that differs.
 * Any failure: one line on stderr naming the server's endpoint, the operation and the error, exit 3;
 * usage errors exit 2. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "herd_client.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Action of joint j of global world g at step t: in [-1, 1), a function of these alone. */
static float action(uint64_t seed, int64_t g, int64_t t, int j)
{
    uint64_t x = mix(seed ^ mix((uint64_t)g * 0x100000001b3ull ^ mix((uint64_t)t << 8 | (uint64_t)j)));
    return (float)((double)(x >> 40) / 8388608.0 - 1.0);
}

static const char *arg(int argc, char **argv, const char *name, const char *def)
{
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], name)) return argv[i + 1];
    return def;
}

static void die_server(herd_client *c, int j, const char *what, const herd_error *e)
{
    fprintf(stderr, "herd-trainer: server %d of %d (%s): %s failed: %s: %s\n", j + 1, herd_client_nservers(c),
            herd_client_endpoint(c, j), what, proto_code_name(e->code), e->message);
    fflush(stdout);
    exit(3);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help")) {
            printf("usage: herd-trainer --endpoints EP[,EP...] [--worlds N] [--steps K (0 = until failure)] "
                   "[--seed S] [--env NAME] [--episode-seconds X] [--timeout-ms T]\n");
            return 0;
        }
        static const char *const known[] = {"--endpoints", "--worlds", "--steps", "--seed", "--env",
                                            "--episode-seconds", "--timeout-ms", "--dump"};
        int ok = 0;
        for (size_t k = 0; k < sizeof known / sizeof known[0]; k++) ok |= !strcmp(argv[i], known[k]);
        if (!ok || i + 1 >= argc) {
            fprintf(stderr, "herd-trainer: bad argument '%s' (see --help)\n", argv[i]);
            return 2;
        }
        i++;
    }
    const char *eps_arg = arg(argc, argv, "--endpoints", NULL);
    int N = atoi(arg(argc, argv, "--worlds", "3000"));
    long K = atol(arg(argc, argv, "--steps", "20"));
    uint64_t seed = strtoull(arg(argc, argv, "--seed", "1"), NULL, 10);
    const char *env = arg(argc, argv, "--env", "anymal_c-walk");
    double ep_s = atof(arg(argc, argv, "--episode-seconds", "0.2"));
    int timeout_ms = atoi(arg(argc, argv, "--timeout-ms", "5000"));
    const char *dump_path = arg(argc, argv, "--dump", NULL);
    FILE *dump = dump_path ? fopen(dump_path, "wb") : NULL;
    if (dump_path && !dump) {
        perror(dump_path);
        return 2;
    }
    if (!eps_arg || N < 1 || K < 0 || timeout_ms < 1) {
        fprintf(stderr, "herd-trainer: need --endpoints, --worlds >= 1, --steps >= 0, --timeout-ms >= 1\n");
        return 2;
    }

    /* endpoints: comma-separated */
    char *list = strdup(eps_arg);
    const char *eps[64];
    int M = 0;
    for (char *tok = strtok(list, ","); tok && M < 64; tok = strtok(NULL, ","))
        if (*tok) eps[M++] = tok;
    if (M < 1 || M > N) {
        fprintf(stderr, "herd-trainer: need 1 .. min(64, worlds) endpoints\n");
        return 2;
    }

    herd_error e;
    herd_client *c = herd_client_new(eps, M, timeout_ms, &e);
    if (!c) {
        fprintf(stderr, "herd-trainer: %s\n", e.message);
        return 3;
    }
    for (int j = 0; j < M; j++) {
        double t;
        if (herd_client_ping(c, j, &t, &e)) die_server(c, j, "ping", &e);
    }

    herd_session *S = calloc((size_t)M, sizeof *S);
    int *first = calloc((size_t)M, sizeof *first), *count = calloc((size_t)M, sizeof *count);
    float **obs = calloc((size_t)M, sizeof *obs), **act = calloc((size_t)M, sizeof *act),
          **rew = calloc((size_t)M, sizeof *rew);
    uint8_t **term = calloc((size_t)M, sizeof *term), **trunc = calloc((size_t)M, sizeof *trunc),
            **ares = calloc((size_t)M, sizeof *ares);
    uint64_t *ids = calloc((size_t)M, sizeof *ids);
    env_kv cfg[1] = {{"episode_seconds", ep_s}};
    for (int j = 0, o = 0; j < M; j++) {
        first[j] = o;
        count[j] = N / M + (j < N % M);
        o += count[j];
        if (herd_client_make(c, j, env, count[j], ep_s > 0 ? cfg : NULL, ep_s > 0, seed, ENV_AUTORESET_NEXT_STEP,
                             &S[j], &e))
            die_server(c, j, "make", &e);
        int od = S[j].obs_dim, ad = S[j].act_dim;
        obs[j] = malloc(sizeof(float) * (size_t)count[j] * (size_t)od);
        act[j] = malloc(sizeof(float) * (size_t)count[j] * (size_t)ad);
        rew[j] = malloc(sizeof(float) * (size_t)count[j]);
        term[j] = malloc((size_t)count[j]);
        trunc[j] = malloc((size_t)count[j]);
        ares[j] = malloc((size_t)count[j]);
        printf("spread %d %s %d %d\n", j, eps[j], first[j], count[j]);
    }

    /* reset every world with its global seed */
    for (int j = 0; j < M; j++) {
        uint64_t *seeds = malloc(sizeof *seeds * (size_t)count[j]);
        for (int i = 0; i < count[j]; i++) seeds[i] = seed * 1000003u + (uint64_t)(first[j] + i);
        ids[j] = herd_client_reset_send(c, &S[j], -1, NULL, seeds, &e);
        free(seeds);
        if (!ids[j]) die_server(c, j, "reset", &e);
    }
    uint64_t h = 0xcbf29ce484222325ull;
    for (int j = 0; j < M; j++) {
        herd_reply *r;
        if (herd_client_wait(c, ids[j], -1, &r, &e)) die_server(c, j, "reset", &e);
        int rc = herd_reply_reset(r, &S[j], count[j], obs[j], &e);
        herd_reply_destroy(&r);
        if (rc) die_server(c, j, "reset", &e);
        h = fnv(h, obs[j], sizeof(float) * (size_t)count[j] * (size_t)S[j].obs_dim);
    }
    printf("hash reset %016" PRIx64 "\n", h);
    fflush(stdout);

    long ended = 0;
    double t0 = now_s();
    long k;
    for (k = 0; K == 0 || k < K; k++) {
        for (int j = 0; j < M; j++) {
            int ad = S[j].act_dim;
            for (int i = 0; i < count[j]; i++)
                for (int a = 0; a < ad; a++) act[j][(size_t)i * (size_t)ad + (size_t)a] = action(seed, first[j] + i, k, a);
            ids[j] = herd_client_step_send(c, &S[j], -1, NULL, act[j], 0, &e);
            if (!ids[j]) die_server(c, j, "step", &e);
        }
        h = 0xcbf29ce484222325ull;
        for (int j = 0; j < M; j++) {
            herd_reply *r;
            char what[64];
            snprintf(what, sizeof what, "step %ld", k);
            if (herd_client_wait(c, ids[j], -1, &r, &e)) die_server(c, j, what, &e);
            herd_step_out out = {.obs = obs[j], .reward = rew[j], .terminated = term[j], .truncated = trunc[j],
                                 .autoreset = ares[j]};
            int rc = herd_reply_step(r, &S[j], count[j], &out, &e);
            herd_reply_destroy(&r);
            if (rc) die_server(c, j, what, &e);
            size_t n = (size_t)count[j], od = (size_t)S[j].obs_dim;
            for (size_t i = 0; i < n; i++) { /* world by world: the same bytes whatever the spread */
                h = fnv(h, obs[j] + i * od, sizeof(float) * od);
                h = fnv(h, rew[j] + i, sizeof(float));
                h = fnv(h, term[j] + i, 1);
                h = fnv(h, trunc[j] + i, 1);
                h = fnv(h, ares[j] + i, 1);
            }
            if (dump) { /* per step and server: obs, reward, terminated, truncated, autoreset (global order) */
                fwrite(obs[j], sizeof(float), n * (size_t)S[j].obs_dim, dump);
                fwrite(rew[j], sizeof(float), n, dump);
                fwrite(term[j], 1, n, dump);
                fwrite(trunc[j], 1, n, dump);
                fwrite(ares[j], 1, n, dump);
            }
            for (size_t i = 0; i < n; i++) ended += term[j][i] | trunc[j][i];
        }
        printf("hash step %ld %016" PRIx64 "\n", k, h);
        if (k == 0) printf("stepping\n");
        fflush(stdout);
    }
    double dt = now_s() - t0;
    for (int j = 0; j < M; j++)
        if (herd_client_close(c, &S[j], &e)) die_server(c, j, "close", &e);
    printf("done steps=%ld worlds=%d episodes=%ld seconds=%.3f world_steps_per_s=%.0f\n", k, N, ended, dt,
           dt > 0 ? (double)k * N / dt : 0.0);
    for (int j = 0; j < M; j++) {
        free(obs[j]);
        free(act[j]);
        free(rew[j]);
        free(term[j]);
        free(trunc[j]);
        free(ares[j]);
    }
    free(obs), free(act), free(rew), free(term), free(trunc), free(ares), free(ids), free(first), free(count), free(S);
    herd_client_destroy(&c);
    free(list);
    if (dump) fclose(dump);
    return 0;
}
