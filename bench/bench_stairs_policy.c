/* herd-bench stairs --mode policy — a trained policy walking down legged_gym's stairs in the rough task itself.
 *
 *   herd-bench stairs --mode policy --policy ACTOR.txt [--level 9] [--worlds 80] [--seconds 60] [--pushes]
 *
 * ACTOR.txt is a policy's actor written by bench/export_actor.py (an MLP, its observation normalizer, the task and
 * configuration it was trained on, and a check vector that the network here must reproduce within 1e-4 before it
 * is used).  The task (anymal_c-rough unless the file names another with a terrain) runs with that configuration,
 * its curriculum frozen at one level (--level; legged_gym's risers are 0.05 + 0.18 level / 10 m: 21.2 cm at level 9),
 * pushes off unless --pushes, every other randomization, the commands and the observation noise as trained.  The
 * worlds whose tile is stairs_down (legged_gym's pyramid stairs: the robot starts on the summit platform; every way
 * out goes down) are observed at every physics step (env_set_physics_observer): the contacts on tread tops, riser
 * walls and edges (sim_contact_face) by geometry (feet, shanks and thighs, base), the deepest penetration
 * (sim_step_stats), and the solver's fallbacks and CCP answers.  Per episode, the risers descended: the summit's
 * terrain height minus the lowest terrain height under the base, in risers (rounded); an episode that reaches 3 is
 * a descent, and one that ends by termination (base contact, the task's fall) a fall.  The actions are the actor's
 * mean.  One JSON line, then a table on stderr. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "env.h"
#include "env_terrain.h"
#include "sim_collision.h"
#include "sim_model.h"
#include "sim_step.h"

/* ---- the actor ---- */

#define MLP_MAX_LAYERS 8
typedef struct {
    int nl, n_in, n_out, act; /* act: 0 elu, 1 relu, 2 tanh */
    int in[MLP_MAX_LAYERS], out[MLP_MAX_LAYERS];
    double *w[MLP_MAX_LAYERS], *b[MLP_MAX_LAYERS], *mean, *std, clip;
    int width;                /* the widest layer */
    char task[64], config[512];
} mlp;

static void mlp_free(mlp *n)
{
    for (int l = 0; l < n->nl; l++) free(n->w[l]), free(n->b[l]);
    free(n->mean), free(n->std);
    memset(n, 0, sizeof *n);
}

static int read_doubles(FILE *f, double *x, long n)
{
    for (long i = 0; i < n; i++)
        if (fscanf(f, "%lf", &x[i]) != 1) return -1;
    return 0;
}

/* y = actor(x): the normalizer, then the layers with the activation between them.  tmp: 2 x width doubles. */
static void mlp_eval(const mlp *n, const float *x, double *y, double *tmp)
{
    double *a = tmp, *b = tmp + n->width;
    for (int i = 0; i < n->n_in; i++) {
        double v = ((double)x[i] - n->mean[i]) / n->std[i];
        if (n->clip > 0) v = v > n->clip ? n->clip : v < -n->clip ? -n->clip : v;
        a[i] = v;
    }
    for (int l = 0; l < n->nl; l++) {
        double *o = l == n->nl - 1 ? y : b;
        for (int r = 0; r < n->out[l]; r++) {
            const double *w = n->w[l] + (size_t)r * n->in[l];
            double s = n->b[l][r];
            for (int c = 0; c < n->in[l]; c++) s += w[c] * a[c];
            if (l < n->nl - 1) s = n->act == 0 ? (s > 0 ? s : expm1(s)) : n->act == 1 ? (s > 0 ? s : 0) : tanh(s);
            o[r] = s;
        }
        double *t = a;
        a = o, b = t;
    }
}

/* Reads ACTOR.txt (bench/export_actor.py's format) and checks the network against the file's torch output.  0, or
 * -1 with a message in err. */
