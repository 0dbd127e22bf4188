/* env_curriculum.h — legged_gym's terrain curriculum and height scan, as pure functions of a field and a state.
 *
 * Curriculum (legged_gym LeggedRobot._update_terrain_curriculum): a world lives on one tile of its column (the
 * column fixes the terrain kind) at a level (row) that moves at each of its resets:
 *   up    when the base ended more than half a tile (tile_size / 2 = 4 m) from the tile's origin (xy distance),
 *   down  when it covered less than half of what its command asked over the episode
 *         (distance < |v_cmd_xy| x episode_length_s x 0.5) and did not move up,
 *   and a world that moves up from the top level restarts at a level drawn uniformly from [0, rows); a level
 *   below 0 stays 0.  A world's first level is drawn uniformly from [0, max_init_level] (legged_gym: 5).
 * A policy that clears every level climbs one level per episode and restarts after the top, so the stationary
 * share of level k is proportional to k + 1 and the mean level of a perfect policy is
 * sum k (k+1) / sum (k+1) = 6.0 for 10 levels, not 9.
 *
 * Height scan (legged_gym _init_height_points / _get_heights): the 17 x 11 points x in {-0.8, ..., 0.8},
 * y in {-0.5, ..., 0.5} (0.1 m apart) around the base, point index ix * 11 + iy, rotated by the base's yaw only
 * and moved to the base position; each point's height is the lowest of the samples (px, py), (px + 1, py) and
 * (px, py + 1), with p = (xy + border_size) / horizontal_scale truncated to integers and clipped to
 * [0, n - 2] (so it reads the lower side of an edge, from the raw samples, not the collision surface).  The
 * observation value is clip(z_base - 0.5 - h, -1, 1) x scale (legged_gym: 5; Isaac Lab: 1).
 * Computed in double precision (legged_gym computes in float32: a point within a few ulp of a sample boundary
 * may fall in the neighbouring cell there).
 *
 * Units: metres, radians; frames: the field frame of env_terrain.h (world frame of the task).
 */
#ifndef HERD_ENV_CURRICULUM_H
#define HERD_ENV_CURRICULUM_H

#include <stdint.h>

#include "env_terrain.h"

#define ENV_HEIGHTSCAN_NX 17            /* points along the base's x (forward) */
#define ENV_HEIGHTSCAN_NY 11            /* points along the base's y (left) */
#define ENV_HEIGHTSCAN_POINTS (ENV_HEIGHTSCAN_NX * ENV_HEIGHTSCAN_NY)
#define ENV_HEIGHTSCAN_SPACING 0.1      /* m between points */
#define ENV_HEIGHTSCAN_OFFSET 0.5       /* m subtracted from z_base - h */
#define ENV_CURRICULUM_MAX_INIT_LEVEL 5 /* a world's first level is drawn from [0, 5] */

/* The first level of a world from a uniform draw u in [0, 1): int(u (max_init_level + 1)), at most rows - 1. */
int env_curriculum_first_level(double u, int max_init_level, int rows);

/* The level after a reset (the rules above): level in [0, rows), distance = |xy_base - xy_origin| (m),
 * commanded = |v_cmd_xy| x episode_length_s (m, what the command asked over a whole episode), u a uniform draw
 * in [0, 1) used only when the world restarts after the top level.  *moved (may be NULL) gets +1, -1 or 0. */
int env_curriculum_next_level(int level, int rows, double tile_size, double distance, double commanded, double u,
                              int *moved);

/* The column (terrain kind) of world i of n over cols columns: floor(i / (n / cols)), legged_gym's blocks. */
int env_curriculum_column(int world, int num_worlds, int cols);

/* The ENV_HEIGHTSCAN_POINTS terrain heights (m) under the scan points of a base at pos (field frame) with
 * yaw (rad), into h. */
void env_heightscan(const env_terrain *t, const double pos[3], double yaw, double *h);

/* The observation of a scan: out[k] = clip(z_base - offset - h[k], -1, 1) x scale. */
void env_heightscan_obs(const double *h, double z_base, double scale, float *out);

#endif
