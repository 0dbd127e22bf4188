/* test_terrain.c — envs/env_terrain: legged_gym's curriculum terrain, level by level.
 *
 * Expected figures come two ways: from the formulas, computed here (riser, slope and obstacle heights per
 * level, origins, border, proportions), and from tests/testdata/terrain_ref.txt, written by
 * tests/testdata/terrain_ref.py, an independent numpy statement of legged_gym's and Isaac Gym's generators
 * (whole deterministic tiles, the rough noise's upsampling against scipy's interp2d). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env_terrain.h"
#include "sim_collision.h"

#define REF "tests/testdata/terrain_ref.txt"

static env_terrain *field(uint64_t seed)
{
    env_terrain_config c = env_terrain_config_default();
    char err[256] = "";
    env_terrain *t = env_terrain_new(&c, seed, err, sizeof err);
    cr_assert(t, "env_terrain_new: %s", err);
    return t;
}

/* Sample (a, b) of tile (row, col), a along x (legged_gym's tile array index [a, b]), in height units. */
static int at(const env_terrain *t, int row, int col, int a, int b)
{
    int nx, ny;
    const int16_t *h = env_terrain_heights(t, &nx, &ny);
    const int n = env_terrain_tile_samples(t), B = env_terrain_border_samples(t);
    return h[(size_t)(B + col * n + b) * nx + B + row * n + a];
}

static int kind_at(const env_terrain *t, int row, int col)
{
    env_terrain_tile tile;
    cr_assert_eq(env_terrain_tile_at(t, row, col, &tile), 0);
    return tile.kind;
}

/* First column of a kind. */
static int column_of(const env_terrain *t, int kind)
{
    for (int j = 0; j < env_terrain_config_of(t)->cols; j++)
        if (kind_at(t, 0, j) == kind) return j;
    cr_assert_fail("no column of kind %s", env_tile_name(kind));
    return -1;
}

/* base + per * d with the product rounded alone (as Python computes legged_gym's ramps). */
static double ramp(double base, double per, double d)
{
    volatile double p = per * d;
    return base + p;
}

static int floordiv2(int a) { return a >= 0 ? a / 2 : -((-a + 1) / 2); }

/* ---- the reference file ---- */

typedef struct {
    int kinds[64], nkinds;
    struct { int kind, level, col; long long sum, wsum; int origin; int centre[80], diag[80]; } tile[100];
    int ntile, nfixed;              /* tiles: the deterministic ones first, then the random ones of random_seed */
    unsigned long long random_seed;
    int level[10][7];
    int rough[64], nrough;
    struct { int nc, nf; int16_t coarse[1600], fine[6400]; } up[3];
    int nup;
} ref_t;

static int read_ints(char *s, int *v, int max)
{
    int n = 0;
    for (char *tok = strtok(s, " \n"); tok && n < max; tok = strtok(NULL, " \n")) v[n++] = atoi(tok);
    return n;
}

