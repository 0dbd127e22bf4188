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

void env_heightscan(const env_terrain *t, const double pos[3], double yaw, double *h)
{
    const env_terrain_config *cfg = env_terrain_config_of(t);
    int nx, ny;
    const int16_t *z = env_terrain_heights(t, &nx, &ny);
    const double c = cos(yaw), s = sin(yaw), hs = cfg->horizontal_scale, vs = cfg->vertical_scale;
    for (int ix = 0; ix < ENV_HEIGHTSCAN_NX; ix++) {
        const double px0 = (ix - (ENV_HEIGHTSCAN_NX - 1) / 2) * ENV_HEIGHTSCAN_SPACING;
        for (int iy = 0; iy < ENV_HEIGHTSCAN_NY; iy++) {
            const double py0 = (iy - (ENV_HEIGHTSCAN_NY - 1) / 2) * ENV_HEIGHTSCAN_SPACING;
            const double x = c * px0 - s * py0 + pos[0], y = s * px0 + c * py0 + pos[1];
            /* torch's .long() (truncation toward zero), then the clip to the field; clamped before the
               conversion, so a point far outside (or NaN) reads the nearest edge sample */
            const double fx = (x + cfg->border_size) / hs, fy = (y + cfg->border_size) / hs;
            const long px = !(fx >= 0) ? 0 : fx >= nx - 2 ? nx - 2 : (long)fx;
            const long py = !(fy >= 0) ? 0 : fy >= ny - 2 ? ny - 2 : (long)fy;
            const int16_t *p = z + (size_t)py * (size_t)nx + (size_t)px;
            int16_t m = p[0];
            if (p[1] < m) m = p[1];     /* (px + 1, py) */
            if (p[nx] < m) m = p[nx];   /* (px, py + 1) */
            h[ix * ENV_HEIGHTSCAN_NY + iy] = m * vs;
        }
    }
}

void env_heightscan_obs(const double *h, double z_base, double scale, float *out)
{
    for (int k = 0; k < ENV_HEIGHTSCAN_POINTS; k++) {
        double v = z_base - ENV_HEIGHTSCAN_OFFSET - h[k];
        v = v > 1 ? 1 : v < -1 ? -1 : v;
        out[k] = (float)(v * scale);
    }
}