static int mlp_load(const char *path, mlp *n, char *err, size_t errlen)
{
    memset(n, 0, sizeof *n);
    FILE *f = fopen(path, "r");
    if (!f) { snprintf(err, errlen, "cannot open %s", path); return -1; }
    char act[16], word[16];
    int version = 0, rc = -1;
    if (fscanf(f, "herd-mlp %d %15s %d %d %d", &version, act, &n->nl, &n->n_in, &n->n_out) != 5 || version != 1 ||
        n->nl < 1 || n->nl > MLP_MAX_LAYERS || n->n_in < 1 || n->n_out < 1) {
        snprintf(err, errlen, "%s: not a herd-mlp 1 file (bench/export_actor.py writes them)", path);
        goto done;
    }
    n->act = !strcmp(act, "elu") ? 0 : !strcmp(act, "relu") ? 1 : !strcmp(act, "tanh") ? 2 : -1;
    if (n->act < 0) { snprintf(err, errlen, "%s: activation '%s' (elu, relu, tanh)", path, act); goto done; }
    if (fscanf(f, " task %63s config %511s norm %lf", n->task, n->config, &n->clip) != 3) {
        snprintf(err, errlen, "%s: no task / config / norm lines", path);
        goto done;
    }
    n->mean = malloc(sizeof(double) * (size_t)n->n_in), n->std = malloc(sizeof(double) * (size_t)n->n_in);
    if (!n->mean || !n->std || read_doubles(f, n->mean, n->n_in) || read_doubles(f, n->std, n->n_in)) {
        snprintf(err, errlen, "%s: bad normalizer", path);
        goto done;
    }
    n->width = n->n_in;
    int prev = n->n_in;
    for (int l = 0; l < n->nl; l++) {
        if (fscanf(f, " %15s %d %d", word, &n->in[l], &n->out[l]) != 3 || strcmp(word, "layer") || n->in[l] != prev ||
            n->out[l] < 1 || n->out[l] > 65536) {
            snprintf(err, errlen, "%s: bad layer %d", path, l);
            goto done;
        }
        n->w[l] = malloc(sizeof(double) * (size_t)n->in[l] * (size_t)n->out[l]);
        n->b[l] = malloc(sizeof(double) * (size_t)n->out[l]);
        if (!n->w[l] || !n->b[l] || read_doubles(f, n->w[l], (long)n->in[l] * n->out[l]) ||
            read_doubles(f, n->b[l], n->out[l])) {
            snprintf(err, errlen, "%s: layer %d truncated", path, l);
            goto done;
        }
        if (n->out[l] > n->width) n->width = n->out[l];
        prev = n->out[l];
    }
    if (prev != n->n_out) { snprintf(err, errlen, "%s: the last layer has %d outputs, not %d", path, prev, n->n_out); goto done; }
    /* the check: torch's output on the file's input */
    double *x = malloc(sizeof(double) * (size_t)n->n_in), *y = malloc(sizeof(double) * (size_t)n->n_out);
    double *yc = malloc(sizeof(double) * (size_t)n->n_out), *tmp = malloc(sizeof(double) * 2 * (size_t)n->width);
    float *xf = malloc(sizeof(float) * (size_t)n->n_in);
    if (!x || !y || !yc || !tmp || !xf || fscanf(f, " %15s", word) != 1 || strcmp(word, "check") ||
        read_doubles(f, x, n->n_in) || read_doubles(f, y, n->n_out)) {
        snprintf(err, errlen, "%s: no check vectors", path);
    } else {
        for (int i = 0; i < n->n_in; i++) xf[i] = (float)x[i];
        mlp_eval(n, xf, yc, tmp);
        double worst = 0;
        for (int i = 0; i < n->n_out; i++) worst = fmax(worst, fabs(yc[i] - y[i]));
        if (!(worst <= 1e-4)) snprintf(err, errlen, "%s: the network here differs from torch's by %g", path, worst);
        else rc = 0;
    }
    free(x), free(y), free(yc), free(tmp), free(xf);
done:
    fclose(f);
    if (rc) mlp_free(n);
    return rc;
}

/* ---- the observer ---- */

typedef struct {
    const sim_model *m;
    long steps, faces[SIM_FACE_COUNT], geoms[3], fallbacks, ccp;
    double pen_max, pen_sum;
    int pen_geom, pen_face, pen_first; /* the deepest contact's geometry and face; 1 if at an episode's first step */
    /* this episode: the summit's height (NAN until its first physics step), the lowest ground under the base */
    double h0, hmin;
} stair_obs;