static ref_t *load_ref(void)
{
    FILE *f = fopen(REF, "r");
    cr_assert(f, "cannot open %s (tests run from the repository root)", REF);
    ref_t *r = calloc(1, sizeof *r);
    static char line[65536];
    static int v[8192];
    while (fgets(line, sizeof line, f)) {
        char *sp = strchr(line, ' ');
        if (line[0] == '#' || !sp) continue;
        *sp = 0;
        const char *tag = line;
        if (!strcmp(tag, "tile") || !strcmp(tag, "random")) {
            long long a, b, c, d, e, col = -1;
            unsigned long long seed = 0;
            int ok = tag[0] == 't' ? sscanf(sp + 1, "%lld %lld %lld %lld %lld", &a, &b, &c, &d, &e) == 5
                                   : sscanf(sp + 1, "%llu %lld %lld %lld %lld %lld %lld", &seed, &a, &b, &col, &c, &d,
                                            &e) == 7;
            cr_assert(ok && r->ntile < 100, "%s: bad record", tag);
            if (tag[0] == 't') r->nfixed = r->ntile + 1;
            else r->random_seed = seed;
            r->tile[r->ntile].kind = (int)a, r->tile[r->ntile].level = (int)b, r->tile[r->ntile].col = (int)col;
            r->tile[r->ntile].sum = c, r->tile[r->ntile].wsum = d, r->tile[r->ntile].origin = (int)e;
            r->ntile++;
            continue;
        }
        int n = read_ints(sp + 1, v, 8192);
        if (!strcmp(tag, "kinds")) memcpy(r->kinds, v, sizeof(int) * (size_t)(r->nkinds = n));
        else if (!strcmp(tag, "centre") || !strcmp(tag, "diag")) {
            cr_assert(r->ntile > 0 && n == 80, "%s: %d values", tag, n);
            memcpy(tag[0] == 'c' ? r->tile[r->ntile - 1].centre : r->tile[r->ntile - 1].diag, v, sizeof(int) * 80);
        } else if (!strcmp(tag, "level")) {
            cr_assert(n == 7 && v[0] >= 0 && v[0] < 10, "level: %d values", n);
            memcpy(r->level[v[0]], v, sizeof(int) * 7);
        }
        else if (!strcmp(tag, "rough_levels")) memcpy(r->rough, v, sizeof(int) * (size_t)(r->nrough = n));
        else if (!strcmp(tag, "upsample")) {
            cr_assert(r->nup < 3 && n == 2 && v[0] * v[0] <= 1600 && v[1] * v[1] <= 6400);
            r->up[r->nup].nc = v[0], r->up[r->nup].nf = v[1], r->nup++;
        }
        else if (!strcmp(tag, "coarse"))
            for (int k = 0; k < n; k++) r->up[r->nup - 1].coarse[k] = (int16_t)v[k];
        else if (!strcmp(tag, "fine"))
            for (int k = 0; k < n; k++) r->up[r->nup - 1].fine[k] = (int16_t)v[k];
    }
    fclose(f);
    cr_assert_eq(r->nfixed, 40, "the reference has %d deterministic tiles (4 kinds x 10 levels expected)", r->nfixed);
    cr_assert_eq(r->ntile - r->nfixed, 60, "the reference has %d random tiles (6 columns x 10 levels expected)",
                 r->ntile - r->nfixed);
    cr_assert_eq(r->nup, 3);
    return r;
}

/* ---- tests ---- */

Test(terrain, dimensions_and_memory)
{
    env_terrain *t = field(1);
    const env_terrain_config *c = env_terrain_config_of(t);
    int nx, ny;
    env_terrain_heights(t, &nx, &ny);
    const int n = (int)(c->tile_size / c->horizontal_scale), B = (int)(c->border_size / c->horizontal_scale);
    cr_assert_eq(env_terrain_tile_samples(t), n);
    cr_assert_eq(env_terrain_border_samples(t), B);
    cr_assert_eq(nx, c->rows * n + 2 * B);
    cr_assert_eq(ny, c->cols * n + 2 * B);
    cr_assert_eq(nx, 1300, "legged_gym's field is 1300 x 2100 samples");
    cr_assert_eq(ny, 2100);
    cr_assert_eq(env_terrain_bytes(t),
                 sizeof(int16_t) * (size_t)nx * ny + sizeof(env_terrain_tile) * (size_t)c->rows * c->cols);
    env_terrain_destroy(&t);
    cr_assert_null(t);
    env_terrain_destroy(&t);
}

Test(terrain, column_kinds_follow_the_proportions)
{
    ref_t *r = load_ref();
    env_terrain *t = field(1);
    const env_terrain_config *c = env_terrain_config_of(t);
    cr_assert_eq(r->nkinds, c->cols);
    int count[ENV_TILE_COUNT] = {0};
    for (int j = 0; j < c->cols; j++) {
        const int k = kind_at(t, 0, j);
        cr_assert_eq(k, r->kinds[j], "column %d: %s, the reference says %s", j, env_tile_name(k),
                     env_tile_name(r->kinds[j]));
        for (int i = 1; i < c->rows; i++) cr_assert_eq(kind_at(t, i, j), k, "a column keeps its kind");
        count[k]++;
    }
    /* columns per share of 20: 5 % + 5 % smooth slopes, 10 % rough, 35 % up, 25 % down, 20 % obstacles */
    for (int k = 0; k < ENV_TILE_COUNT; k++) {
        const double share = k < 2 ? c->proportions[0] / 2 : c->proportions[k - 1];
        cr_assert_eq(count[k], (int)lround(share * c->cols), "%s: %d columns", env_tile_name(k), count[k]);
    }
    /* kinds in column order (legged_gym's choice is increasing in the column) */
    for (int j = 1; j < c->cols; j++) cr_assert_geq(kind_at(t, 0, j), kind_at(t, 0, j - 1));
    env_terrain_destroy(&t);
    free(r);
}

