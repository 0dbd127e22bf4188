/* test_curriculum.c — legged_gym's terrain curriculum rules and height scan (env_curriculum.h). */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "env_curriculum.h"
#include "env_rng.h"

Test(curriculum, first_levels_are_uniform_on_zero_to_five)
{
    int count[10] = {0};
    for (int k = 0; k < 6000; k++) count[env_curriculum_first_level((k + 0.5) / 6000.0, 5, 10)]++;
    for (int l = 0; l < 6; l++) cr_assert_eq(count[l], 1000, "level %d: %d", l, count[l]);
    for (int l = 6; l < 10; l++) cr_assert_eq(count[l], 0);
    cr_assert_eq(env_curriculum_first_level(0.999, 5, 3), 2, "capped by the rows");
}

Test(curriculum, up_down_stay_and_the_top)
{
    int m;
    cr_assert_eq(env_curriculum_next_level(3, 10, 8.0, 4.01, 100, 0.5, &m), 4);
    cr_assert_eq(m, 1, "more than half a tile: up, whatever the command asked");
    cr_assert_eq(env_curriculum_next_level(3, 10, 8.0, 4.0, 0, 0.5, &m), 3);
    cr_assert_eq(m, 0, "exactly half a tile is not more");
    cr_assert_eq(env_curriculum_next_level(3, 10, 8.0, 1.9, 4.0, 0.5, &m), 2);
    cr_assert_eq(m, -1, "less than half of the 4 m asked: down");
    cr_assert_eq(env_curriculum_next_level(3, 10, 8.0, 2.0, 4.0, 0.5, &m), 3, "half of what was asked: stays");
    cr_assert_eq(env_curriculum_next_level(0, 10, 8.0, 0.0, 4.0, 0.5, &m), 0, "never below 0");
    cr_assert_eq(env_curriculum_next_level(9, 10, 8.0, 5.0, 0, 0.0, &m), 0, "past the top: a random level");
    cr_assert_eq(env_curriculum_next_level(9, 10, 8.0, 5.0, 0, 0.95, &m), 9);
    cr_assert_eq(env_curriculum_next_level(9, 10, 8.0, 5.0, 0, 0.5, &m), 5);
    cr_assert_eq(env_curriculum_next_level(8, 10, 8.0, 5.0, 0, 0.0, &m), 9, "reaching the top is allowed");
}

/* A policy that clears every tile: the mean level tends to sum k (k+1) / sum (k+1) = 330 / 55 = 6.0. */
Test(curriculum, a_perfect_policys_mean_level_is_six)
{
    env_rng r = env_rng_seeded(7);
    enum { W = 512, EPISODES = 400 };
    int level[W];
    for (int w = 0; w < W; w++) level[w] = env_curriculum_first_level(env_rng_uniform(&r), 5, 10);
    double sum = 0;
    long n = 0;
    for (int e = 0; e < EPISODES; e++)
        for (int w = 0; w < W; w++) {
            level[w] = env_curriculum_next_level(level[w], 10, 8.0, 6.0, 4.0, env_rng_uniform(&r), NULL);
            if (e >= 100) sum += level[w], n++;
        }
    cr_assert_float_eq(sum / (double)n, 6.0, 0.03, "mean level %.4f", sum / (double)n);
}

Test(curriculum, columns_come_in_blocks)
{
    cr_assert_eq(env_curriculum_column(0, 4096, 20), 0);
    cr_assert_eq(env_curriculum_column(204, 4096, 20), 0, "204.8 worlds per column");
    cr_assert_eq(env_curriculum_column(205, 4096, 20), 1);
    cr_assert_eq(env_curriculum_column(4095, 4096, 20), 19);
    cr_assert_eq(env_curriculum_column(5, 10, 20), 10, "fewer worlds than columns: every other column");
    cr_assert_eq(env_curriculum_column(0, 0, 20), 0);
}

static env_terrain *field(void)
{
    char err[256];
    env_terrain_config c = env_terrain_config_default();
    env_terrain *t = env_terrain_new(&c, 11, err, sizeof err);
    cr_assert(t, "%s", err);
    return t;
}

/* On the flat border every height is 0, and the observation is clip(z - 0.5, -1, 1) x 5. */
Test(heightscan, the_border_is_flat)
{
    env_terrain *t = field();
    double h[ENV_HEIGHTSCAN_POINTS], pos[3] = {-10.0, -10.0, 0.55};
    env_heightscan(t, pos, 0.7, h);
    float o[ENV_HEIGHTSCAN_POINTS];
    env_heightscan_obs(h, pos[2], 5.0, o);
    for (int k = 0; k < ENV_HEIGHTSCAN_POINTS; k++) {
        cr_assert_eq(h[k], 0.0);
        cr_assert_float_eq(o[k], 0.25f, 1e-6);
    }
    env_heightscan_obs(h, 3.0, 5.0, o);
    cr_assert_eq(o[0], 5.0f, "clipped at 1 before the scale");
    env_heightscan_obs(h, -3.0, 1.0, o);
    cr_assert_eq(o[0], -1.0f);
    env_terrain_destroy(&t);
}

