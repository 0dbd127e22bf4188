/* sim_collision.c — geometry vs ground contacts. */
#include "sim_collision.h"

#include "sim_collision_internal.h"
#include "sim_math.h"
#include "sim_spatial.h"

#include <string.h>

/* sim_collide_impl.h for one world (compiled without contraction, Makefile: as sim_batch.c's lanes) */
#define T double
#define TM int
#define D sim_data
#define TN(name) coll1_##name
#define TCAND sim_collide_cand1
#define TSPLAT(x) ((double)(x))
#define TSEL(m, a, b) ((m) ? (a) : (b))
#define TABS(x) fabs(x)
#define TSQRT(x) sqrt(x)
#define TFMA(a, b, c) sim_fma((a), (b), (c))
#include "sim_collide_impl.h"

void sim_terrain_query(const sim_terrain *t, double x, double y, double *height, double normal[3])
{
    if (t->type != SIM_TERRAIN_HFIELD || !t->heights || t->nx < 2 || t->ny < 2) {
        *height = t->height;
        normal[0] = 0; normal[1] = 0; normal[2] = 1;
        return;
    }
    double fx = (x - t->x0) / t->dx, fy = (y - t->y0) / t->dy;
    double fxmax = t->nx - 1, fymax = t->ny - 1;
    int clampx = 0, clampy = 0;
    if (fx < 0) { fx = 0; clampx = 1; }
    if (fx > fxmax) { fx = fxmax; clampx = 1; }
    if (fy < 0) { fy = 0; clampy = 1; }
    if (fy > fymax) { fy = fymax; clampy = 1; }
    int ix = (int)fx, iy = (int)fy;
    if (ix > t->nx - 2) ix = t->nx - 2;
    if (iy > t->ny - 2) iy = t->ny - 2;
    double ax = fx - ix, ay = fy - iy;
    const float *h = t->heights;
    double h00 = h[iy * t->nx + ix], h10 = h[iy * t->nx + ix + 1];
    double h01 = h[(iy + 1) * t->nx + ix], h11 = h[(iy + 1) * t->nx + ix + 1];
    *height = t->height + (1 - ay) * ((1 - ax) * h00 + ax * h10) + ay * ((1 - ax) * h01 + ax * h11);
    double gx = clampx ? 0 : ((1 - ay) * (h10 - h00) + ay * (h11 - h01)) / t->dx;
    double gy = clampy ? 0 : ((1 - ax) * (h01 - h00) + ax * (h11 - h10)) / t->dy;
    double n = 1 / sqrt(gx * gx + gy * gy + 1);
    normal[0] = -gx * n; normal[1] = -gy * n; normal[2] = n;
}

/* A frame with n as third row; t1 is the projection of world x (or y) on the tangent plane so that a
 * flat ground gives the world axes and frames stay consistent from step to step. */
static void contact_frame(double F[9], const double n[3])
{
    double t1[3], t2[3];
    const double ex[3] = {1, 0, 0}, ey[3] = {0, 1, 0};
    const double *a = fabs(n[0]) < 0.9 ? ex : ey;
    double an = v3_dot(a, n);
    for (int k = 0; k < 3; k++) t1[k] = a[k] - an * n[k];
    v3_scale(t1, t1, 1 / v3_norm(t1));
    v3_cross(t2, n, t1);
    v3_copy(F, t1);
    v3_copy(F + 3, t2);
    v3_copy(F + 6, n);
}

typedef struct {
    const sim_model *m;
    const sim_data *d;
    double margin, dt, g;
    double reject; /* plane: a gap at or above this cannot make a contact for the current geometry (INFINITY: no
                      bound); a point of it approaches at most as fast as its bounding sphere (see sim_collide) */
    sim_contact *out;
    int n, max;
    int plane; /* flat ground (no height field): height c->h0 and normal +z everywhere, without a terrain query */
    double h0;
} ctx;

static const double up[3] = {0, 0, 1};

/* Velocity of a world point moving with body b, from the body's spatial velocity about d->ref. */
static void point_vel(const sim_data *d, int b, const double p[3], double v[3])
{
    const double *cv = d->cvel + 6 * b;
    double r[3];
    v3_sub(r, p, d->ref);
    v3_copy(v, cv + 3);
    v3_cross_add(v, cv, r);
}