/* Tile (level, j) of t against reference tile k: sums, two lines, origin. */
static void same_tile(const env_terrain *t, const ref_t *r, int k, int j)
{
    const env_terrain_config *c = env_terrain_config_of(t);
    const int n = env_terrain_tile_samples(t), kind = r->tile[k].kind, level = r->tile[k].level;
    cr_assert_eq(kind_at(t, level, j), kind);
    long long sum = 0, wsum = 0;
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++) {
            const int h = at(t, level, j, a, b);
            sum += h;
            wsum += (long long)h * (a * n + b + 1);
        }
    cr_assert_eq(sum, r->tile[k].sum, "%s level %d column %d: sum %lld, reference %lld", env_tile_name(kind),
                 level, j, sum, r->tile[k].sum);
    cr_assert_eq(wsum, r->tile[k].wsum, "%s level %d column %d: weighted sum", env_tile_name(kind), level, j);
    for (int a = 0; a < n; a++) {
        cr_assert_eq(at(t, level, j, a, n / 2), r->tile[k].centre[a], "%s level %d: centre line at %d",
                     env_tile_name(kind), level, a);
        cr_assert_eq(at(t, level, j, a, a), r->tile[k].diag[a], "%s level %d: diagonal at %d",
                     env_tile_name(kind), level, a);
    }
    double o[3];
    cr_assert_eq(env_terrain_origin(t, level, j, o), 0);
    cr_assert_eq(o[2], r->tile[k].origin * c->vertical_scale, "%s level %d: origin z %g",
                 env_tile_name(kind), level, o[2]);
}

Test(terrain, deterministic_tiles_equal_the_reference)
{
    ref_t *r = load_ref();
    env_terrain *t = field(7);
    const env_terrain_config *c = env_terrain_config_of(t);
    for (int k = 0; k < r->nfixed; k++)
        for (int j = 0; j < c->cols; j++)
            if (kind_at(t, r->tile[k].level, j) == r->tile[k].kind) same_tile(t, r, k, j);
    env_terrain_destroy(&t);
    free(r);
}

/* The random tiles, whole, as the reference draws them from herd's streams with legged_gym's generators. */
Test(terrain, random_tiles_equal_the_reference)
{
    ref_t *r = load_ref();
    env_terrain *t = field(r->random_seed);
    for (int k = r->nfixed; k < r->ntile; k++) same_tile(t, r, k, r->tile[k].col);
    env_terrain_destroy(&t);
    free(r);
}

/* Risers measured along the line from the tile's edge to its centre: (0.05 + 0.18 d) / 0.005 truncated,
 * every int(0.31 / 0.1) = 3 samples, until the 3 m platform. */
Test(terrain, stair_risers_per_level)
{
    ref_t *r = load_ref();
    env_terrain *t = field(3);
    const env_terrain_config *c = env_terrain_config_of(t);
    const int n = env_terrain_tile_samples(t), tread = (int)(c->stairs_width / c->horizontal_scale);
    const int platform = (int)(c->stairs_platform / c->horizontal_scale);
    const int nsteps = (n - platform + 2 * tread - 1) / (2 * tread);     /* rings until the inside is <= platform */
    cr_assert_eq(tread, 3);
    cr_assert_eq(nsteps, 9);
    for (int kind = ENV_TILE_STAIRS_UP; kind <= ENV_TILE_STAIRS_DOWN; kind++) {
        const int j = column_of(t, kind);
        for (int i = 0; i < c->rows; i++) {
            const double d = (double)i / c->rows;
            const int rise = (int)(ramp(0.05, 0.18, d) / 0.005);
            cr_assert_eq(rise, r->level[i][1], "level %d: riser %d units, the reference %d", i, rise, r->level[i][1]);
            const int sign = kind == ENV_TILE_STAIRS_UP ? -1 : 1;
            int risers = 0;
            for (int a = 1; a <= n / 2; a++) {
                const int step = at(t, i, j, a, n / 2) - at(t, i, j, a - 1, n / 2);
                if (!step) continue;
                risers++;
                cr_assert_eq(step, sign * rise, "%s level %d: riser at %d is %d units, expected %d",
                             env_tile_name(kind), i, a, step, sign * rise);
                cr_assert_eq(a, risers * tread, "%s level %d: riser %d at sample %d", env_tile_name(kind), i, risers, a);
            }
            cr_assert_eq(risers, nsteps, "%s level %d: %d risers", env_tile_name(kind), i, risers);
            cr_assert_eq(at(t, i, j, n / 2, n / 2), sign * nsteps * rise);
        }
    }
    env_terrain_destroy(&t);
    free(r);
}

