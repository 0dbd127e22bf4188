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
 * The terrain is queried only through sim_terrain_query (height and normal under a point), so a
 * new terrain shape needs nothing else here; flat ground (a plane) takes a shorter path: each geometry's bounding
 * sphere, then its candidate points (sim_collide_impl.h, which sim_batch.h also runs for four worlds at once).
 *
 * Units and frames: metres, world frame; contact frames as above (contact z = normal).  Ownership: the
 * contact array is the caller's (sim_step uses sim_data.con); nothing is kept between calls.
 */
#ifndef HERD_SIM_COLLISION_H
#define HERD_SIM_COLLISION_H

#include "sim_model.h"

/* Height of the ground (m, world z) under the world point (x, y) and its unit upward normal (world). */
void sim_terrain_query(const sim_terrain *t, double x, double y, double *height, double normal[3]);

/* Finds the contacts whose gap is below margin + lookahead, where lookahead = dt * (approach speed of
 * the point, from d->cvel, plus g dt) so that fast-approaching points are caught one step early.
 * Needs sim_kinematics and sim_velocity.  Writes at most max contacts, keeping the deepest when there
 * are more candidates; returns the count. */
int sim_collide(const sim_model *m, const sim_data *d, double margin, double dt, sim_contact *out, int max);

#endif
