/* env_curriculum.c — legged_gym's terrain curriculum rules and height scan (env_curriculum.h). */
#include "env_curriculum.h"

#include <math.h>

int env_curriculum_first_level(double u, int max_init_level, int rows)
{
    int level = (int)(u * (max_init_level + 1));
    if (level > max_init_level) level = max_init_level;
    if (level > rows - 1) level = rows - 1;
    return level < 0 ? 0 : level;
}

int env_curriculum_next_level(int level, int rows, double tile_size, double distance, double commanded, double u,
                              int *moved)
{
    const int up = distance > 0.5 * tile_size;
    const int down = !up && distance < 0.5 * commanded;
    const int step = up - down;
    level += step;
    if (moved) *moved = step;
    if (level >= rows) {
        level = (int)(u * rows);
        if (level >= rows) level = rows - 1;
    }
    return level < 0 ? 0 : level;
}

int env_curriculum_column(int world, int num_worlds, int cols)
{
    if (num_worlds <= 0 || cols <= 0) return 0;
    int c = (int)floor((double)world / ((double)num_worlds / (double)cols));
    return c < 0 ? 0 : c >= cols ? cols - 1 : c;
}

/* The scan points' offsets from the base (m, base frame), point k = ix * ENV_HEIGHTSCAN_NY + iy: each the product
 * (i - (n - 1) / 2) * ENV_HEIGHTSCAN_SPACING, folded by the compiler to the value the expression has at run time. */
#define HS_X(ix) (((ix) - (ENV_HEIGHTSCAN_NX - 1) / 2) * ENV_HEIGHTSCAN_SPACING)
#define HS_Y(iy) (((iy) - (ENV_HEIGHTSCAN_NY - 1) / 2) * ENV_HEIGHTSCAN_SPACING)
#define HS_ROW_X(ix) HS_X(ix), HS_X(ix), HS_X(ix), HS_X(ix), HS_X(ix), HS_X(ix), HS_X(ix), HS_X(ix), HS_X(ix), \
                     HS_X(ix), HS_X(ix),
#define HS_ROW_Y HS_Y(0), HS_Y(1), HS_Y(2), HS_Y(3), HS_Y(4), HS_Y(5), HS_Y(6), HS_Y(7), HS_Y(8), HS_Y(9), HS_Y(10),
_Static_assert(ENV_HEIGHTSCAN_NX == 17 && ENV_HEIGHTSCAN_NY == 11, "the tables below list 17 x 11 points");
static const double hs_px0[ENV_HEIGHTSCAN_POINTS] = {
    HS_ROW_X(0) HS_ROW_X(1) HS_ROW_X(2) HS_ROW_X(3) HS_ROW_X(4) HS_ROW_X(5) HS_ROW_X(6) HS_ROW_X(7) HS_ROW_X(8)
    HS_ROW_X(9) HS_ROW_X(10) HS_ROW_X(11) HS_ROW_X(12) HS_ROW_X(13) HS_ROW_X(14) HS_ROW_X(15) HS_ROW_X(16)};
static const double hs_py0[ENV_HEIGHTSCAN_POINTS] = {
    HS_ROW_Y HS_ROW_Y HS_ROW_Y HS_ROW_Y HS_ROW_Y HS_ROW_Y HS_ROW_Y HS_ROW_Y HS_ROW_Y
    HS_ROW_Y HS_ROW_Y HS_ROW_Y HS_ROW_Y HS_ROW_Y HS_ROW_Y HS_ROW_Y HS_ROW_Y};

void env_heightscan(const env_terrain *t, const double pos[3], double yaw, double *h)
{
    const env_terrain_config *cfg = env_terrain_config_of(t);
    int nx, ny;
    const int16_t *z = env_terrain_heights(t, &nx, &ny);
    const double c = cos(yaw), s = sin(yaw), hs = cfg->horizontal_scale, vs = cfg->vertical_scale;
    const double b = cfg->border_size, x0 = pos[0], y0 = pos[1], xmax = nx - 2, ymax = ny - 2;
    /* First every point's sample index, a loop without branches or memory dependences that the compiler
       vectorizes: the cell p = (xy + border_size) / horizontal_scale truncated toward zero (torch's .long()),
       clipped to [0, n - 2] before the conversion, so that a point far outside (or NaN) reads the nearest edge
       sample; a clip in double then a conversion to int equals the conversion then the clip. */
    int32_t at[ENV_HEIGHTSCAN_POINTS];
    for (int k = 0; k < ENV_HEIGHTSCAN_POINTS; k++) {
        const double x = c * hs_px0[k] - s * hs_py0[k] + x0, y = s * hs_px0[k] + c * hs_py0[k] + y0;
        double fx = (x + b) / hs, fy = (y + b) / hs;
        fx = fx >= 0 ? fx : 0;
        fx = fx < xmax ? fx : xmax;
        fy = fy >= 0 ? fy : 0;
        fy = fy < ymax ? fy : ymax;
        at[k] = (int32_t)fy * nx + (int32_t)fx;
    }
    /* then the lowest of the samples (px, py), (px + 1, py) and (px, py + 1) */
    for (int k = 0; k < ENV_HEIGHTSCAN_POINTS; k++) {
        const int16_t *p = z + at[k];
        int16_t m = p[0];
        if (p[1] < m) m = p[1];
        if (p[nx] < m) m = p[nx];
        h[k] = m * vs;
    }
}

void env_heightscan_obs(const double *h, double z_base, double scale, float *out)
{
    /* the clip, then the scale: two loops without branches (the clip as two selects, so NaN stays NaN) that the
       compiler vectorizes; in one, it would move the product into the branches of the clip and keep them */
    double v[ENV_HEIGHTSCAN_POINTS];
    for (int k = 0; k < ENV_HEIGHTSCAN_POINTS; k++) {
        double x = z_base - ENV_HEIGHTSCAN_OFFSET - h[k];
        x = x > 1 ? 1 : x;
        v[k] = x < -1 ? -1 : x;
    }
    for (int k = 0; k < ENV_HEIGHTSCAN_POINTS; k++) out[k] = (float)(v[k] * scale);
}