/* Smooth slopes: peak int(0.4 d x (0.1 / 0.005) x 40), the pyramid clipped at the platform corner's height. */
Test(terrain, slopes_per_level)
{
    ref_t *r = load_ref();
    env_terrain *t = field(3);
    const env_terrain_config *c = env_terrain_config_of(t);
    const int n = env_terrain_tile_samples(t);
    const int ju = column_of(t, ENV_TILE_SLOPE_UP), jd = column_of(t, ENV_TILE_SLOPE_DOWN);
    for (int i = 0; i < c->rows; i++) {
        const double d = (double)i / c->rows, slope = 0.4 * d;
        const int peak = (int)(slope * (0.1 / 0.005) * (n / 2.0));
        const int half = (int)(3.0 / 0.1 / 2), corner = n / 2 - half;
        const double f = (double)(n / 2 - abs(n / 2 - corner)) / (n / 2);
        const int top = (int)(peak * f * f);
        cr_assert_eq(top, r->level[i][6], "level %d: slope plateau %d units, reference %d", i, top, r->level[i][6]);
        int hi = INT16_MIN, lo = INT16_MAX;
        for (int a = 0; a < n; a++)
            for (int b = 0; b < n; b++) {
                const int hd = at(t, i, jd, a, b), hu = at(t, i, ju, a, b);
                cr_assert_eq(hu, -hd, "the two smooth slopes mirror each other (level %d, %d %d)", i, a, b);
                if (hd > hi) hi = hd;
                if (hd < lo) lo = hd;
            }
        cr_assert_eq(hi, top, "level %d: slope top %d", i, hi);
        cr_assert_eq(lo, 0);
        /* on the centre line below the plateau, each 0.1 m rises by peak / 40 units (within the truncations) */
        for (int a = 1; a < n / 2; a++) {
            const int rise = at(t, i, jd, a, n / 2) - at(t, i, jd, a - 1, n / 2);
            if (at(t, i, jd, a, n / 2) >= top) break;
            cr_assert(fabs(rise - peak / 40.0) <= 1.0, "level %d: rise %d at %d, slope %g", i, rise, a, slope);
        }
    }
    env_terrain_destroy(&t);
    free(r);
}

/* Rough slopes: the positive slope plus noise of the reference's levels (+-0.05 m by 0.005 m). */
Test(terrain, rough_noise_bounds)
{
    ref_t *r = load_ref();
    env_terrain *t = field(11);
    const env_terrain_config *c = env_terrain_config_of(t);
    const int n = env_terrain_tile_samples(t), jd = column_of(t, ENV_TILE_SLOPE_DOWN);
    const int lo = (int)(c->rough_min / c->vertical_scale), hi = (int)(c->rough_max / c->vertical_scale);
    cr_assert_eq(lo, r->rough[0]);
    cr_assert_eq(hi, r->rough[r->nrough - 1]);
    int seen_lo = 0, seen_hi = 0, tiles = 0;
    for (int j = 0; j < c->cols; j++) {
        if (kind_at(t, 0, j) != ENV_TILE_ROUGH_SLOPE) continue;
        for (int i = 0; i < c->rows; i++) {
            tiles++;
            long zero = 0;
            for (int a = 0; a < n; a++)
                for (int b = 0; b < n; b++) {
                    const int e = at(t, i, j, a, b) - at(t, i, jd, a, b);
                    cr_assert(e >= lo && e <= hi, "rough level %d column %d: noise %d at (%d, %d)", i, j, e, a, b);
                    seen_lo |= e == lo;
                    seen_hi |= e == hi;
                    zero += e == 0;
                }
            cr_assert_lt(zero, n * n / 4, "rough level %d column %d: %ld samples without noise", i, j, zero);
        }
    }
    cr_assert_eq(tiles, 20);
    cr_assert(seen_lo && seen_hi, "the noise reaches both of its bounds somewhere");
    env_terrain_destroy(&t);
    free(r);
}

/* Obstacles: heights in {-h, floor(-h / 2), floor(h / 2), h}, h = int((0.05 + 0.2 d) / 0.005); rectangles of
 * 10, 14 or 18 samples from starts on a 4-sample lattice (edges at even samples) that never reach the last
 * two samples; the 3 m centre flat. */