/* A stairs tile's centre is a 3 m platform at the origin's height (the highest sample of the central 2 m):
 * the whole 1.6 m x 1.0 m scan reads it, at any yaw. */
Test(heightscan, a_stairs_platform_reads_the_origin_height)
{
    env_terrain *t = field();
    for (int kind = ENV_TILE_STAIRS_UP; kind <= ENV_TILE_STAIRS_DOWN; kind++)
        for (int col = 0; col < 20; col++) {
            env_terrain_tile tile;
            cr_assert_eq(env_terrain_tile_at(t, 9, col, &tile), 0);
            if (tile.kind != kind) continue;
            for (int k = 0; k < 4; k++) {
                double h[ENV_HEIGHTSCAN_POINTS];
                env_heightscan(t, tile.origin, k * 0.9, h);
                for (int p = 0; p < ENV_HEIGHTSCAN_POINTS; p++)
                    cr_assert_float_eq(h[p], tile.origin[2], 1e-12, "%s col %d point %d: %g vs %g",
                                       env_tile_name(kind), col, p, h[p], tile.origin[2]);
            }
            cr_assert(kind == ENV_TILE_STAIRS_DOWN ? tile.origin[2] > 1.0 : tile.origin[2] < -1.0,
                      "level 9 of %s: origin z %g", env_tile_name(kind), tile.origin[2]);
            break;
        }
    env_terrain_destroy(&t);
}

/* The points' layout and the lower-of-three rule, against the samples themselves: point (ix, iy) at yaw 0 sits at
 * base + ((ix - 8) 0.1, (iy - 5) 0.1); at yaw pi/2 the grid turns so that the base's x points along the field's y;
 * on a riser the scan reads the lower side. */
Test(heightscan, layout_rotation_and_the_lower_side_of_an_edge)
{
    env_terrain *t = field();
    int nx, ny;
    const int16_t *z = env_terrain_heights(t, &nx, &ny);
    const env_terrain_config *c = env_terrain_config_of(t);
    const double hs = c->horizontal_scale, vs = c->vertical_scale, b = c->border_size;
    /* a riser along x: a stairs tile at level 9, the first sample pair (px, px + 1) right of centre that differs */
    env_terrain_tile tile;
    int col = 0;
    for (; col < 20; col++) {
        env_terrain_tile_at(t, 9, col, &tile);
        if (tile.kind == ENV_TILE_STAIRS_DOWN) break;
    }
    cr_assert_lt(col, 20);
    const int cy = (int)((tile.origin[1] + b) / hs);
    int px = (int)((tile.origin[0] + b) / hs);
    while (z[(size_t)cy * nx + px] == z[(size_t)cy * nx + px + 1]) px++;
    const int16_t hi = z[(size_t)cy * nx + px], lo = z[(size_t)cy * nx + px + 1];
    cr_assert_lt(lo, hi, "outward (+x) the stairs go down");
    /* base placed so that point (ix 8, iy 5) (the centre) lies in cell (px, cy), 0.05 m inside it */
    double pos[3] = {(px + 0.5) * hs - b, (cy + 0.5) * hs - b, 1.0}, h[ENV_HEIGHTSCAN_POINTS];
    env_heightscan(t, pos, 0.0, h);
    cr_assert_float_eq(h[8 * 11 + 5], lo * vs, 1e-12, "the lower side of the riser");
    for (int ix = 0; ix < 17; ix++)
        for (int iy = 0; iy < 11; iy++) {
            const int qx = px + ix - 8, qy = cy + iy - 5;
            int16_t m = z[(size_t)qy * nx + qx];
            if (z[(size_t)qy * nx + qx + 1] < m) m = z[(size_t)qy * nx + qx + 1];
            if (z[(size_t)(qy + 1) * nx + qx] < m) m = z[(size_t)(qy + 1) * nx + qx];
            cr_assert_float_eq(h[ix * 11 + iy], m * vs, 1e-12, "yaw 0, point (%d, %d)", ix, iy);
        }
    double r[ENV_HEIGHTSCAN_POINTS];
    env_heightscan(t, pos, M_PI / 2, r);
    for (int ix = 0; ix < 17; ix++)
        for (int iy = 0; iy < 11; iy++) {
            const int qx = px - (iy - 5), qy = cy + ix - 8; /* base x along the field's +y, base y along -x */
            int16_t m = z[(size_t)qy * nx + qx];
            if (z[(size_t)qy * nx + qx + 1] < m) m = z[(size_t)qy * nx + qx + 1];
            if (z[(size_t)(qy + 1) * nx + qx] < m) m = z[(size_t)(qy + 1) * nx + qx];
            cr_assert_float_eq(r[ix * 11 + iy], m * vs, 1e-12, "yaw pi/2, point (%d, %d)", ix, iy);
        }
    double far[3] = {1e9, NAN, 0}, f[ENV_HEIGHTSCAN_POINTS];
    env_heightscan(t, far, 0.0, f);       /* outside (and NaN): the edge samples, no crash */
    cr_assert_eq(f[0], 0.0);
    env_terrain_destroy(&t);
}