/* contact_frame(up), the frame of every contact on flat ground: the world axes */
static const double up_frame[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};

/* Puts the contact (geometry g, feature, point p, ground normal n, signed gap) into the list, or, when it is full,
 * in place of the shallowest contact if this one is deeper. */
static void insert(ctx *c, int g, int feature, const double p[3], const double n[3], double gap)
{
    const sim_geom *G = &c->m->geom[g];
    sim_contact *k;
    if (c->n < c->max) {
        k = &c->out[c->n++];
    } else {
        /* full: replace the shallowest contact if this one is deeper */
        int w = 0;
        for (int i = 1; i < c->n; i++)
            if (c->out[i].gap > c->out[w].gap) w = i;
        if (c->out[w].gap <= gap) return;
        k = &c->out[w];
    }
    k->geom = g;
    k->body = G->body;
    k->feature = feature;
    v3_copy(k->pos, p);
    if (n == up) memcpy(k->frame, up_frame, sizeof up_frame);
    else contact_frame(k->frame, n);
    k->gap = gap;
    k->mu = G->friction;
}

/* Offers the surface point p (world) of geometry g with ground normal n and signed gap (a height field). */
static void offer(ctx *c, int g, int feature, const double p[3], const double n[3], double gap)
{
    if (gap >= c->reject) return; /* before the point's velocity: the exact test below would reject it too */
    const sim_geom *G = &c->m->geom[g];
    double v[3];
    point_vel(c->d, G->body, p, v);
    double approach = -v3_dot(v, n);
    double look = c->dt * ((approach > 0 ? approach : 0) + c->g * c->dt);
    if (gap >= c->margin + look || c->max <= 0) return;
    insert(c, g, feature, p, n, gap);
}

int sim_collide_offer_point(const sim_model *m, int g, int k, const double p[3], double gap, double approach, double margin,
                            double dt, double grav, sim_contact *out, int n, int max)
{
    const double look = dt * ((approach > 0 ? approach : 0) + grav * dt);
    if (gap >= margin + look || max <= 0) return n;
    ctx c = {m, NULL, margin, dt, grav, INFINITY, out, n, max, 1, m->terrain.height};
    /* a cylinder's points are its caps' in turn: features (0, 2, 3, 4), then (1, 5, 6, 7) */
    const int feature = m->geom[g].type == SIM_GEOM_CYLINDER ? (k < 4 ? (k ? 1 + k : 0) : (k > 4 ? k : 1)) : k;
    insert(&c, g, feature, p, up, gap);
    return c.n;
}

/* Sphere of radius r centred at world point ctr. */
static void sphere(ctx *c, int g, int feature, const double ctr[3], double r)
{
    double h, nq[3];
    const double *n = nq;
    if (c->plane) {
        /* the same gap as below with n = +z ((z - h) * 1 = z - h); rejected here before the point is built */
        h = c->h0, n = up;
        if ((ctr[2] - h) * n[2] - r >= c->reject) return;
    } else {
        sim_terrain_query(&c->m->terrain, ctr[0], ctr[1], &h, nq);
    }
    /* distance of the centre to the local tangent plane of the ground */
    double dist = (ctr[2] - h) * n[2];
    double p[3];
    for (int k = 0; k < 3; k++) p[k] = ctr[k] - r * n[k];
    offer(c, g, feature, p, n, dist - r);
}

static void point(ctx *c, int g, int feature, const double p[3])
{
    if (c->plane) {
        offer(c, g, feature, p, up, (p[2] - c->h0) * up[2]);
        return;
    }
    double h, n[3];
    sim_terrain_query(&c->m->terrain, p[0], p[1], &h, n);
    offer(c, g, feature, p, n, (p[2] - h) * n[2]);
}