Test(terrain, obstacle_heights_per_level)
{
    ref_t *r = load_ref();
    env_terrain *t = field(5);
    const env_terrain_config *c = env_terrain_config_of(t);
    const int n = env_terrain_tile_samples(t), p1 = (n - 30) / 2, p2 = (n + 30) / 2;
    int tiles = 0;
    for (int j = 0; j < c->cols; j++) {
        if (kind_at(t, 0, j) != ENV_TILE_OBSTACLES) continue;
        for (int i = 0; i < c->rows; i++) {
            tiles++;
            const int h = (int)(ramp(0.05, 0.2, (double)i / c->rows) / 0.005);
            const int allowed[5] = {0, -h, floordiv2(-h), floordiv2(h), h};
            for (int k = 0; k < 4; k++) cr_assert_eq(allowed[k + 1], r->level[i][2 + k], "level %d height %d", i, k);
            int used[5] = {0};
            for (int a = 0; a < n; a++)
                for (int b = 0; b < n; b++) {
                    const int v = at(t, i, j, a, b);
                    int k = 0;
                    while (k < 5 && allowed[k] != v) k++;
                    cr_assert_lt(k, 5, "obstacles level %d: height %d at (%d, %d) (h = %d)", i, v, a, b, h);
                    used[k] = 1;
                    if ((a >= p1 && a < p2 && b >= p1 && b < p2) || a >= n - 2 || b >= n - 2)
                        cr_assert_eq(v, 0, "obstacles level %d: (%d, %d) must be flat", i, a, b);
                    if (a > 0 && v != at(t, i, j, a - 1, b))
                        cr_assert(a % 2 == 0 || a == p1 || a == p2, "obstacles level %d: an edge at x %d", i, a);
                    if (b > 0 && v != at(t, i, j, a, b - 1))
                        cr_assert(b % 2 == 0 || b == p1 || b == p2, "obstacles level %d: an edge at y %d", i, b);
                }
            cr_assert_geq(used[1] + used[2] + used[3] + used[4], 2, "20 rectangles show at least two heights");
            double o[3];
            env_terrain_origin(t, i, j, o);
            cr_assert_eq(o[2], 0.0, "the platform covers the central 2 m");
        }
    }
    cr_assert_eq(tiles, 40);
    env_terrain_destroy(&t);
    free(r);
}

Test(terrain, border_is_flat)
{
    env_terrain *t = field(9);
    int nx, ny;
    const int16_t *h = env_terrain_heights(t, &nx, &ny);
    const int B = env_terrain_border_samples(t);
    cr_assert_eq(B, 250);
    long nonzero_inside = 0;
    for (int iy = 0; iy < ny; iy++)
        for (int ix = 0; ix < nx; ix++) {
            const int inside = ix >= B && ix < nx - B && iy >= B && iy < ny - B;
            if (!inside) cr_assert_eq(h[(size_t)iy * nx + ix], 0, "border sample (%d, %d)", ix, iy);
            else nonzero_inside += h[(size_t)iy * nx + ix] != 0;
        }
    cr_assert_gt(nonzero_inside, 0);
    env_terrain_destroy(&t);
}

