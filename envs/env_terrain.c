/* env_terrain.c — see env_terrain.h.
 *
 * Each tile is made alone in a scratch square (index [a n + b], a along x, as legged_gym's arrays), in
 * int32 so that a height beyond int16 is reported instead of wrapped, then copied into the field.  The
 * figures legged_gym truncates with int() are truncated here with C's conversion (toward zero, the same);
 * its floor divisions of negative numbers use floordiv.  Where legged_gym rounds a sum of a product, the
 * product is stored before the sum so that no compiler fuses the two into one rounding.
 */
#include "env_terrain.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env_rng.h"

/* Tile (row, col) draws from the stream of (seed, TILE_STREAM | row << 32 | col, 0): keyed by the tile
 * alone, and apart from the worlds' streams (whose world indices stay below 2^63). */
#define TILE_STREAM (1ull << 63)
/* At most this many samples in a field (512 MiB of int16). */
#define MAX_SAMPLES (1l << 28)

struct env_terrain {
    env_terrain_config cfg;
    uint64_t seed;
    int n;                          /* samples per tile side */
    int border;                     /* samples per border width */
    int nx, ny;
    env_terrain_tile *tiles;        /* rows x cols, row-major */
    int16_t *heights;               /* nx x ny, x fastest */
};

const char *env_tile_name(int kind)
{
    static const char *const names[ENV_TILE_COUNT] = {ENV_TILE_NAMES};
    return kind >= 0 && kind < ENV_TILE_COUNT ? names[kind] : "?";
}

env_terrain_config env_terrain_config_default(void)
{
    return (env_terrain_config){
        .rows = ENV_TERRAIN_ROWS,
        .cols = ENV_TERRAIN_COLS,
        .tile_size = ENV_TERRAIN_TILE_SIZE,
        .horizontal_scale = ENV_TERRAIN_HORIZONTAL_SCALE,
        .vertical_scale = ENV_TERRAIN_VERTICAL_SCALE,
        .border_size = ENV_TERRAIN_BORDER_SIZE,
        .origin_half = ENV_TERRAIN_ORIGIN_HALF,
        .proportions = ENV_TERRAIN_PROPORTIONS,
        .slope_per_difficulty = ENV_TERRAIN_SLOPE_PER_DIFFICULTY,
        .slope_platform = ENV_TERRAIN_SLOPE_PLATFORM,
        .rough_min = ENV_TERRAIN_ROUGH_MIN,
        .rough_max = ENV_TERRAIN_ROUGH_MAX,
        .rough_step = ENV_TERRAIN_ROUGH_STEP,
        .rough_downsampled = ENV_TERRAIN_ROUGH_DOWNSAMPLED,
        .stairs_width = ENV_TERRAIN_STAIRS_WIDTH,
        .stairs_height = ENV_TERRAIN_STAIRS_HEIGHT,
        .stairs_height_per_difficulty = ENV_TERRAIN_STAIRS_HEIGHT_PER_DIFFICULTY,
        .stairs_platform = ENV_TERRAIN_STAIRS_PLATFORM,
        .obstacles_height = ENV_TERRAIN_OBSTACLES_HEIGHT,
        .obstacles_height_per_difficulty = ENV_TERRAIN_OBSTACLES_HEIGHT_PER_DIFFICULTY,
        .obstacles_min_size = ENV_TERRAIN_OBSTACLES_MIN_SIZE,
        .obstacles_max_size = ENV_TERRAIN_OBSTACLES_MAX_SIZE,
        .obstacles_count = ENV_TERRAIN_OBSTACLES_COUNT,
        .obstacles_platform = ENV_TERRAIN_OBSTACLES_PLATFORM,
    };
}

