/* fuzz_config.c — the configuration validator: env_new with fuzzed overrides on a tiny world count,
 * then a reset and (when cheap) one step with zero actions.
 *
 * Input: byte 0 picks the task (index modulo the registry), byte 1 the flags (bit 0: 2 worlds instead
 * of 1; bits 1-2: autoreset mode; bit 3: step once), byte 2 the seed; then up to 64 records
 * [selector][mode][8 bytes].  A selector below 0xF0 names config key (selector mod nconfig) of the
 * task; 0xF0 to 0xF7 names a raw key of (mode mod 48) bytes that follow the record (unknown keys,
 * over-long keys, bytes that are not UTF-8); 0xF8 and above gives key (selector mod nconfig) a named
 * choice of (mode mod 48) bytes that follow, through env_config_choice (as a string on the wire).  For a task key, the mode picks the value: the 8 bytes
 * as a double, the low / high bound / default, a point between them, just outside either bound, or an
 * interpolated integer.
 * Properties: env_new fails with a message, or succeeds with every override applied (the last one of
 * a repeated key) and in range, and with a spec whose sizes are positive; reset and step do not crash.
 */
#include "fuzz_targets.h"

#include <math.h>
#include <string.h>

#include "env.h"

#define NREC_MAX 64

static double pick_value(const env_config_key *c, uint8_t mode, const uint8_t *p)
{
    double raw;
    memcpy(&raw, p, 8);
    uint64_t u;
    memcpy(&u, p, 8);
    double frac = (double)(u >> 11) / 9007199254740992.0;   /* [0, 1) */
    switch (mode % 9) {
    case 0: return raw;
    case 1: return c->lo;
    case 2: return c->hi;
    case 3: return c->def;
    case 4: return c->lo + frac * (c->hi - c->lo);
    case 5: return nextafter(c->hi, INFINITY);
    case 6: return nextafter(c->lo, -INFINITY);
    case 7: return floor(c->lo + frac * (c->hi - c->lo + 1));
    default: return (double)(int64_t)u;
    }
}

int herd_fuzz_config(const uint8_t *data, size_t size)
{
    if (size < 3) return 0;
    int ntask = env_registry_count();
    const env_spec *spec = env_registry_spec(data[0] % ntask);
    const int nworlds = 1 + (data[1] & 1);
    const env_autoreset ar = (env_autoreset)((data[1] >> 1 & 3) % 3);
    const int do_step = data[1] >> 3 & 1;
    const uint64_t seed = data[2];
    size_t pos = 3;

    env_kv ov[NREC_MAX];
    char keys[NREC_MAX][49];
    int nov = 0;
    while (nov < NREC_MAX && pos + 10 <= size) {
        uint8_t sel = data[pos], mode = data[pos + 1];
        const uint8_t *val = data + pos + 2;
        pos += 10;
        if (sel >= 0xF8 && spec->nconfig > 0) {
            /* a named choice (what a string config value on the wire becomes): (mode mod 48) bytes of name */
            size_t n = mode % 48;
            if (pos + n > size) break;
            char name[49];
            memcpy(name, data + pos, n);
            name[n] = 0;
            pos += n;
            const env_config_key *c = &spec->config[sel % spec->nconfig];
            double v = -1;
            char cerr[256];
            if (env_config_choice(spec->name, c->key, name, &v, cerr, sizeof cerr)) {
                fuzz_check(cerr[0] != 0, "env_config_choice failed without a message");
                continue;
            }
            fuzz_check(c->nchoices > 0 && v >= 0 && v < c->nchoices && v == floor(v) && !strcmp(c->choices[(int)v], name),
                       "choice '%s' of %s gave %g", name, c->key, v);
            ov[nov] = (env_kv){c->key, v};
        } else if (sel >= 0xF0 || spec->nconfig == 0) {
            size_t n = mode % 48;
            if (pos + n > size) break;
            memcpy(keys[nov], data + pos, n);
            keys[nov][n] = 0;
            pos += n;
            double v;
            memcpy(&v, val, 8);
            ov[nov] = (env_kv){keys[nov], v};
        } else {
            const env_config_key *c = &spec->config[sel % spec->nconfig];
            ov[nov] = (env_kv){c->key, pick_value(c, mode, val)};
        }
        nov++;
    }

    char err[512];
    memset(err, 'x', sizeof err);
    env_t *e = env_new(spec->name, nworlds, ov, nov, seed, ar, err, sizeof err);
    fuzz_check(memchr(err, 0, sizeof err) != NULL || e != NULL, "error message not terminated");
    if (!e) {
        fuzz_check(err[0] != 0, "env_new failed without a message");
        return 0;
    }
    const env_spec *s = env_get_spec(e);
    fuzz_check(env_num_worlds(e) == nworlds, "num_worlds");
    fuzz_check(s->obs_dim >= 1 && s->act_dim >= 1 && s->decimation >= 1 && s->sim_dt > 0 && s->max_episode_steps >= 1,
               "spec obs_dim %d act_dim %d decimation %d sim_dt %g max_episode_steps %d", s->obs_dim, s->act_dim,
               s->decimation, s->sim_dt, s->max_episode_steps);
    for (int i = 0; i < s->nconfig; i++) {
        const env_config_key *c = &s->config[i];
        double v = env_config(e, c->key);
        fuzz_check(v >= c->lo && v <= c->hi && (!c->is_int || v == floor(v)), "config %s = %g outside [%g, %g]", c->key, v,
                   c->lo, c->hi);
        for (int k = nov - 1; k >= 0; k--)
            if (!strcmp(ov[k].key, c->key)) {
                fuzz_check(!memcmp(&v, &ov[k].value, sizeof v) || (v == 0 && ov[k].value == 0),
                           "config %s = %g, override %g", c->key, v, ov[k].value);
                break;
            }
    }

    const int od = s->obs_dim, ad = s->act_dim, nt = s->nterms;
    float *obs = calloc((size_t)nworlds * (size_t)od, sizeof(float));
    float *act = calloc((size_t)nworlds * (size_t)ad, sizeof(float));
    float *rew = calloc((size_t)nworlds, sizeof(float));
    uint8_t *term = calloc((size_t)nworlds, 1), *trunc = calloc((size_t)nworlds, 1);
    float *terms = calloc((size_t)nworlds * (size_t)(nt > 0 ? nt : 1), sizeof(float));
    if (obs && act && rew && term && trunc && terms) {
        env_reset(e, 0, nworlds, NULL, NULL, obs);
        /* one step costs up to decimation x solver sweeps x contacts: keep the fuzzer fast */
        double iters = env_config(e, "solver_max_iter"), mc = env_config(e, "max_contacts");
        double cost = s->decimation * (isnan(iters) ? 50 : iters) * (isnan(mc) ? 16 : mc);
        if (do_step && cost <= 20000) {
            env_info info = {.reward_terms = terms};
            env_step(e, 0, nworlds, NULL, act, obs, rew, term, trunc, &info);
        }
    }
    free(obs);
    free(act);
    free(rew);
    free(term);
    free(trunc);
    free(terms);
    env_destroy(&e);
    return 0;
}

#ifndef HERD_FUZZ_NO_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return herd_fuzz_config(data, size); }
#endif