/* Origins: tile centre in the field frame, z = the highest sample of the central 2 m x 2 m (samples 30..49). */
Test(terrain, origins_are_the_central_maximum)
{
    env_terrain *t = field(13);
    const env_terrain_config *c = env_terrain_config_of(t);
    const int n = env_terrain_tile_samples(t);
    const int lo = (int)((c->tile_size / 2 - 1) / c->horizontal_scale), hi = (int)((c->tile_size / 2 + 1) / c->horizontal_scale);
    cr_assert_eq(lo, 30);
    cr_assert_eq(hi, 50);
    int rough_above = 0;
    for (int i = 0; i < c->rows; i++)
        for (int j = 0; j < c->cols; j++) {
            int top = INT16_MIN;
            for (int a = lo; a < hi; a++)
                for (int b = lo; b < hi; b++)
                    if (at(t, i, j, a, b) > top) top = at(t, i, j, a, b);
            env_terrain_tile tile;
            double o[3];
            cr_assert_eq(env_terrain_tile_at(t, i, j, &tile), 0);
            cr_assert_eq(env_terrain_origin(t, i, j, o), 0);
            cr_assert_eq(tile.difficulty, (double)i / c->rows);
            cr_assert_eq(o[0], (i + 0.5) * c->tile_size);
            cr_assert_eq(o[1], (j + 0.5) * c->tile_size);
            cr_assert_eq(o[2], top * c->vertical_scale, "tile (%d, %d): origin z %g, central max %d units", i, j, o[2],
                         top);
            cr_assert_eq(memcmp(o, tile.origin, sizeof o), 0);
            if (tile.kind == ENV_TILE_ROUGH_SLOPE && top > at(t, i, j, n / 2, n / 2)) rough_above++;
        }
    cr_assert_gt(rough_above, 0, "on rough tiles the noise lifts the central maximum above the centre");
    double o[3];
    env_terrain_tile tile;
    cr_assert_eq(env_terrain_origin(t, c->rows, 0, o), -1);
    cr_assert_eq(env_terrain_origin(t, 0, c->cols, o), -1);
    cr_assert_eq(env_terrain_origin(t, -1, 0, o), -1);
    cr_assert_eq(env_terrain_tile_at(t, 0, -1, &tile), -1);
    env_terrain_destroy(&t);
}

Test(terrain, the_seed_decides_the_random_tiles_only)
{
    env_terrain *a = field(42), *b = field(42), *c = field(43);
    int nx, ny;
    const int16_t *ha = env_terrain_heights(a, &nx, &ny);
    cr_assert_eq(memcmp(ha, env_terrain_heights(b, NULL, NULL), sizeof(int16_t) * (size_t)nx * ny), 0,
                 "the same seed gives the same field");
    cr_assert_eq(env_terrain_seed(a), 42);
    const env_terrain_config *cfg = env_terrain_config_of(a);
    const int n = env_terrain_tile_samples(a);
    for (int i = 0; i < cfg->rows; i++)
        for (int j = 0; j < cfg->cols; j++) {
            const int kind = kind_at(a, i, j);
            int differ = 0;
            for (int p = 0; p < n && !differ; p++)
                for (int q = 0; q < n && !differ; q++) differ = at(a, i, j, p, q) != at(c, i, j, p, q);
            env_terrain_tile ta, tc;
            env_terrain_tile_at(a, i, j, &ta);
            env_terrain_tile_at(c, i, j, &tc);
            if (kind == ENV_TILE_ROUGH_SLOPE || kind == ENV_TILE_OBSTACLES)
                cr_assert(differ, "%s tile (%d, %d) is the same under another seed", env_tile_name(kind), i, j);
            else {
                cr_assert(!differ, "%s tile (%d, %d) changed with the seed", env_tile_name(kind), i, j);
                cr_assert_eq(memcmp(&ta, &tc, sizeof ta), 0);
            }
        }
    env_terrain_destroy(&a);
    env_terrain_destroy(&b);
    env_terrain_destroy(&c);
}

Test(terrain, upsampling_equals_scipy)
{
    ref_t *r = load_ref();
    for (int u = 0; u < r->nup; u++) {
        const int nc = r->up[u].nc, nf = r->up[u].nf;
        int16_t *fine = malloc(sizeof(int16_t) * (size_t)nf * nf);
        cr_assert_eq(env_terrain_upsample(r->up[u].coarse, nc, fine, nf), 0);
        for (int k = 0; k < nf * nf; k++)
            cr_assert_eq(fine[k], r->up[u].fine[k], "%d -> %d: point (%d, %d) is %d, scipy %d", nc, nf, k / nf, k % nf,
                         fine[k], r->up[u].fine[k]);
        free(fine);
    }
    int16_t one[4] = {0};
    cr_assert_eq(env_terrain_upsample(r->up[0].coarse, 1, one, 2), -1, "one coarse point");
    cr_assert_eq(env_terrain_upsample(r->up[0].coarse, 2, one, 1), -1, "one fine point");
    cr_assert_eq(env_terrain_upsample(NULL, 2, one, 2), -1);
    free(r);
}

