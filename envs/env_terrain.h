/* env_terrain.h — legged_gym's curriculum terrain: a grid of tiles of five kinds, harder row by row.
 *
 * The generator of legged_gym's rough tasks (legged_gym utils/terrain.py, curriculum mode, with Isaac Gym's
 * terrain_utils generators), figure for figure: `rows` levels (x) by `cols` columns (y) of square tiles,
 * sampled every horizontal_scale metres as int16 multiples of vertical_scale, inside a flat border.  Tile
 * (row i, column j) has difficulty d = i / rows and a kind fixed by its column: choice = j / cols + 0.001
 * against the cumulative proportions picks smooth slope (its sign split at half the first proportion),
 * rough slope, "stairs up", "stairs down" or discrete obstacles.  Every integer conversion is legged_gym's
 * (Python int() truncation, floor division, numpy rint), so the deterministic tiles (slopes, stairs) equal
 * legged_gym's sample for sample, and the random ones (rough slope, obstacles) have its distributions.
 *
 * Random draws come from env_rng streams keyed by (seed, tile): a field is a function of its config and
 * seed alone, whatever the order or the threads its tiles are made on, so a replay reproduces it.  Tile
 * (row, col) draws from env_rng_for(seed, 2^63 | row << 32 | col, 0); each draw picks one of k values as
 * int(u k) of a uniform u (where legged_gym calls numpy's random.choice), in legged_gym's order: a rough
 * slope its noise grid row by row; an obstacle tile, per rectangle, its x size, y size, x start, y start,
 * height.  (tests/testdata/terrain_ref.py restates the generators and these draws in numpy.)
 *
 * Frames: the field frame is legged_gym's world frame: the tile grid's corner at (0, 0), x along the levels,
 * y along the columns, z up; sample (ix, iy) sits at (ix hs - border_size, iy hs - border_size), so the
 * border lies at negative coordinates and beyond rows x tile_size, cols x tile_size.
 *
 * Ownership: env_terrain_new returns an immutable field owned by the caller (env_terrain_destroy); every
 * pointer it hands out lives as long as the field.  One field can be shared read-only by all worlds.
 */
#ifndef HERD_ENV_TERRAIN_H
#define HERD_ENV_TERRAIN_H

#include <stddef.h>
#include <stdint.h>

#include "sim_model.h"

/* legged_gym's defaults (LeggedRobotCfg.terrain and Terrain.make_terrain).  Lengths in m, heights in m,
 * slopes as rise over run. */
#define ENV_TERRAIN_ROWS 10                     /* levels */
#define ENV_TERRAIN_COLS 20                     /* columns */
#define ENV_TERRAIN_TILE_SIZE 8.0               /* m, square tiles (terrain_length = terrain_width) */
#define ENV_TERRAIN_HORIZONTAL_SCALE 0.1        /* m between samples */
#define ENV_TERRAIN_VERTICAL_SCALE 0.005        /* m per height unit */
#define ENV_TERRAIN_BORDER_SIZE 25.0            /* m of flat ground around the grid */
#define ENV_TERRAIN_ORIGIN_HALF 1.0             /* m: a tile's origin z is the highest sample of its central 2 m square */
/* Shares of the columns: smooth slope, rough slope, stairs up, stairs down, discrete obstacles. */
#define ENV_TERRAIN_PROPORTIONS {0.1, 0.1, 0.35, 0.25, 0.2}
#define ENV_TERRAIN_SLOPE_PER_DIFFICULTY 0.4    /* slope = 0.4 d */
#define ENV_TERRAIN_SLOPE_PLATFORM 3.0          /* m, flat top (or bottom) of a slope pyramid */
#define ENV_TERRAIN_ROUGH_MIN (-0.05)           /* m, noise added to rough slopes */
#define ENV_TERRAIN_ROUGH_MAX 0.05              /* m */
#define ENV_TERRAIN_ROUGH_STEP 0.005            /* m between noise levels */
#define ENV_TERRAIN_ROUGH_DOWNSAMPLED 0.2       /* m between noise draws, bilinearly upsampled to the samples */
#define ENV_TERRAIN_STAIRS_WIDTH 0.31           /* m per tread (int(0.31 / 0.1) = 3 samples) */
#define ENV_TERRAIN_STAIRS_HEIGHT 0.05          /* m, riser at d = 0 ... */
#define ENV_TERRAIN_STAIRS_HEIGHT_PER_DIFFICULTY 0.18 /* ... plus 0.18 d */
#define ENV_TERRAIN_STAIRS_PLATFORM 3.0         /* m */
#define ENV_TERRAIN_OBSTACLES_HEIGHT 0.05       /* m, obstacle height h at d = 0 ... */
#define ENV_TERRAIN_OBSTACLES_HEIGHT_PER_DIFFICULTY 0.2 /* ... plus 0.2 d; each rectangle is -h, -h/2, h/2 or h */
#define ENV_TERRAIN_OBSTACLES_MIN_SIZE 1.0      /* m, rectangle sides in [min, max) by 4 samples */
#define ENV_TERRAIN_OBSTACLES_MAX_SIZE 2.0      /* m */
#define ENV_TERRAIN_OBSTACLES_COUNT 20          /* rectangles per tile */
#define ENV_TERRAIN_OBSTACLES_PLATFORM 3.0      /* m, flat square at the centre (height 0) */

/* Tile kinds.  legged_gym's five proportions name four of them; its smooth-slope share is split in two by
 * the slope's sign.  "Up" and "down" say what a robot leaving the centre meets, as legged_gym's names do. */