int sim_collide(const sim_model *m, const sim_data *d, double margin, double dt, sim_contact *out, int max)
{
    const double grav = fabs(m->gravity[2]);
    if (sim_collide_flat(m)) {
        /* a plane: each geometry's candidates (sim_collide_impl.h: the bounding sphere's test, then its points, their
           gaps and approach speeds), offered in order */
        int n = 0;
        for (int g = 0; g < m->ngeom; g++) {
            if (m->geom[g].nocollide) continue;
            sim_collide_cand1 cd;
            coll1_geom_bound(m, d, g, margin, dt, grav, m->terrain.height, &cd);
            if (!cd.pass) continue;
            coll1_geom_points(m, d, g, m->terrain.height, &cd);
            for (int k = 0; k < sim_geom_cand_count(&m->geom[g]); k++) {
                if (!cd.valid[k] || cd.gap[k] >= cd.reject) continue;
                const double p[3] = {cd.px[k], cd.py[k], cd.pz[k]};
                n = sim_collide_offer_point(m, g, k, p, cd.gap[k], cd.approach[k], margin, dt, grav, out, n, max);
            }
        }
        return n;
    }
    /* a height field (sim_terrain_query answers its height and normal; flat only where the grid is degenerate) */
    const sim_terrain *tr = &m->terrain;
    const int flat = tr->type != SIM_TERRAIN_HFIELD || !tr->heights || tr->nx < 2 || tr->ny < 2;
    ctx c = {m, d, margin, dt, grav, INFINITY, out, 0, max, flat, tr->height};
    for (int g = 0; g < m->ngeom; g++) {
        const sim_geom *G = &m->geom[g];
        if (G->nocollide) continue;
        const double *Rb = d->xrot + 9 * G->body;
        double R[9], ctr[3], t[3];
        m3_mulv(t, Rb, G->pos);
        v3_add(ctr, d->xpos + 3 * G->body, t);
        m3_mul(R, Rb, G->rot);
        switch (G->type) {
        case SIM_GEOM_SPHERE:
            sphere(&c, g, 0, ctr, G->size[0]);
            break;
        case SIM_GEOM_CAPSULE:
            for (int e = 0; e < 2; e++) {
                double s = e ? G->size[1] : -G->size[1], p[3];
                for (int k = 0; k < 3; k++) p[k] = ctr[k] + s * R[3 * k + 2];
                sphere(&c, g, e, p, G->size[0]);
            }
            break;
        case SIM_GEOM_BOX:
            for (int corner = 0; corner < 8; corner++) {
                double l[3] = {(corner & 1) ? G->size[0] : -G->size[0], (corner & 2) ? G->size[1] : -G->size[1],
                               (corner & 4) ? G->size[2] : -G->size[2]};
                double p[3];
                if (c.plane) { /* the corner's height first (same expression as below): most corners stop here */
                    const double z = R[6] * l[0] + R[7] * l[1] + R[8] * l[2];
                    if ((z + ctr[2] - c.h0) * up[2] >= c.reject) continue;
                }
                m3_mulv(p, R, l);
                v3_add(p, p, ctr);
                point(&c, g, corner, p);
            }
            break;
        case SIM_GEOM_CYLINDER: {
            double h, n[3];
            sim_terrain_query(&m->terrain, ctr[0], ctr[1], &h, n);
            double ax[3] = {R[2], R[5], R[8]};
            /* direction in the cap plane pointing most against the normal */
            double an = v3_dot(ax, n), dir[3];
            for (int k = 0; k < 3; k++) dir[k] = -(n[k] - an * ax[k]);
            double dn = v3_norm(dir);
            if (dn < 1e-9) { /* cap parallel to the ground: any fixed in-plane direction */
                dir[0] = R[0]; dir[1] = R[3]; dir[2] = R[6];
            } else {
                v3_scale(dir, dir, 1 / dn);
            }
            double perp[3];
            v3_cross(perp, ax, dir);
            int facing = fabs(an) > 0.866;
            for (int e = 0; e < 2; e++) {
                double s = e ? G->size[1] : -G->size[1];
                double cc[3];
                for (int k = 0; k < 3; k++) cc[k] = ctr[k] + s * ax[k];
                double p[3];
                for (int k = 0; k < 3; k++) p[k] = cc[k] + G->size[0] * dir[k];
                point(&c, g, e, p);
                /* the cap facing the ground rests on more rim points */
                if (facing && ((an > 0) == (e == 0))) {
                    const double cs[3][2] = {{0, 1}, {-1, 0}, {0, -1}};
                    for (int j = 0; j < 3; j++) {
                        for (int k = 0; k < 3; k++)
                            p[k] = cc[k] + G->size[0] * (cs[j][0] * dir[k] + cs[j][1] * perp[k]);
                        point(&c, g, 2 + 3 * e + j, p);
                    }
                }
            }
            break;
        }
        default:
            break;
        }
    }
    return c.n;
}