Test(terrain, heightfield_for_sim)
{
    env_terrain *t = field(17);
    int nx, ny;
    const int16_t *h = env_terrain_heights(t, &nx, &ny);
    const size_t n = (size_t)nx * ny;
    float *f = malloc(sizeof(float) * n);
    sim_terrain st;
    char err[200] = "";
    cr_assert_eq(env_terrain_to_hfield(t, f, n - 1, &st, err, sizeof err), -1);
    cr_assert_neq(err[0], 0);
    cr_assert_eq(env_terrain_to_hfield(t, f, n, &st, err, sizeof err), 0);
    cr_assert_eq(st.type, SIM_TERRAIN_HFIELD);
    cr_assert_eq(st.nx, nx);
    cr_assert_eq(st.ny, ny);
    cr_assert_eq(st.x0, -25.0);
    cr_assert_eq(st.y0, -25.0);
    cr_assert_eq(st.dx, 0.1);
    cr_assert_eq(st.dy, 0.1);
    cr_assert_eq(st.heights, f);
    for (size_t k = 0; k < n; k++) cr_assert_eq(f[k], (float)(h[k] * 0.005));
    /* a tile's origin lies over its centre sample: x0 + (border + (i + 0.5) n) dx = origin x */
    double o[3];
    env_terrain_origin(t, 3, 7, o);
    const int B = env_terrain_border_samples(t), T = env_terrain_tile_samples(t);
    cr_assert(fabs(st.x0 + (B + 3 * T + T / 2) * st.dx - o[0]) < 1e-9);
    cr_assert(fabs(st.y0 + (B + 7 * T + T / 2) * st.dy - o[1]) < 1e-9);
    free(f);
    env_terrain_destroy(&t);
}

Test(terrain, cells_for_sim)
{
    env_terrain *t = field(17);
    int nx, ny;
    const int16_t *h = env_terrain_heights(t, &nx, &ny);
    const size_t n = (size_t)nx * ny;
    float *f = malloc(sizeof(float) * n);
    unsigned char *mask = malloc(n);
    sim_terrain st;
    char err[200] = "";
    cr_assert_eq(env_terrain_to_cells(t, f, mask, n - 1, &st, err, sizeof err), -1);
    cr_assert_eq(env_terrain_to_cells(t, f, NULL, n, &st, err, sizeof err), -1);
    cr_assert_eq(env_terrain_to_cells(t, f, mask, n, &st, err, sizeof err), 0, "%s", err);
    cr_assert_eq(st.type, SIM_TERRAIN_CELLS);
    cr_assert(st.nx == nx && st.ny == ny && st.x0 == -25.0 && st.dx == 0.1 && st.heights == f && st.smooth == mask);
    const int B = env_terrain_border_samples(t), T = env_terrain_tile_samples(t);
    const env_terrain_config *cfg = env_terrain_config_of(t);
    /* every sample of a tile is smooth exactly when the tile is a slope or a rough slope; the border is not */
    for (int row = 0; row < cfg->rows; row++)
        for (int col = 0; col < cfg->cols; col++) {
            const int k = kind_at(t, row, col);
            const int want = k == ENV_TILE_SLOPE_UP || k == ENV_TILE_SLOPE_DOWN || k == ENV_TILE_ROUGH_SLOPE;
            for (int a = 0; a < T; a += 7)
                for (int b = 0; b < T; b += 5)
                    cr_assert_eq(mask[(size_t)(B + col * T + b) * nx + B + row * T + a], want, "tile %d %d", row, col);
        }
    for (int ix = 0; ix < nx; ix += 13) cr_assert_eq(mask[ix], 0, "border");
    /* a stairs-down tile of the hardest level: the query is the sample of the cell under the point (a riser is a
       jump from one cell to the next), a slope tile's the heightfield's bilinear surface */
    const int row = cfg->rows - 1, col = column_of(t, ENV_TILE_STAIRS_DOWN);
    int risers = 0;
    for (int a = 1; a < T; a++) {
        const double x = st.x0 + (B + row * T + a) * st.dx, y = st.y0 + (B + col * T + T / 4) * st.dy;
        double h0, h1, nn[3];
        sim_terrain_query(&st, x - 0.049, y, &h0, nn);
        sim_terrain_query(&st, x + 0.049, y, &h1, nn);
        cr_assert_eq(h0, h1, "flat within a cell");
        cr_assert_eq(h1, (float)(at(t, row, col, a, T / 4) * 0.005));
        double hp;
        sim_terrain_query(&st, x - 0.051, y, &hp, nn);
        if (fabs(h0 - hp) > 0.2) risers++;
    }
    cr_assert_gt(risers, 3, "21 cm risers as jumps between neighbouring cells");
    const int cs = column_of(t, ENV_TILE_SLOPE_DOWN);
    sim_terrain hf = st;
    hf.type = SIM_TERRAIN_HFIELD;
    const double x = st.x0 + (B + row * T + 11.3) * st.dx, y = st.y0 + (B + cs * T + 17.6) * st.dy;
    double h1, h2, n1[3], n2[3];
    sim_terrain_query(&st, x, y, &h1, n1);
    sim_terrain_query(&hf, x, y, &h2, n2);
    cr_assert(h1 == h2 && n1[0] == n2[0] && n1[2] == n2[2] && n1[0] != 0);
    (void)h;
    free(mask);
    free(f);
    env_terrain_destroy(&t);
}