typedef enum {
    ENV_TILE_SLOPE_UP = 0,          /* pyramid slope -0.4 d: the centre is the lowest point */
    ENV_TILE_SLOPE_DOWN,            /* pyramid slope +0.4 d: the centre is the summit */
    ENV_TILE_ROUGH_SLOPE,           /* slope +0.4 d plus uniform noise on a coarser grid */
    ENV_TILE_STAIRS_UP,             /* pyramid stairs, risers -(0.05 + 0.18 d): the centre is a pit */
    ENV_TILE_STAIRS_DOWN,           /* pyramid stairs, risers +(0.05 + 0.18 d): the centre is the summit */
    ENV_TILE_OBSTACLES,             /* random rectangles of height in {-h, -h/2, h/2, h}, h = 0.05 + 0.2 d */
    ENV_TILE_COUNT
} env_tile_kind;

/* The kinds' names, in env_tile_kind's order (a task's spec lists them as its terrain_kinds). */
#define ENV_TILE_NAMES "slope_up", "slope_down", "rough_slope", "stairs_up", "stairs_down", "obstacles"
/* ENV_TILE_NAMES[kind] ("?" out of range). */
const char *env_tile_name(int kind);

typedef struct {
    int rows, cols;                 /* levels (x) and columns (y), >= 1 */
    double tile_size;               /* m, side of a square tile */
    double horizontal_scale;        /* m between samples */
    double vertical_scale;          /* m per int16 height unit */
    double border_size;             /* m of flat ground (height 0) on each side */
    double origin_half;             /* m: origin z = highest sample within +-origin_half of the tile centre */
    double proportions[5];          /* smooth slope, rough slope, stairs up, stairs down, obstacles (>= 0) */
    double slope_per_difficulty;
    double slope_platform;          /* m */
    double rough_min, rough_max, rough_step, rough_downsampled;    /* m */
    double stairs_width, stairs_height, stairs_height_per_difficulty, stairs_platform;  /* m */
    double obstacles_height, obstacles_height_per_difficulty;        /* m */
    double obstacles_min_size, obstacles_max_size, obstacles_platform; /* m */
    int obstacles_count;
} env_terrain_config;

/* One tile: its kind, difficulty and spawn origin (field frame, m: the tile centre, z as origin_half says). */
typedef struct {
    int kind;                       /* env_tile_kind */
    double difficulty;              /* row / rows */
    double origin[3];
} env_terrain_tile;

typedef struct env_terrain env_terrain;

/* legged_gym's configuration (the ENV_TERRAIN_* values above). */
env_terrain_config env_terrain_config_default(void);

/* Generates the field of cfg from seed.  Returns NULL with err filled when cfg is invalid (a non-positive
 * or non-finite size or scale, a tile too small for its platforms or origin square, proportions that do
 * not cover every column, a height beyond int16) or memory runs out. */
env_terrain *env_terrain_new(const env_terrain_config *cfg, uint64_t seed, char *err, size_t errlen);
void env_terrain_destroy(env_terrain **t);

/* The config and seed the field was made from. */
const env_terrain_config *env_terrain_config_of(const env_terrain *t);
uint64_t env_terrain_seed(const env_terrain *t);

/* The heights in units of vertical_scale: nx * ny samples, row-major with x fastest (sample (ix, iy) at
 * [iy nx + ix]), nx = rows x tile samples + 2 x border samples along x, likewise ny along y. */
const int16_t *env_terrain_heights(const env_terrain *t, int *nx, int *ny);
/* Samples per tile side and per border width (int(tile_size / hs), int(border_size / hs)). */
int env_terrain_tile_samples(const env_terrain *t);
int env_terrain_border_samples(const env_terrain *t);

/* Tile (row, col): 0, or -1 if out of range (*out untouched). */
int env_terrain_tile_at(const env_terrain *t, int row, int col, env_terrain_tile *out);
/* The spawn origin of level `level` in column `col` (legged_gym's terrain_origins[level, type]), field
 * frame, m: 0, or -1 if out of range. */
int env_terrain_origin(const env_terrain *t, int level, int col, double origin[3]);

/* Bytes held by the field: its heights and its tile table (the fixed header is not counted). */
size_t env_terrain_bytes(const env_terrain *t);

/* herd's heightfield of the field: heights[] (n = nx * ny floats, the caller's) gets each sample times
 * vertical_scale in metres, *out the grid placed in the field frame (corner at -border_size, -border_size),
 * pointing at heights.  Returns 0, or -1 with err filled if n is not nx * ny. */
int env_terrain_to_hfield(const env_terrain *t, float *heights, size_t n, sim_terrain *out, char *err,
                          size_t errlen);

/* herd's cell terrain of the field (sim_model.h SIM_TERRAIN_CELLS): heights[] (n = nx * ny floats) as for
 * env_terrain_to_hfield, and smooth[] (n bytes, the caller's) 1 on the samples of slope and rough-slope tiles
 * (legged_gym's smooth heightfield tiles, kept bilinear) and 0 on stairs, obstacles and the border (vertical
 * prisms, so risers and obstacle sides are walls).  Cell (ix, iy) is centred on sample (ix, iy), in the field
 * frame.  Returns 0, or -1 with err filled if n is not nx * ny or an array is NULL. */
int env_terrain_to_cells(const env_terrain *t, float *heights, unsigned char *smooth, size_t n, sim_terrain *out,
                         char *err, size_t errlen);

/* Isaac Gym's upsampling of random_uniform_terrain's noise: an nc x nc grid of height units spanning the
 * same square as an nf x nf grid is interpolated bilinearly at the nf x nf points (point a of nf at
 * coarse coordinate a (nc - 1) / (nf - 1)) and rounded to the nearest unit, halves to even, in exact
 * integer arithmetic.  Both grids row-major.  Returns 0, or -1 (fine untouched) unless 2 <= nc, nf <= 32768. */
int env_terrain_upsample(const int16_t *coarse, int nc, int16_t *fine, int nf);

#endif
