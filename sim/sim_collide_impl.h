/* sim_collide_impl.h — PRIVATE to sim/: a geometry's candidate contact points against flat ground (the plane z =
 * h0, normal +z), written once over a number type T and included twice, as sim_tree_impl.h is (the same macros: T,
 * TM, D, TN, TSPLAT, TSEL, TABS, TSQRT, TFMA; see there):
 *   sim_collision.c  T = double: sim_collide on a plane, one world;
 *   sim_batch.c      T = sim_lanes: the candidates of four worlds at once, offered to each world's contact list by
 *                    sim_batch_step with the same code as sim_collide's (sim_collide_offer).
 * Both files are compiled without floating-point contraction, so a lane's points, gaps and approach speeds, and
 * hence every decision taken on them, are the one-world code's bit for bit.  No include guard.
 *
 * The includer also defines TCAND, the candidate type for its T (SIM_COLLIDE_CAND_FIELDS of sim_collision_internal.h).
 *
 * What sim_collide does on a plane, split in two: here, per geometry, the whole-geometry test (its bounding sphere
 * may reach the ground within the step: pass) and, for each of its candidate points in offer order, the point,
 * its gap and its approach speed; in sim_collide_offer (sim_collision.c, doubles), the per-point tests and the
 * insertion into the contact list.  A geometry's points (features as in sim_collision.h):
 *   sphere 1 (0); capsule 2 (0, 1); box 8 corners (0..7); cylinder 8: the deepest rim point of the -z cap (0), three
 *   more rim points of that cap (2, 3, 4), the same for the +z cap (1; 5, 6, 7), the rim points valid only where
 *   that cap faces the ground within 30 degrees.
 */

/* -v_z of the world point p moving with the body of spatial velocity cv (world axes about ref) */
static inline T TN(point_approach)(const T *cv, const T *ref, T x, T y)
{
    return -(cv[5] + TFMA(cv[0], y - ref[1], -(cv[1] * (x - ref[0]))));
}

/* Point k of c at (x, y, z), valid if valid. */
static inline void TN(cand_point)(TCAND *c, int k, T x, T y, T z, double h0, const T *cv, const T *ref, TM valid)
{
    c->px[k] = x, c->py[k] = y, c->pz[k] = z;
    c->gap[k] = z - h0;
    c->approach[k] = TN(point_approach)(cv, ref, x, y);
    c->valid[k] = valid;
}

/* The whole-geometry test of geometry g (not nocollide) of world(s) d against the plane z = h0: its centre c->ctr,
 * c->pass and c->reject.
 * margin (m), dt (s) and grav (|g_z|, m/s^2) as sim_collide's.  Needs the kinematics and velocities. */
static void TN(geom_bound)(const sim_model *m, const D *d, int g, double margin, double dt, double grav, double h0,
                           TCAND *c)
{
    const sim_geom *G = &m->geom[g];
    const T *Rb = d->xrot + 9 * G->body, *pb = d->xpos + 3 * G->body, *cv = d->cvel + 6 * G->body, *ref = d->ref;
    T *ctr = c->ctr;
    for (int i = 0; i < 3; i++)
        ctr[i] = pb[i] + TFMA(Rb[3 * i + 2], G->pos[2], TFMA(Rb[3 * i + 1], G->pos[1], Rb[3 * i] * G->pos[0]));
    /* whole-geometry test: the bounding sphere (radius rb about ctr) approaches at most at -v_z(ctr) + |w| rb */
    const double rb = sim_geom_bound_radius(G);
    const T wn = TSQRT(TFMA(cv[2], cv[2], TFMA(cv[1], cv[1], cv[0] * cv[0])));
    const T approach = TFMA(wn, rb, TN(point_approach)(cv, ref, ctr[0], ctr[1]));
    const T look = dt * (TSEL(approach > 0, approach, TSPLAT(0.0)) + grav * dt);
    const TM all = TSPLAT(0.0) == TSPLAT(0.0);
    c->pass = ((ctr[2] - h0) - rb >= margin + look) ^ all; /* (a NaN state passes, as in sim_collide's other path) */
    c->reject = (margin + look) + 1e-9;
}

/* The candidate points of geometry g of world(s) d (after its geom_bound, whose centre it uses), their gaps over the
 * plane z = h0 and their approach speeds. */
