/* sim_collision_internal.h — PRIVATE to sim/: what sim_collision.c and sim_batch.c share to find contacts on flat
 * ground from candidate points computed by sim_collide_impl.h (one world, or four in vector lanes).  See there. */
#ifndef HERD_SIM_COLLISION_INTERNAL_H
#define HERD_SIM_COLLISION_INTERNAL_H

#include <math.h>

#include "sim_model.h"

/* Candidate points of one geometry at most (a box's corners; a cylinder's two deepest rim points and three more of
 * each cap). */
#define SIM_COLLIDE_MAXPT 8

/* The fields of a geometry's candidates for number type T and comparison type TM (sim_collide_impl.h). */
#define SIM_COLLIDE_CAND_FIELDS(T, TM)                                                                           \
    TM pass;                         /* the bounding sphere may reach the ground within the step */              \
    T reject;                        /* margin + that bound's look-ahead + 1e-9 m: a gap at or above it is none */ \
    T ctr[3];                        /* the geometry's centre (world, m) */                                      \
    T px[SIM_COLLIDE_MAXPT], py[SIM_COLLIDE_MAXPT], pz[SIM_COLLIDE_MAXPT]; /* world points, m */              \
    T gap[SIM_COLLIDE_MAXPT];        /* m: p_z - h0 */                                                           \
    T approach[SIM_COLLIDE_MAXPT];   /* m/s: the point's speed towards the ground, -v_z */                       \
    TM valid[SIM_COLLIDE_MAXPT];     /* cylinder rim points: their cap faces the ground; all others: true */

/* One world's candidates of one geometry. */
typedef struct {
    SIM_COLLIDE_CAND_FIELDS(double, int)
} sim_collide_cand1;

/* 1 when the model's ground is the flat plane z = terrain.height everywhere (no usable height field): sim_collide
 * then works from candidates. */
static inline int sim_collide_flat(const sim_model *m)
{
    const sim_terrain *t = &m->terrain;
    return t->type == SIM_TERRAIN_PLANE || !t->heights;
}

/* Radius of a sphere about the geometry's centre that contains it. */
static inline double sim_geom_bound_radius(const sim_geom *G)
{
    switch (G->type) {
    case SIM_GEOM_SPHERE: return G->size[0];
    case SIM_GEOM_CAPSULE: return G->size[0] + G->size[1];
    case SIM_GEOM_BOX: return sqrt(G->size[0] * G->size[0] + G->size[1] * G->size[1] + G->size[2] * G->size[2]);
    case SIM_GEOM_CYLINDER: return sqrt(G->size[0] * G->size[0] + G->size[1] * G->size[1]);
    default: return INFINITY;
    }
}

/* Candidate points of geometry G (sim_collide_impl.h's order): a sphere 1, a capsule 2, a box or a cylinder 8. */
static inline int sim_geom_cand_count(const sim_geom *G)
{
    return G->type == SIM_GEOM_SPHERE ? 1 : G->type == SIM_GEOM_CAPSULE ? 2 : G->type == SIM_GEOM_BOX || G->type == SIM_GEOM_CYLINDER ? 8 : 0;
}

/* Offers candidate point k of geometry g (a valid point of a geometry that passed, with gap < its reject) to the
 * contact list out[0 .. n) of capacity max, as sim_collide does on a plane: it becomes a contact (normal +z) if gap <
 * margin + dt (max(approach, 0) + grav dt); when the list is full it replaces the shallowest contact if it is deeper.
 * p, gap (m) and approach (m/s) as sim_collide_impl.h computes them; margin (m), dt (s), grav (|g_z|) as
 * sim_collide's.  Returns the new count. */
int sim_collide_offer_point(const sim_model *m, int g, int k, const double p[3], double gap, double approach, double margin,
                            double dt, double grav, sim_contact *out, int n, int max);

#endif