Test(terrain, bad_configs_are_refused)
{
    env_terrain_config base = env_terrain_config_default(), c;
    char err[256];
#define REFUSED(stmt)                                                                                            \
    do {                                                                                                         \
        c = base;                                                                                                \
        stmt;                                                                                                    \
        err[0] = 0;                                                                                              \
        env_terrain *t = env_terrain_new(&c, 1, err, sizeof err);                                                \
        cr_assert_null(t, "accepted: %s", #stmt);                                                                \
        cr_assert_neq(err[0], 0, "no message for %s", #stmt);                                                    \
    } while (0)
    REFUSED(c.rows = 0);
    REFUSED(c.cols = -3);
    REFUSED(c.horizontal_scale = 0);
    REFUSED(c.vertical_scale = NAN);
    REFUSED(c.tile_size = INFINITY);
    REFUSED(c.border_size = -1);
    REFUSED(c.tile_size = 1.5);                          /* the 2 m origin square leaves the tile */
    REFUSED(c.proportions[4] = 0);                       /* the obstacle columns are covered by nothing */
    REFUSED(c.proportions[1] = -0.1);
    REFUSED(c.slope_per_difficulty = 1000);              /* beyond int16 */
    REFUSED(c.stairs_height = 200);
    REFUSED(c.obstacles_height_per_difficulty = 1e300);
    REFUSED(c.rough_max = 170);                          /* beyond int16 */
    REFUSED(c.stairs_height = 20);                       /* each riser fits int16, nine of them do not */
    REFUSED(c.slope_per_difficulty = 0; c.rough_min = 163.5105; c.rough_max = 163.83;
            c.rough_step = 0.015);                       /* noise levels 32702, 32705 ... 32768 */
    REFUSED(c.rough_step = 0.001);                       /* below one height unit */
    REFUSED(c.rough_downsampled = 8);                    /* a noise grid of one point */
    REFUSED(c.stairs_width = 0.05);                      /* narrower than a sample */
    REFUSED(c.obstacles_min_size = 2);                   /* min = max: no size to draw */
    REFUSED(c.obstacles_max_size = 9);                   /* as wide as the tile */
    REFUSED(c.obstacles_count = -1);
    REFUSED(c.rows = 4096; c.cols = 4096);               /* too many samples */
    cr_assert_null(env_terrain_new(NULL, 1, err, sizeof err));
    /* the same edits within range are accepted */
    c = base;
    c.rows = 2;
    c.cols = 5;
    c.proportions[4] = 0.3;
    env_terrain *t = env_terrain_new(&c, 1, err, sizeof err);
    cr_assert(t, "%s", err);
    env_terrain_destroy(&t);
}

/* A tile's samples depend on the seed, its row and column only: the border (the layout around it) changes
 * where it lies, not what it holds. */
Test(terrain, tiles_do_not_depend_on_the_layout)
{
    env_terrain_config c = env_terrain_config_default();
    c.border_size = 0;
    char err[256];
    env_terrain *a = field(99), *b = env_terrain_new(&c, 99, err, sizeof err);
    cr_assert(b, "%s", err);
    int nx, ny;
    env_terrain_heights(b, &nx, &ny);
    cr_assert_eq(env_terrain_border_samples(b), 0);
    cr_assert_eq(nx, 800);
    cr_assert_eq(ny, 1600);
    const int n = env_terrain_tile_samples(a);
    for (int i = 0; i < c.rows; i++)
        for (int j = 0; j < c.cols; j++)
            for (int p = 0; p < n; p++)
                for (int q = 0; q < n; q++)
                    cr_assert_eq(at(a, i, j, p, q), at(b, i, j, p, q), "tile (%d, %d) at (%d, %d)", i, j, p, q);
    env_terrain_destroy(&a);
    env_terrain_destroy(&b);
}
