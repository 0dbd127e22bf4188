/* sim_collision.h — contacts between the model's collision geometries and the ground (plane or
 * heightfield).  Pure geometry: no dynamics, no allocation.
 *
 * Each contact is a point on the geometry's surface with a frame whose rows are (t1, t2, n), n the
 * ground normal (contact z along the normal), and a signed gap along n (negative = penetration).
 * Contacts carry a persistent identity (geom, feature) so that warm starts can follow them:
 *   sphere: feature 0;  capsule: 0 / 1 = the two end spheres;
 *   box: 0..7 = corner (bit 0: +x, bit 1: +y, bit 2: +z half-extent);  a box face or edge resting on
 *        the ground is represented by its corners, which are the extreme points of that face/edge;
 *   cylinder: 0 / 1 = deepest rim point of the -z / +z cap; when a cap faces the ground (within 30°)
 *        2..4 / 5..7 = three more rim points of that cap at 90° steps, so a standing cylinder rests
 *        on a polygon.
 * A plane or a heightfield is queried only through sim_terrain_query (height and normal under a point); flat ground
 * (a plane) takes a shorter path: each geometry's bounding sphere, then its candidate points (sim_collide_impl.h,
 * which sim_batch.h also runs for four worlds at once).
 *
 * A cell terrain (SIM_TERRAIN_CELLS, sim_model.h) is its own broad phase: a geometry meets only the cells under its
 * bounding box grown by its reach within the step (margin + look-ahead), and a cell whose top is below the box's
 * reach is passed over.  Per cell (a prism: its top, its walls where the neighbour is lower, their edges):
 *   sphere    the closest point of the prism to the centre: a top (normal +z), a wall (horizontal normal), or a top
 *             edge, vertical edge or corner (normal from that line or point to the centre); a centre inside the
 *             prism leaves by the nearest of its top and its exposed walls;
 *   capsule   the same for its two end spheres, and for the point of its segment nearest the prism when that is
 *             nearer than both ends (a capsule lying across a stair nose);
 *   box, cylinder   their candidate points (corners; rim points as on a plane) as spheres of radius 0, and the
 *             prism's exposed top edges and vertical edges as segments: each one's deepest point inside the
 *             geometry, the normal that of the geometry's nearest face kept inside the edge's normal cone.
 * A contact found on a prism face shared with a neighbour at least as high (an internal face) is dropped, so a
 * flat region of many cells gives one contact per point.  No normal points into the terrain: tops +z, walls
 * away from their cell, edges within the cone between their faces.  A smooth cell (bilinear) is the heightfield
 * surface for the points above it.  Features on a cell terrain: ((cell * 32 + face) * 8 + k), face the code of
 * the cell part (sim_contact_face decodes its class, sim_contact_cell its cell), k the geometry's point (sphere 0;
 * capsule 0 / 1 the ends, 2 the segment; box corner 0..7; cylinder rim point as on a plane; 0 for edge segments).
 *
 * Units and frames: metres, world frame; contact frames as above (contact z = normal).  Ownership: the
 * contact array is the caller's (sim_step uses sim_data.con); nothing is kept between calls.
 */
#ifndef HERD_SIM_COLLISION_H
#define HERD_SIM_COLLISION_H

#include "sim_model.h"

/* Height of the ground (m, world z) under the world point (x, y) and its unit upward normal (world).  On a cell
 * terrain: the top of the cell under (x, y) and +z, or the bilinear surface on a smooth cell. */
void sim_terrain_query(const sim_terrain *t, double x, double y, double *height, double normal[3]);

/* Which part of the ground a contact touches. */
typedef enum {
    SIM_FACE_TOP = 0,   /* a surface: the plane, the heightfield, a cell's top (flat or smooth) */
    SIM_FACE_WALL,      /* a cell's vertical wall: a horizontal normal */
    SIM_FACE_EDGE,      /* a cell's edge or corner (top edges, vertical edges): the normal from the edge or vertex */
    SIM_FACE_COUNT
} sim_face_class;

/* The face class of a contact's feature found on terrain t (sim_collide on that terrain). */
int sim_contact_face(const sim_terrain *t, int feature);
/* The cell (iy nx + ix) of a contact's feature on a cell terrain, or -1 on other terrains. */
int sim_contact_cell(const sim_terrain *t, int feature);

/* Finds the contacts whose gap is below margin + lookahead, where lookahead = dt * (approach speed of
 * the point, from d->cvel, plus g dt) so that fast-approaching points are caught one step early.
 * Needs sim_kinematics and sim_velocity.  Writes at most max contacts, keeping the deepest when there
 * are more candidates; returns the count. */
int sim_collide(const sim_model *m, const sim_data *d, double margin, double dt, sim_contact *out, int max);

#endif