static void fail(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* Python's a // b for b > 0. */
static int floordiv(int a, int b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

/* base + per * d with the product rounded on its own, as Python evaluates it. */
static double ramp(double base, double per, double d)
{
    volatile double p = per * d;
    return base + p;
}

/* int(x) of a figure that must be a sample or unit count: -1 with err filled when x is not finite or
 * beyond +-limit. */
static int trunc_checked(double x, int limit, int *out, const char *what, char *err, size_t errlen)
{
    if (!isfinite(x) || fabs(x) >= (double)limit + 1.0) {
        fail(err, errlen, "terrain: %s is %g, beyond +-%d", what, x, limit);
        return -1;
    }
    *out = (int)x;
    return 0;
}

/* A uniform index in [0, k) (numpy's choice among k values). */
static int pick(env_rng *r, int k)
{
    int i = (int)(env_rng_uniform(r) * k);
    return i < k ? i : k - 1;
}

/* Python's len(range(start, stop, step)) for step > 0. */
static int range_len(int start, int stop, int step) { return stop > start ? (stop - start + step - 1) / step : 0; }

int env_terrain_upsample(const int16_t *coarse, int nc, int16_t *fine, int nf)
{
    if (!coarse || !fine || nc < 2 || nf < 2 || nc > 1 << 15 || nf > 1 << 15) return -1;
    const int64_t den = nf - 1, den2 = den * den;
    for (int a = 0; a < nf; a++) {
        const int64_t ua = (int64_t)a * (nc - 1);
        int ca = (int)(ua / den);
        int64_t fa = ua % den;
        if (ca == nc - 1) ca--, fa = den;       /* the last point sits on the last coarse point */
        for (int b = 0; b < nf; b++) {
            const int64_t ub = (int64_t)b * (nc - 1);
            int cb = (int)(ub / den);
            int64_t fb = ub % den;
            if (cb == nc - 1) cb--, fb = den;
            const int16_t *c = coarse + (size_t)ca * nc + cb;
            const int64_t num = (den - fa) * (den - fb) * c[0] + (den - fa) * fb * c[1] +
                                fa * (den - fb) * c[nc] + fa * fb * c[nc + 1];
            int64_t q = num >= 0 ? num / den2 : -((-num + den2 - 1) / den2);    /* floor */
            const int64_t r2 = 2 * (num - q * den2);                            /* in [0, 2 den2) */
            if (r2 > den2 || (r2 == den2 && (q & 1))) q++;
            fine[(size_t)a * nf + b] = (int16_t)q;
        }
    }
    return 0;
}

/* Per-tile figures that do not depend on the difficulty, in samples and units; checked once. */
typedef struct {
    int n;
    int slope_half_platform;        /* int(platform / hs / 2) */
    int rough_values[1024], rough_count, rough_nc;
    int stairs_width, stairs_platform;
    int obst_min, obst_max, obst_platform, obst_widths;
    int origin_lo, origin_hi;
} tile_plan;

/* Scratch of one tile: the square and the rough noise's grids. */
typedef struct {
    int32_t *tile;
    int16_t *coarse, *fine;
} tile_scratch;

static void pyramid_slope(const tile_plan *p, int32_t *T, int max_height)
{
    const int n = p->n, cx = n / 2;
    for (int a = 0; a < n; a++) {
        const double xa = (double)(cx - abs(cx - a)) / cx;
        const double hx = max_height * xa;
        for (int b = 0; b < n; b++) T[a * n + b] = (int32_t)(hx * ((double)(cx - abs(cx - b)) / cx));
    }
    const int x1 = n / 2 - p->slope_half_platform;
    const int32_t h1 = T[x1 * n + x1];
    const int32_t lo = h1 < 0 ? h1 : 0, hi = h1 > 0 ? h1 : 0;
    for (int k = 0; k < n * n; k++) T[k] = T[k] < lo ? lo : T[k] > hi ? hi : T[k];
}

static void rough_noise(const tile_plan *p, int32_t *T, env_rng *r, tile_scratch *s)
{
    const int nc = p->rough_nc, n = p->n;
    for (int k = 0; k < nc * nc; k++) s->coarse[k] = (int16_t)p->rough_values[pick(r, p->rough_count)];
    env_terrain_upsample(s->coarse, nc, s->fine, n);
    for (int k = 0; k < n * n; k++) T[k] += s->fine[k];
}

static void pyramid_stairs(const tile_plan *p, int32_t *T, int step_height)
{
    const int n = p->n, w = p->stairs_width;
    int height = 0, start = 0, stop = n;
    memset(T, 0, sizeof *T * (size_t)n * n);
    while (stop - start > p->stairs_platform) {
        start += w;
        stop -= w;
        height += step_height;
        for (int a = start; a < stop; a++)
            for (int b = start; b < stop; b++) T[a * n + b] = height;
    }
}

static void discrete_obstacles(const env_terrain_config *c, const tile_plan *p, int32_t *T, int max_height,
                               env_rng *r)
{
    const int n = p->n;
    const int heights[4] = {-max_height, floordiv(-max_height, 2), floordiv(max_height, 2), max_height};
    memset(T, 0, sizeof *T * (size_t)n * n);
    for (int k = 0; k < c->obstacles_count; k++) {
        const int w = p->obst_min + 4 * pick(r, p->obst_widths);
        const int l = p->obst_min + 4 * pick(r, p->obst_widths);
        const int si = 4 * pick(r, range_len(0, n - w, 4));
        const int sj = 4 * pick(r, range_len(0, n - l, 4));
        const int h = heights[pick(r, 4)];
        for (int a = si; a < si + w; a++)
            for (int b = sj; b < sj + l; b++) T[a * n + b] = h;
    }
    const int x1 = (n - p->obst_platform) / 2, x2 = (n + p->obst_platform) / 2;
    for (int a = x1; a < x2; a++)
        for (int b = x1; b < x2; b++) T[a * n + b] = 0;
}

/* legged_gym's make_terrain: the kind of a column from its choice (-1 past the last proportion). */
static int kind_of(const double cum[5], double choice)
{
    if (choice < cum[0]) return choice < cum[0] / 2 ? ENV_TILE_SLOPE_UP : ENV_TILE_SLOPE_DOWN;
    if (choice < cum[1]) return ENV_TILE_ROUGH_SLOPE;
    if (choice < cum[3]) return choice < cum[2] ? ENV_TILE_STAIRS_UP : ENV_TILE_STAIRS_DOWN;
    if (choice < cum[4]) return ENV_TILE_OBSTACLES;
    return -1;
}

/* Tile (row, col) of kind `kind` into s->tile; -1 with err filled if a height leaves int16. */
static int make_tile(const env_terrain_config *c, const tile_plan *p, uint64_t seed, int row, int col, int kind,
                     double d, tile_scratch *s, char *err, size_t errlen)
{
    const double hs = c->horizontal_scale, vs = c->vertical_scale;
    env_rng r = env_rng_for(seed, TILE_STREAM | (uint64_t)row << 32 | (uint64_t)col, 0);
    int32_t *T = s->tile;
    int h;
    switch (kind) {
    case ENV_TILE_SLOPE_UP:
    case ENV_TILE_SLOPE_DOWN:
    case ENV_TILE_ROUGH_SLOPE: {
        double slope = d * c->slope_per_difficulty;
        if (kind == ENV_TILE_SLOPE_UP) slope = -slope;
        if (trunc_checked(slope * (hs / vs) * (p->n / 2.0), INT16_MAX, &h, "a slope's height (units)", err, errlen))
            return -1;
        pyramid_slope(p, T, h);
        if (kind == ENV_TILE_ROUGH_SLOPE) rough_noise(p, T, &r, s);
        break;
    }
    case ENV_TILE_STAIRS_UP:
    case ENV_TILE_STAIRS_DOWN: {
        double step = ramp(c->stairs_height, c->stairs_height_per_difficulty, d);
        if (kind == ENV_TILE_STAIRS_UP) step = -step;
        if (trunc_checked(step / vs, INT16_MAX, &h, "a riser's height (units)", err, errlen)) return -1;
        pyramid_stairs(p, T, h);
        break;
    }
    default: {
        const double height = ramp(c->obstacles_height, c->obstacles_height_per_difficulty, d);
        if (trunc_checked(height / vs, INT16_MAX, &h, "an obstacle's height (units)", err, errlen)) return -1;
        discrete_obstacles(c, p, T, h, &r);
        break;
    }
    }
    for (int k = 0; k < p->n * p->n; k++)
        if (T[k] < INT16_MIN || T[k] > INT16_MAX) {
            fail(err, errlen, "terrain: tile (%d, %d) (%s) reaches %d units, beyond int16", row, col,
                 env_tile_name(kind), (int)T[k]);
            return -1;
        }
    return 0;
}

#define CHECK(cond, ...)                                                                                         \
    do {                                                                                                         \
        if (!(cond)) {                                                                                           \
            fail(err, errlen, "terrain: " __VA_ARGS__);                                                          \
            return -1;                                                                                           \
        }                                                                                                        \
    } while (0)

static int positive(double x) { return isfinite(x) && x > 0; }

/* Checks cfg and works out its sample counts into *p, *border. */
static int plan(const env_terrain_config *c, tile_plan *p, int *border, char *err, size_t errlen)
{
    memset(p, 0, sizeof *p);
    CHECK(c->rows >= 1 && c->cols >= 1 && c->rows <= 4096 && c->cols <= 4096, "rows and cols must be in [1, 4096]");
    CHECK(positive(c->horizontal_scale) && positive(c->vertical_scale), "the scales must be positive");
    CHECK(positive(c->tile_size) && isfinite(c->border_size) && c->border_size >= 0,
          "tile_size must be positive and border_size >= 0");
    const double hs = c->horizontal_scale, vs = c->vertical_scale;
    if (trunc_checked(c->tile_size / hs, 1 << 16, &p->n, "tile_size / horizontal_scale", err, errlen) ||
        trunc_checked(c->border_size / hs, 1 << 20, border, "border_size / horizontal_scale", err, errlen))
        return -1;
    CHECK(p->n >= 2, "a tile needs at least 2 samples a side (has %d)", p->n);
    const long nx = (long)c->rows * p->n + 2l * *border, ny = (long)c->cols * p->n + 2l * *border;
    CHECK(nx * ny <= MAX_SAMPLES, "%ld x %ld samples exceed %ld", nx, ny, MAX_SAMPLES);

    double cum = 0;
    for (int k = 0; k < 5; k++) {
        CHECK(isfinite(c->proportions[k]) && c->proportions[k] >= 0, "proportion %d must be finite and >= 0", k);
        cum += c->proportions[k];
    }
    const double last = (double)(c->cols - 1) / c->cols + 0.001;
    CHECK(last < cum, "the proportions (sum %g) do not cover column %d (choice %g)", cum, c->cols - 1, last);

    CHECK(isfinite(c->origin_half) && c->origin_half > 0, "origin_half must be positive");
    if (trunc_checked((c->tile_size / 2. - c->origin_half) / hs, 1 << 16, &p->origin_lo, "the origin square", err,
                      errlen) ||
        trunc_checked((c->tile_size / 2. + c->origin_half) / hs, 1 << 16, &p->origin_hi, "the origin square", err,
                      errlen))
        return -1;
    CHECK(0 <= p->origin_lo && p->origin_lo < p->origin_hi && p->origin_hi <= p->n,
          "the origin square (samples %d to %d) must lie inside the tile (%d samples)", p->origin_lo, p->origin_hi,
          p->n);

    CHECK(isfinite(c->slope_per_difficulty) && isfinite(c->slope_platform) && c->slope_platform >= 0,
          "the slope's figures must be finite, its platform >= 0");
    if (trunc_checked(c->slope_platform / hs / 2, 1 << 16, &p->slope_half_platform, "the slope's platform", err,
                      errlen))
        return -1;
    CHECK(p->slope_half_platform <= p->n / 2, "the slope's platform is wider than the tile");

    int lo, hi, step;
    CHECK(isfinite(c->rough_min) && isfinite(c->rough_max) && positive(c->rough_step) && positive(c->rough_downsampled),
          "the rough noise's figures must be finite, its step and downsampled scale positive");
    if (trunc_checked(c->rough_min / vs, INT16_MAX, &lo, "rough_min (units)", err, errlen) ||
        trunc_checked(c->rough_max / vs, INT16_MAX, &hi, "rough_max (units)", err, errlen) ||
        trunc_checked(c->rough_step / vs, INT16_MAX, &step, "rough_step (units)", err, errlen) ||
        trunc_checked(p->n * hs / c->rough_downsampled, 1 << 16, &p->rough_nc, "the rough noise's grid", err, errlen))
        return -1;
    CHECK(step >= 1, "rough_step is below one height unit");
    p->rough_count = range_len(lo, hi + step, step);
    CHECK(p->rough_count >= 1 && p->rough_count <= 1024, "the rough noise must have 1 to 1024 levels (has %d)",
          p->rough_count);
    CHECK(lo + (p->rough_count - 1) * step <= INT16_MAX, "the rough noise's top level is beyond int16");
    for (int k = 0; k < p->rough_count; k++) p->rough_values[k] = lo + k * step;
    CHECK(p->rough_nc >= 2 && p->rough_nc <= p->n, "the rough noise's grid (%d a side) must have 2 to %d points",
          p->rough_nc, p->n);

    CHECK(isfinite(c->stairs_height) && isfinite(c->stairs_height_per_difficulty) && positive(c->stairs_width) &&
              isfinite(c->stairs_platform),
          "the stairs' figures must be finite, their width positive");
    if (trunc_checked(c->stairs_width / hs, 1 << 16, &p->stairs_width, "the stairs' width", err, errlen) ||
        trunc_checked(c->stairs_platform / hs, 1 << 16, &p->stairs_platform, "the stairs' platform", err, errlen))
        return -1;
    CHECK(p->stairs_width >= 1, "a tread is narrower than one sample");

    CHECK(isfinite(c->obstacles_height) && isfinite(c->obstacles_height_per_difficulty) &&
              positive(c->obstacles_min_size) && positive(c->obstacles_max_size) && isfinite(c->obstacles_platform) &&
              c->obstacles_platform >= 0,
          "the obstacles' figures must be finite, their sizes positive");
    CHECK(c->obstacles_count >= 0 && c->obstacles_count <= 100000, "obstacles_count must be in [0, 100000]");
    if (trunc_checked(c->obstacles_min_size / hs, 1 << 16, &p->obst_min, "the obstacles' min size", err, errlen) ||
        trunc_checked(c->obstacles_max_size / hs, 1 << 16, &p->obst_max, "the obstacles' max size", err, errlen) ||
        trunc_checked(c->obstacles_platform / hs, 1 << 16, &p->obst_platform, "the obstacles' platform", err, errlen))
        return -1;
    p->obst_widths = range_len(p->obst_min, p->obst_max, 4);
    CHECK(p->obst_min >= 1 && p->obst_widths >= 1, "obstacle sizes need 1 <= min < max samples (%d, %d)", p->obst_min,
          p->obst_max);
    CHECK(p->obst_min + 4 * (p->obst_widths - 1) < p->n, "an obstacle may be as wide as the tile");
    CHECK(p->obst_platform <= p->n, "the obstacles' platform is wider than the tile");
    return 0;
}

env_terrain *env_terrain_new(const env_terrain_config *cfg, uint64_t seed, char *err, size_t errlen)
{
    if (!cfg) {
        fail(err, errlen, "terrain: no config");
        return NULL;
    }
    tile_plan *p = malloc(sizeof *p);
    if (!p) {
        fail(err, errlen, "terrain: out of memory");
        return NULL;
    }
    int border;
    if (plan(cfg, p, &border, err, errlen)) {
        free(p);
        return NULL;
    }
    const int n = p->n, ntile = cfg->rows * cfg->cols;
    const int nx = cfg->rows * n + 2 * border, ny = cfg->cols * n + 2 * border;
    const size_t head = (sizeof(env_terrain) + 63) / 64 * 64;
    const size_t tiles = sizeof(env_terrain_tile) * (size_t)ntile, samples = (size_t)nx * ny;
    env_terrain *t = calloc(1, head + tiles + sizeof(int16_t) * samples);
    tile_scratch s = {malloc(sizeof(int32_t) * (size_t)n * n), malloc(sizeof(int16_t) * (size_t)p->rough_nc * p->rough_nc),
                      malloc(sizeof(int16_t) * (size_t)n * n)};
    if (!t || !s.tile || !s.coarse || !s.fine) {
        fail(err, errlen, "terrain: out of memory");
        goto bad;
    }
    t->cfg = *cfg;
    t->seed = seed;
    t->n = n;
    t->border = border;
    t->nx = nx;
    t->ny = ny;
    t->tiles = (env_terrain_tile *)((char *)t + head);
    t->heights = (int16_t *)((char *)t->tiles + tiles);

    double cum[5];
    cum[0] = cfg->proportions[0];
    for (int k = 1; k < 5; k++) cum[k] = cum[k - 1] + cfg->proportions[k];
    for (int j = 0; j < cfg->cols; j++) {
        const int kind = kind_of(cum, (double)j / cfg->cols + 0.001);
        for (int i = 0; i < cfg->rows; i++) {
            const double d = (double)i / cfg->rows;
            if (make_tile(cfg, p, seed, i, j, kind, d, &s, err, errlen)) goto bad;
            int32_t top = INT32_MIN;
            for (int a = p->origin_lo; a < p->origin_hi; a++)
                for (int b = p->origin_lo; b < p->origin_hi; b++)
                    if (s.tile[a * n + b] > top) top = s.tile[a * n + b];
            env_terrain_tile *tile = &t->tiles[i * cfg->cols + j];
            tile->kind = kind;
            tile->difficulty = d;
            tile->origin[0] = (i + 0.5) * cfg->tile_size;
            tile->origin[1] = (j + 0.5) * cfg->tile_size;
            tile->origin[2] = top * cfg->vertical_scale;
            for (int a = 0; a < n; a++) {
                int16_t *dst = t->heights + (size_t)(border + j * n) * nx + border + i * n + a;
                for (int b = 0; b < n; b++) dst[(size_t)b * nx] = (int16_t)s.tile[a * n + b];
            }
        }
    }
    free(s.tile);
    free(s.coarse);
    free(s.fine);
    free(p);
    return t;
bad:
    free(s.tile);
    free(s.coarse);
    free(s.fine);
    free(p);
    free(t);
    return NULL;
}

void env_terrain_destroy(env_terrain **t)
{
    if (!t || !*t) return;
    free(*t);
    *t = NULL;
}

const env_terrain_config *env_terrain_config_of(const env_terrain *t) { return &t->cfg; }
uint64_t env_terrain_seed(const env_terrain *t) { return t->seed; }
int env_terrain_tile_samples(const env_terrain *t) { return t->n; }
int env_terrain_border_samples(const env_terrain *t) { return t->border; }

const int16_t *env_terrain_heights(const env_terrain *t, int *nx, int *ny)
{
    if (nx) *nx = t->nx;
    if (ny) *ny = t->ny;
    return t->heights;
}

int env_terrain_tile_at(const env_terrain *t, int row, int col, env_terrain_tile *out)
{
    if (row < 0 || row >= t->cfg.rows || col < 0 || col >= t->cfg.cols) return -1;
    *out = t->tiles[row * t->cfg.cols + col];
    return 0;
}

int env_terrain_origin(const env_terrain *t, int level, int col, double origin[3])
{
    env_terrain_tile tile;
    if (env_terrain_tile_at(t, level, col, &tile)) return -1;
    memcpy(origin, tile.origin, sizeof tile.origin);
    return 0;
}

size_t env_terrain_bytes(const env_terrain *t)
{
    return sizeof(int16_t) * (size_t)t->nx * t->ny + sizeof(env_terrain_tile) * (size_t)t->cfg.rows * t->cfg.cols;
}

int env_terrain_to_hfield(const env_terrain *t, float *heights, size_t n, sim_terrain *out, char *err,
                          size_t errlen)
{
    const size_t need = (size_t)t->nx * t->ny;
    if (!heights || !out || n != need) {
        fail(err, errlen, "terrain: the heightfield needs %zu floats (got %zu)", need, heights ? n : 0);
        return -1;
    }
    const double vs = t->cfg.vertical_scale;
    for (size_t k = 0; k < need; k++) heights[k] = (float)(t->heights[k] * vs);
    *out = (sim_terrain){.type = SIM_TERRAIN_HFIELD,
                         .nx = t->nx,
                         .ny = t->ny,
                         .x0 = -t->cfg.border_size,
                         .y0 = -t->cfg.border_size,
                         .dx = t->cfg.horizontal_scale,
                         .dy = t->cfg.horizontal_scale,
                         .heights = heights};
    return 0;
}

int env_terrain_to_cells(const env_terrain *t, float *heights, unsigned char *smooth, size_t n, sim_terrain *out,
                         char *err, size_t errlen)
{
    if (!smooth) {
        fail(err, errlen, "terrain: the cell terrain needs a smooth mask");
        return -1;
    }
    sim_terrain hf;
    if (env_terrain_to_hfield(t, heights, n, &hf, err, errlen)) return -1;
    memset(smooth, 0, n);
    for (int row = 0; row < t->cfg.rows; row++)
        for (int col = 0; col < t->cfg.cols; col++) {
            const int kind = t->tiles[row * t->cfg.cols + col].kind;
            if (kind != ENV_TILE_SLOPE_UP && kind != ENV_TILE_SLOPE_DOWN && kind != ENV_TILE_ROUGH_SLOPE) continue;
            for (int iy = t->border + col * t->n; iy < t->border + (col + 1) * t->n; iy++)
                memset(smooth + (size_t)iy * t->nx + t->border + (size_t)row * t->n, 1, (size_t)t->n);
        }
    return sim_terrain_cells(out, hf.nx, hf.ny, hf.x0, hf.y0, hf.dx, hf.dy, heights, smooth, err, errlen);
}
