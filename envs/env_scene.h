/* env_scene.h — what a task's worlds look like: bodies, their primitives and the terrain (data only).
 *
 * A data-only header like env_spec.h: protocol/ encodes an env_scene for the `model` op (PROTOCOL.md) and
 * clients draw it; env.h's env_scene() fills one from a task's model, env_poses() gives the moving part
 * (each body's world pose) without stepping.
 *
 * Frames and units: metres; a geometry's pos / quat are its frame in its body's frame, quat = (w, x, y, z);
 * sizes as sim_model.h's sim_geom_type: sphere (radius), box (half extents x y z), cylinder and capsule
 * (radius, half length along the local z).  Colours are linear RGBA in [0, 1].
 * Ownership: everything is held by value except terrain.heights and terrain.smooth, which point into the env's
 * model (valid as long as the env).
 */
#ifndef HERD_ENV_SCENE_H
#define HERD_ENV_SCENE_H

#define ENV_SCENE_MAX_BODIES 64     /* = SIM_MAX_BODIES */
#define ENV_SCENE_MAX_GEOMS 128     /* = SIM_MAX_GEOMS */
#define ENV_SCENE_NAME_MAX 64

typedef enum { ENV_PRIM_SPHERE = 0, ENV_PRIM_BOX, ENV_PRIM_CYLINDER, ENV_PRIM_CAPSULE, ENV_PRIM_COUNT } env_prim_type;
/* "sphere", "box", "cylinder", "capsule" ("?" out of range). */
static inline const char *env_prim_name(int t)
{
    static const char *const names[ENV_PRIM_COUNT] = {"sphere", "box", "cylinder", "capsule"};
    return t >= 0 && t < ENV_PRIM_COUNT ? names[t] : "?";
}

typedef struct {
    char name[ENV_SCENE_NAME_MAX];  /* URDF link name */
    int parent;                     /* parent body, -1 for the root (body 0) */
} env_scene_body;

typedef struct {
    char name[ENV_SCENE_NAME_MAX];
    int type;                       /* env_prim_type */
    int body;
    float pos[3], quat[4];          /* frame in the body frame; quat w x y z */
    float size[3];                  /* see above; unused entries 0 */
    float rgba[4];
    int collides;                   /* 0: visual only (never generates contacts) */
} env_scene_geom;

typedef enum { ENV_TERRAIN_PLANE = 0, ENV_TERRAIN_HEIGHTFIELD, ENV_TERRAIN_CELLS } env_terrain_type;

/* A cell terrain (sim_model.h SIM_TERRAIN_CELLS) is too large to send whole: the scene gives its grid, and the
 * samples of one region of it when env_scene_region asked for one. */
typedef struct {
    int type;                       /* env_terrain_type */
    double height;                  /* plane: z of the ground (normal +z); cells: offset added to the heights */
    int nx, ny;                     /* heightfield, cells: nx * ny heights, row-major, x fastest ... */
    double x0, y0, dx, dy;          /* ... point (i, j) at (x0 + i dx, y0 + j dy); outside, the border continues */
    const float *heights;           /* (not owned) */
    const unsigned char *smooth;    /* cells: nx * ny, nonzero = a bilinear cell, or NULL (none); not owned */
    int has_region;                 /* cells: the region rx .. rx + rnx - 1, ry .. ry + rny - 1 of the samples */
    int rx, ry, rnx, rny;
} env_scene_terrain;

/* Most samples one region of a cell terrain may hold (env_scene_region): 4 MiB of heights. */
#define ENV_SCENE_REGION_MAX_SAMPLES (1 << 20)

typedef struct {
    int nbody, ngeom;
    int max_contacts;               /* contacts per world env_poses can report (its arrays' row length) */
    env_scene_body body[ENV_SCENE_MAX_BODIES];
    env_scene_geom geom[ENV_SCENE_MAX_GEOMS];
    env_scene_terrain terrain;
} env_scene_t;

#endif