static void observe(void *ctx, const struct sim_data *d)
{
    stair_obs *o = ctx;
    const sim_model *m = o->m;
    o->steps++;
    for (int c = 0; c < d->ncon; c++) {
        o->faces[sim_contact_face(&m->terrain, d->con[c].feature)]++;
        const sim_geom *G = &m->geom[d->con[c].geom];
        o->geoms[G->type == SIM_GEOM_SPHERE ? 0 : !strncmp(G->name, "base", 4) ? 2 : 1]++;
    }
    for (int c = 0; c < d->ncon; c++)
        if (-d->con[c].gap > o->pen_max) {
            o->pen_max = -d->con[c].gap;
            o->pen_geom = d->con[c].geom, o->pen_face = sim_contact_face(&m->terrain, d->con[c].feature);
            o->pen_first = isnan(o->h0);
        }
    o->pen_sum += d->stats.penetration;
    o->fallbacks += d->stats.fallback != 0;
    o->ccp += d->stats.answer == SIM_ANSWER_CCP;
    double h, n[3];
    sim_terrain_query(&m->terrain, d->q[0], d->q[1], &h, n);
    if (isnan(o->h0)) o->h0 = o->hmin = h;
    o->hmin = fmin(o->hmin, h);
}

int bench_stairs_policy(int argc, char **argv)
{
    const char *path = bench_arg(argc, argv, "--policy", NULL);
    const int level = atoi(bench_arg(argc, argv, "--level", "9"));
    const int worlds = atoi(bench_arg(argc, argv, "--worlds", "80"));
    const double seconds = atof(bench_arg(argc, argv, "--seconds", "60"));
    const int pushes = bench_flag(argc, argv, "--pushes");
    if (!path || level < 0 || level > 99 || worlds < 1 || worlds > 100000 || !(seconds > 0 && seconds < 1e5)) {
        fprintf(stderr, "herd-bench stairs --mode policy: need --policy ACTOR.txt (bench/export_actor.py), "
                        "0 <= --level, --worlds >= 1, --seconds > 0\n");
        return 2;
    }
    char err[512] = "";
    mlp net;
    if (mlp_load(path, &net, err, sizeof err)) { fprintf(stderr, "herd-bench stairs: %s\n", err); return 1; }
    const char *task = strcmp(net.task, "-") ? net.task : "anymal_c-rough";
    /* the trained configuration, then the frozen curriculum and the pushes */
    env_kv kv[40];
    char keys[40][40];
    int nkv = 0;
    for (const char *c = strcmp(net.config, "-") ? net.config : ""; *c && nkv < 36;) {
        const size_t len = strcspn(c, ",");
        char item[96];
        snprintf(item, sizeof item, "%.*s", (int)(len < 95 ? len : 95), c);
        char *eq = strchr(item, '=');
        if (eq) {
            *eq = 0;
            snprintf(keys[nkv], sizeof keys[nkv], "%.39s", item);
            if (bench_config_value(task, keys[nkv], eq + 1, &kv[nkv].value, err, sizeof err)) {
                fprintf(stderr, "herd-bench stairs: %s: %s\n", path, err);
                mlp_free(&net);
                return 1;
            }
            kv[nkv].key = keys[nkv];
            nkv++;
        }
        c += len;
        if (*c) c++;
    }
    kv[nkv++] = (env_kv){"curriculum", 0};
    kv[nkv++] = (env_kv){"terrain_level_min", level};
    kv[nkv++] = (env_kv){"terrain_level_max", level};
    if (!pushes) kv[nkv++] = (env_kv){"push_interval_s", 0};
    env_t *e = env_new(task, worlds, kv, nkv, 7, ENV_AUTORESET_SAME_STEP, err, sizeof err);
    if (!e) { fprintf(stderr, "herd-bench stairs: %s\n", err); mlp_free(&net); return 1; }
    const env_spec *sp = env_get_spec(e);
    int down_kind = -1;
    for (int k = 0; k < sp->nterrain_kinds; k++)
        if (!strcmp(sp->terrain_kinds[k], "stairs_down")) down_kind = k;
    if (sp->obs_dim != net.n_in || sp->act_dim != net.n_out || down_kind < 0) {
        fprintf(stderr, "herd-bench stairs: %s has %d observations and %d actions%s; the actor %d and %d\n", task,
                sp->obs_dim, sp->act_dim, down_kind < 0 ? " and no stairs_down tiles" : "", net.n_in, net.n_out);
        env_destroy(&e);
        mlp_free(&net);
        return 1;
    }
    const env_terrain_config tc = env_terrain_config_default();
    const double riser = tc.stairs_height + tc.stairs_height_per_difficulty * level / tc.rows;
    int32_t *lv = malloc(sizeof(int32_t) * (size_t)worlds), *kind = malloc(sizeof(int32_t) * (size_t)worlds);
    stair_obs *obs_of = calloc((size_t)worlds, sizeof *obs_of);
    void **ctx = calloc((size_t)worlds, sizeof *ctx);
    float *obs = malloc(sizeof(float) * (size_t)worlds * sp->obs_dim), *act = malloc(sizeof(float) * (size_t)worlds * sp->act_dim);
    float *rew = malloc(sizeof(float) * (size_t)worlds);
    uint8_t *term = malloc((size_t)worlds), *trunc = malloc((size_t)worlds);
    double *tmp = malloc(sizeof(double) * 2 * (size_t)net.width), *y = malloc(sizeof(double) * (size_t)net.n_out);
    int rc = 0;
    if (lv && kind && obs_of && ctx && obs) env_reset(e, 0, worlds, NULL, NULL, obs);
    if (!lv || !kind || !obs_of || !ctx || !obs || !act || !rew || !term || !trunc || !tmp || !y ||
        env_terrain_tiles(e, 0, worlds, NULL, lv, kind) < 0) {
        fprintf(stderr, "herd-bench stairs: out of memory, or the env failed to reset\n");
        rc = 1;
        goto out;
    }
    int nobs = 0;
    for (int i = 0; i < worlds; i++)
        if (kind[i] == down_kind) {
            obs_of[i] = (stair_obs){.m = env_model(e), .h0 = NAN};
            ctx[i] = &obs_of[i];
            nobs++;
        }
    env_set_physics_observer(e, observe, ctx);
    const int nsteps = (int)ceil(seconds / sp->control_dt);
    long episodes = 0, descents = 0, falls = 0, falls_after = 0, risers_sum = 0;
    int risers_max = 0;
    for (int t = 0; t < nsteps; t++) {
        for (int i = 0; i < worlds; i++) {
            mlp_eval(&net, obs + (size_t)i * sp->obs_dim, y, tmp);
            for (int a = 0; a < sp->act_dim; a++) act[(size_t)i * sp->act_dim + a] = (float)y[a];
        }
        env_step(e, 0, worlds, NULL, act, obs, rew, term, trunc, NULL);
        for (int i = 0; i < worlds; i++) {
            stair_obs *o = ctx[i];
            if (!o || !(term[i] || trunc[i] || t == nsteps - 1)) continue;
            /* an episode ended (or the run): its risers, then the next episode starts from its own summit */
            const int down = isnan(o->h0) ? 0 : (int)lround((o->h0 - o->hmin) / riser);
            episodes++;
            risers_sum += down;
            if (down > risers_max) risers_max = down;
            descents += down >= 3;
            falls += term[i] != 0;
            falls_after += term[i] && down >= 3;
            o->h0 = NAN;
        }
    }
    long steps = 0, faces[SIM_FACE_COUNT] = {0}, geoms[3] = {0}, fallbacks = 0, ccp = 0;
    double pen_max = 0, pen_sum = 0;
    const stair_obs *deepest = NULL;
    for (int i = 0; i < worlds; i++) {
        const stair_obs *o = ctx[i];
        if (!o) continue;
        steps += o->steps, fallbacks += o->fallbacks, ccp += o->ccp;
        for (int k = 0; k < SIM_FACE_COUNT; k++) faces[k] += o->faces[k];
        for (int k = 0; k < 3; k++) geoms[k] += o->geoms[k];
        if (o->pen_max > pen_max) pen_max = o->pen_max, deepest = o;
        pen_sum += o->pen_sum;
    }
    static const char *const face_name[SIM_FACE_COUNT] = {"top", "wall", "edge"};
    const char *pen_geom = deepest ? env_model(e)->geom[deepest->pen_geom].name : "-";
    const char *pen_face = deepest ? face_name[deepest->pen_face] : "-";
    const int pen_first = deepest ? deepest->pen_first : 0;
    const double ps = steps ? 1.0 / (double)steps : 0;
    printf("{\"bench\":\"stairs\",\"mode\":\"policy\",\"policy\":\"%s\",\"task\":\"%s\",\"config\":\"%s\",\"level\":%d,"
           "\"riser_m\":%.4f,\"tread_m\":%.2f,\"worlds_on_stairs_down\":%d,\"seconds\":%g,\"pushes\":%d,"
           "\"physics_steps\":%ld,\"episodes\":%ld,\"descents\":%ld,\"falls\":%ld,\"falls_after_descent\":%ld,"
           "\"risers_down_mean\":%.2f,\"risers_down_max\":%d,"
           "\"contacts_per_step\":{\"top\":%.3f,\"wall\":%.3f,\"edge\":%.3f},"
           "\"contacts_per_step_by_geom\":{\"feet\":%.3f,\"legs\":%.3f,\"base\":%.3f},"
           "\"penetration_max_m\":%.3e,\"penetration_max_at\":{\"geom\":\"%s\",\"face\":\"%s\",\"episode_start\":%d},"
           "\"penetration_mean_m\":%.3e,\"fallback_fraction\":%.5f,\"ccp_fraction\":%.6f,\"cpu\":\"%s\"}\n",
           path, task, net.config, level, riser, tc.stairs_width, nobs, seconds, pushes, steps, episodes, descents, falls,
           falls_after, episodes ? (double)risers_sum / episodes : 0, risers_max, faces[SIM_FACE_TOP] * ps,
           faces[SIM_FACE_WALL] * ps, faces[SIM_FACE_EDGE] * ps, geoms[0] * ps, geoms[1] * ps, geoms[2] * ps, pen_max,
           pen_geom, pen_face, pen_first, pen_sum * ps, fallbacks * ps, ccp * ps, bench_cpu());
    fprintf(stderr,
            "stairs (policy %s on %s, level %d: %.1f cm risers, %.2f m treads, %d worlds on stairs_down, %g s, pushes %s)\n"
            "  episodes %ld: %ld went down 3 risers or more (%ld of them fell afterwards), %ld fell; risers down mean %.2f, "
            "max %d\n"
            "  contacts per physics step: top %.2f, wall %.3f, edge %.3f; feet %.2f, legs %.3f, base %.3f\n"
            "  penetration max %.2f mm (%s, %s%s), mean %.3f mm; solver fallbacks %.3f %% of physics steps, CCP answers "
            "%.4f %%\n",
            path, task, level, riser * 100, tc.stairs_width, nobs, seconds, pushes ? "on" : "off", episodes, descents,
            falls_after, falls, episodes ? (double)risers_sum / episodes : 0, risers_max, faces[SIM_FACE_TOP] * ps,
            faces[SIM_FACE_WALL] * ps, faces[SIM_FACE_EDGE] * ps, geoms[0] * ps, geoms[1] * ps, geoms[2] * ps,
            pen_max * 1e3, pen_geom, pen_face, pen_first ? ", an episode's first step" : "", pen_sum * ps * 1e3,
            100 * fallbacks * ps, 100 * ccp * ps);
out:
    if (e) env_set_physics_observer(e, NULL, NULL);
    free(lv), free(kind), free(obs_of), free(ctx), free(obs), free(act), free(rew), free(term), free(trunc), free(tmp), free(y);
    env_destroy(&e);
    mlp_free(&net);
    return rc;
}