static void TN(geom_points)(const sim_model *m, const D *d, int g, double h0, TCAND *c)
{
    const sim_geom *G = &m->geom[g];
    const T *Rb = d->xrot + 9 * G->body, *cv = d->cvel + 6 * G->body, *ref = d->ref;
    const TM all = TSPLAT(0.0) == TSPLAT(0.0);
    const T *ctr = c->ctr;
    T R[9];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            R[3 * i + j] = TFMA(Rb[3 * i + 2], G->rot[6 + j], TFMA(Rb[3 * i + 1], G->rot[3 + j], Rb[3 * i] * G->rot[j]));
    switch (G->type) {
    case SIM_GEOM_SPHERE:
        TN(cand_point)(c, 0, ctr[0], ctr[1], ctr[2] - G->size[0], h0, cv, ref, all);
        break;
    case SIM_GEOM_CAPSULE:
        for (int e = 0; e < 2; e++) {
            const double s = e ? G->size[1] : -G->size[1];
            TN(cand_point)(c, e, TFMA(R[2], s, ctr[0]), TFMA(R[5], s, ctr[1]), TFMA(R[8], s, ctr[2]) - G->size[0], h0, cv,
                           ref, all);
        }
        break;
    case SIM_GEOM_BOX:
        for (int k = 0; k < 8; k++) {
            const double l[3] = {(k & 1) ? G->size[0] : -G->size[0], (k & 2) ? G->size[1] : -G->size[1],
                                 (k & 4) ? G->size[2] : -G->size[2]};
            T p[3];
            for (int i = 0; i < 3; i++) p[i] = ctr[i] + TFMA(R[3 * i + 2], l[2], TFMA(R[3 * i + 1], l[1], R[3 * i] * l[0]));
            TN(cand_point)(c, k, p[0], p[1], p[2], h0, cv, ref, all);
        }
        break;
    case SIM_GEOM_CYLINDER: {
        /* axis ax = R e_z; the rim direction pointing most against the normal: -(n - (ax.n) ax), n = +z */
        const T ax[3] = {R[2], R[5], R[8]}, an = R[8];
        T dir[3] = {an * ax[0], an * ax[1], TFMA(an, ax[2], TSPLAT(-1.0))};
        const T dn = TSQRT(TFMA(dir[2], dir[2], TFMA(dir[1], dir[1], dir[0] * dir[0])));
        const TM flat_cap = dn < 1e-9; /* a cap parallel to the ground: any fixed in-plane direction */
        const T idn = 1 / TSEL(flat_cap, TSPLAT(1.0), dn);
        dir[0] = TSEL(flat_cap, R[0], dir[0] * idn);
        dir[1] = TSEL(flat_cap, R[3], dir[1] * idn);
        dir[2] = TSEL(flat_cap, R[6], dir[2] * idn);
        T perp[3];
        perp[0] = TFMA(ax[1], dir[2], -(ax[2] * dir[1]));
        perp[1] = TFMA(ax[2], dir[0], -(ax[0] * dir[2]));
        perp[2] = TFMA(ax[0], dir[1], -(ax[1] * dir[0]));
        const TM facing = TABS(an) > 0.866; /* the cap facing the ground rests on more rim points */
        const double r = G->size[0];
        for (int e = 0; e < 2; e++) {
            const double s = e ? G->size[1] : -G->size[1];
            const TM rims = facing & (e == 0 ? an > 0 : (an > 0) ^ all);
            T cc[3];
            for (int i = 0; i < 3; i++) cc[i] = TFMA(ax[i], s, ctr[i]);
            const int k = 4 * e; /* points 0..3: cap -z (feature 0, then 2, 3, 4); 4..7: cap +z (1; 5, 6, 7) */
            TN(cand_point)(c, k, TFMA(dir[0], r, cc[0]), TFMA(dir[1], r, cc[1]), TFMA(dir[2], r, cc[2]), h0, cv, ref, all);
            TN(cand_point)(c, k + 1, TFMA(perp[0], r, cc[0]), TFMA(perp[1], r, cc[1]), TFMA(perp[2], r, cc[2]), h0, cv, ref,
                           rims);
            TN(cand_point)(c, k + 2, TFMA(dir[0], -r, cc[0]), TFMA(dir[1], -r, cc[1]), TFMA(dir[2], -r, cc[2]), h0, cv,
                           ref, rims);
            TN(cand_point)(c, k + 3, TFMA(perp[0], -r, cc[0]), TFMA(perp[1], -r, cc[1]), TFMA(perp[2], -r, cc[2]), h0,
                           cv, ref, rims);
        }
        break;
    }
    default:
        c->pass = TSPLAT(0.0) != TSPLAT(0.0);
        break;
    }
}