/* The scan point by point as legged_gym states it (env_curriculum.h): rotate, move, truncate, clip, lowest of
 * three; env_heightscan (vectorized, indices first) must give these bits. */
static void heightscan_pointwise(const env_terrain *t, const double pos[3], double yaw, double *h)
{
    const env_terrain_config *cfg = env_terrain_config_of(t);
    int nx, ny;
    const int16_t *z = env_terrain_heights(t, &nx, &ny);
    const double c = cos(yaw), s = sin(yaw), hs = cfg->horizontal_scale;
    for (int ix = 0; ix < ENV_HEIGHTSCAN_NX; ix++)
        for (int iy = 0; iy < ENV_HEIGHTSCAN_NY; iy++) {
            const double px0 = (ix - (ENV_HEIGHTSCAN_NX - 1) / 2) * ENV_HEIGHTSCAN_SPACING;
            const double py0 = (iy - (ENV_HEIGHTSCAN_NY - 1) / 2) * ENV_HEIGHTSCAN_SPACING;
            const double x = c * px0 - s * py0 + pos[0], y = s * px0 + c * py0 + pos[1];
            const double fx = (x + cfg->border_size) / hs, fy = (y + cfg->border_size) / hs;
            const long px = !(fx >= 0) ? 0 : fx >= nx - 2 ? nx - 2 : (long)fx;
            const long py = !(fy >= 0) ? 0 : fy >= ny - 2 ? ny - 2 : (long)fy;
            const int16_t *p = z + (size_t)py * (size_t)nx + (size_t)px;
            int16_t m = p[0];
            if (p[1] < m) m = p[1];
            if (p[nx] < m) m = p[nx];
            h[ix * ENV_HEIGHTSCAN_NY + iy] = m * cfg->vertical_scale;
        }
}

/* Random poses over the whole field and past its edges, any yaw, and bases on sample boundaries (where a point
 * lies on a cell edge up to rounding): env_heightscan equals the pointwise scan bit for bit, and the observation
 * equals the clip-then-scale formula, NaN included. */
Test(heightscan, equals_the_pointwise_scan_bit_for_bit)
{
    env_terrain *t = field();
    int nx, ny;
    env_terrain_heights(t, &nx, &ny);
    const env_terrain_config *c = env_terrain_config_of(t);
    env_rng r = env_rng_seeded(3);
    double h[ENV_HEIGHTSCAN_POINTS], want[ENV_HEIGHTSCAN_POINTS];
    int differ = 0;
    for (int k = 0; k < 20000; k++) {
        double pos[3], yaw = env_rng_range(&r, -4, 4);
        for (int a = 0; a < 2; a++) {
            const int n = a ? ny : nx;
            pos[a] = env_rng_range(&r, -c->border_size - 2, n * c->horizontal_scale - c->border_size + 2);
            if (k % 3 == 0) pos[a] = (int)((pos[a] + c->border_size) / c->horizontal_scale) * c->horizontal_scale -
                                     c->border_size; /* on a sample */
        }
        if (k % 5 == 0) yaw = (k / 5 % 8) * (M_PI / 4);
        pos[2] = env_rng_range(&r, -1, 2);
        env_heightscan(t, pos, yaw, h);
        heightscan_pointwise(t, pos, yaw, want);
        cr_assert_eq(memcmp(h, want, sizeof h), 0, "pose %d (%.17g, %.17g, yaw %.17g)", k, pos[0], pos[1], yaw);
        for (int p = 0; p < ENV_HEIGHTSCAN_POINTS; p++) differ += h[p] != h[0];
        float o[ENV_HEIGHTSCAN_POINTS], wo[ENV_HEIGHTSCAN_POINTS];
        const double zb = k % 97 == 0 ? NAN : pos[2], scale = k % 2 ? 5.0 : 1.0;
        env_heightscan_obs(h, zb, scale, o);
        for (int p = 0; p < ENV_HEIGHTSCAN_POINTS; p++) {
            double v = zb - ENV_HEIGHTSCAN_OFFSET - h[p];
            v = v > 1 ? 1 : v < -1 ? -1 : v;
            wo[p] = (float)(v * scale);
        }
        cr_assert_eq(memcmp(o, wo, sizeof o), 0, "observation of pose %d", k);
    }
    cr_assert_gt(differ, 100000, "the poses met uneven ground");
    const double odd[][3] = {{NAN, 3, 0}, {1e300, -1e300, 0}, {-INFINITY, INFINITY, 0}};
    for (int k = 0; k < 3; k++) {
        env_heightscan(t, odd[k], 0.3, h);
        heightscan_pointwise(t, odd[k], 0.3, want);
        cr_assert_eq(memcmp(h, want, sizeof h), 0, "odd pose %d", k);
    }
    env_terrain_destroy(&t);
}
