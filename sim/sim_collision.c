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

static void cells_query(const sim_terrain *t, double x, double y, double *height, double normal[3]);
static void hfield_query(const sim_terrain *t, double x, double y, double *height, double normal[3]);

void sim_terrain_query(const sim_terrain *t, double x, double y, double *height, double normal[3])
{
    if (t->type == SIM_TERRAIN_CELLS && t->heights && t->nx >= 1 && t->ny >= 1) {
        cells_query(t, x, y, height, normal);
        return;
    }
    if (t->type != SIM_TERRAIN_HFIELD || !t->heights || t->nx < 2 || t->ny < 2) {
        *height = t->height;
        normal[0] = 0; normal[1] = 0; normal[2] = 1;
        return;
    }
    hfield_query(t, x, y, height, normal);
}

/* The heightfield's bilinear surface over t's samples at (x, y) (t->heights set, nx, ny >= 2), whatever t->type. */
static void hfield_query(const sim_terrain *t, double x, double y, double *height, double normal[3])
{
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
 * in place of the least kept contact: the shallowest of those of the lowest geometry contact_priority, replaced if
 * this one's priority is higher, or equal and this one is deeper. */
static void insert(ctx *c, int g, int feature, const double p[3], const double n[3], double gap)
{
    const sim_geom *G = &c->m->geom[g];
    sim_contact *k;
    if (c->n < c->max) {
        k = &c->out[c->n++];
    } else {
        const sim_geom *geom = c->m->geom;
        int w = 0, pw = geom[c->out[0].geom].contact_priority;
        for (int i = 1; i < c->n; i++) {
            const int pi = geom[c->out[i].geom].contact_priority;
            if (pi < pw || (pi == pw && c->out[i].gap > c->out[w].gap)) w = i, pw = pi;
        }
        if (G->contact_priority < pw || (G->contact_priority == pw && c->out[w].gap <= gap)) return;
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

/* ---- cell terrain (SIM_TERRAIN_CELLS): prisms with walls, smooth patches (sim_collision.h) ---- */

/* max / min of two numbers, inline (gcc calls libm's fmax / fmin unless math is finite-only); NaN-free inputs */
static inline double cmax(double a, double b) { return a > b ? a : b; }
static inline double cmin(double a, double b) { return a < b ? a : b; }

#define CELL_FACES 32 /* face codes per cell in a feature */
#define CELL_SUB 8    /* geometry points per face code */
enum {
    FACE_TOP = 0,      /* a prism's flat top */
    FACE_SMOOTH = 1,   /* a smooth cell's bilinear surface */
    FACE_WALL = 2,     /* + side: a wall (side 0..3 = -x, +x, -y, +y) */
    FACE_EDGE = 6,     /* + side: a top edge, met by a point or a sphere */
    FACE_VEDGE = 10,   /* + corner: a vertical edge (corner 0..3: bit 0 = +x, bit 1 = +y) */
    FACE_CORNER = 14,  /* + corner: a top corner */
    FACE_SEG = 18,     /* + side: a top edge as a segment inside a box or a cylinder */
    FACE_VSEG = 22,    /* + corner: a vertical edge as a segment inside a box or a cylinder */
    FACE_END = 26
};

int sim_contact_cell(const sim_terrain *t, int feature)
{
    if (t->type != SIM_TERRAIN_CELLS || !t->heights || feature < 0) return -1;
    return feature / (CELL_FACES * CELL_SUB);
}

int sim_contact_face(const sim_terrain *t, int feature)
{
    if (t->type != SIM_TERRAIN_CELLS || !t->heights || feature < 0) return SIM_FACE_TOP;
    const int f = (feature / CELL_SUB) % CELL_FACES;
    if (f < FACE_WALL) return SIM_FACE_TOP;
    if (f < FACE_EDGE) return SIM_FACE_WALL;
    return SIM_FACE_EDGE;
}

static int cell_feature(const sim_terrain *t, int ix, int iy, int face, int k)
{
    return ((iy * t->nx + ix) * CELL_FACES + face) * CELL_SUB + k;
}

/* The cell index along one axis of the coordinate x (grid origin o, spacing h, n cells), clamped. */
static int cell_index(double x, double o, double h, int n)
{
    const double f = floor((x - o) / h + 0.5);
    if (!(f > 0)) return 0; /* also NaN */
    if (f > n - 1) return n - 1;
    return (int)f;
}

static double cell_top(const sim_terrain *t, int ix, int iy) { return t->height + t->heights[iy * t->nx + ix]; }

static int cell_smooth(const sim_terrain *t, int ix, int iy) { return t->smooth && t->smooth[iy * t->nx + ix]; }

/* Top of the neighbour of a prism for its walls (a smooth neighbour at its sample's height); +inf beyond the grid,
 * where the border cell extends and has no wall. */
static double cell_nb(const sim_terrain *t, int ix, int iy)
{
    if (ix < 0 || iy < 0 || ix >= t->nx || iy >= t->ny) return INFINITY;
    return cell_top(t, ix, iy);
}

/* The highest sample of the bilinear surface over the squares of the cells r (cell_range's [x lo, hi, y lo, hi]):
 * their samples and their neighbours' (the surface over a cell's square interpolates between them; on a single row
 * or column of samples, the plane at t->height). */
static double surface_max(const sim_terrain *t, const int r[4])
{
    if (t->nx < 2 || t->ny < 2) return t->height;
    const int xa = r[0] > 0 ? r[0] - 1 : 0, xb = r[1] < t->nx - 1 ? r[1] + 1 : t->nx - 1;
    const int ya = r[2] > 0 ? r[2] - 1 : 0, yb = r[3] < t->ny - 1 ? r[3] + 1 : t->ny - 1;
    float h = t->heights[ya * t->nx + xa];
    for (int y = ya; y <= yb; y++)
        for (int x = xa; x <= xb; x++) h = h > t->heights[y * t->nx + x] ? h : t->heights[y * t->nx + x];
    return t->height + h;
}

/* The square of cell (ix, iy): xlo, xhi, ylo, yhi (infinite beyond the border cells). */
static void cell_bounds(const sim_terrain *t, int ix, int iy, double b[4])
{
    b[0] = ix == 0 ? -INFINITY : t->x0 + (ix - 0.5) * t->dx;
    b[1] = ix == t->nx - 1 ? INFINITY : t->x0 + (ix + 0.5) * t->dx;
    b[2] = iy == 0 ? -INFINITY : t->y0 + (iy - 0.5) * t->dy;
    b[3] = iy == t->ny - 1 ? INFINITY : t->y0 + (iy + 0.5) * t->dy;
}

/* The heightfield surface (bilinear over the same samples) at (x, y). */
static void cell_bilinear(const sim_terrain *t, double x, double y, double *h, double n[3])
{
    if (t->nx < 2 || t->ny < 2) { /* one row or column of samples: no surface between them, the plane */
        *h = t->height;
        n[0] = 0; n[1] = 0; n[2] = 1;
        return;
    }
    hfield_query(t, x, y, h, n);
}

static void cells_query(const sim_terrain *t, double x, double y, double *height, double normal[3])
{
    const int ix = cell_index(x, t->x0, t->dx, t->nx), iy = cell_index(y, t->y0, t->dy, t->ny);
    if (cell_smooth(t, ix, iy)) {
        cell_bilinear(t, x, y, height, normal);
        return;
    }
    *height = cell_top(t, ix, iy);
    normal[0] = 0; normal[1] = 0; normal[2] = 1;
}

/* The cell range [lo, hi] along x and y whose squares meet the box [x0, x1] x [y0, y1]. */
static void cell_range(const sim_terrain *t, double x0, double x1, double y0, double y1, int r[4])
{
    r[0] = cell_index(x0, t->x0, t->dx, t->nx), r[1] = cell_index(x1, t->x0, t->dx, t->nx);
    r[2] = cell_index(y0, t->y0, t->dy, t->ny), r[3] = cell_index(y1, t->y0, t->dy, t->ny);
}

/* Sphere (radius r >= 0, centre ctr) of geometry g, point k, against cell (ix, iy); reach (m): a contact farther
 * than this cannot be taken within the step (offer decides exactly). */
static void sphere_cell(ctx *c, int g, int k, const double ctr[3], double r, int ix, int iy, double reach)
{
    const sim_terrain *t = &c->m->terrain;
    double b[4];
    const int smooth = cell_smooth(t, ix, iy);
    const double top = cell_top(t, ix, iy);
    if (!smooth && ctr[2] - top - r >= reach) return; /* above the prism by more than the reach: no contact */
    cell_bounds(t, ix, iy, b);
    if (smooth) { /* the heightfield's surface for a centre above this cell */
        if (!(ctr[0] >= b[0] && ctr[0] < b[1] && ctr[1] >= b[2] && ctr[1] < b[3])) return;
        double h, n[3];
        cell_bilinear(t, ctr[0], ctr[1], &h, n);
        const double dist = (ctr[2] - h) * n[2];
        if (dist - r >= reach) return;
        double p[3];
        for (int i = 0; i < 3; i++) p[i] = ctr[i] - r * n[i];
        offer(c, g, cell_feature(t, ix, iy, FACE_SMOOTH, k), p, n, dist - r);
        return;
    }
    /* the square is half-open ([lo, hi)), so that a point on a shared side belongs to one cell */
    const int sx = ctr[0] < b[0] ? -1 : ctr[0] >= b[1] ? 1 : 0, sy = ctr[1] < b[2] ? -1 : ctr[1] >= b[3] ? 1 : 0;
    double n[3] = {0, 0, 1}, gap;
    int face;
    if (!sx && !sy) {
        if (ctr[2] >= top) {
            gap = ctr[2] - top - r, face = FACE_TOP;
        } else {
            /* inside the prism: out by the nearest way out of the terrain, over the top or through a wall (a side
               whose neighbour is lower than this prism).  Through a wall at a height above the neighbour's top the
               way out is horizontal; below it (a point pushed sideways into a riser at the lower tread's level, or
               a hair under it), the nearest point outside is the neighbour's top edge of that wall, so the way out
               rises to it.  (Counting only walls exposed at the point's own height sent such a point out over the
               top: a riser deep, and upwards.) */
            double depth = top - ctr[2], rise = 0;
            face = FACE_TOP;
            const double wd[4] = {ctr[0] - b[0], b[1] - ctr[0], ctr[1] - b[2], b[3] - ctr[1]};
            const double nb[4] = {cell_nb(t, ix - 1, iy), cell_nb(t, ix + 1, iy), cell_nb(t, ix, iy - 1),
                                  cell_nb(t, ix, iy + 1)};
            for (int s = 0; s < 4; s++) {
                if (!(nb[s] < top)) continue;
                const double lift = ctr[2] < nb[s] ? nb[s] - ctr[2] : 0, e = lift > 0 ? hypot(wd[s], lift) : wd[s];
                if (e < depth) depth = e, rise = lift, face = FACE_WALL + s;
            }
            if (face != FACE_TOP) {
                const int s = face - FACE_WALL;
                n[2] = 0, n[s >> 1] = (s & 1) ? 1 : -1;
                if (rise > 0) { /* towards the neighbour's top edge */
                    const double h = wd[s] / depth;
                    n[s >> 1] *= h, n[2] = rise / depth;
                }
            }
            gap = -depth - r;
        }
    } else {
        const double q[3] = {sx < 0 ? b[0] : sx > 0 ? b[1] : ctr[0], sy < 0 ? b[2] : sy > 0 ? b[3] : ctr[1],
                             ctr[2] < top ? ctr[2] : top};
        /* an internal face: the neighbour across it reaches q's height */
        if (sx && cell_nb(t, ix + sx, iy) >= q[2]) return;
        if (sy && cell_nb(t, ix, iy + sy) >= q[2]) return;
        if (sx && sy && cell_nb(t, ix + sx, iy + sy) >= q[2]) return;
        double dv[3];
        v3_sub(dv, ctr, q);
        const double dist = v3_norm(dv);
        if (dist - r >= reach) return;
        if (dist > 1e-12) {
            v3_scale(n, dv, 1 / dist);
        } else { /* the centre on the prism's boundary: the wall's (or walls') outward direction */
            n[0] = sx, n[1] = sy, n[2] = 0;
            v3_scale(n, n, 1 / v3_norm(n));
        }
        gap = dist - r;
        const int above = ctr[2] > top, corner = (sx > 0) | (sy > 0) << 1;
        if (sx && sy) face = above ? FACE_CORNER + corner : FACE_VEDGE + corner;
        else {
            const int side = sx ? (sx > 0) : 2 + (sy > 0);
            face = above ? FACE_EDGE + side : FACE_WALL + side;
        }
    }
    double p[3];
    for (int i = 0; i < 3; i++) p[i] = ctr[i] - r * n[i];
    offer(c, g, cell_feature(t, ix, iy, face, k), p, n, gap);
}

/* A sphere (or a point, r = 0) against every cell within its reach. */
static void sphere_cells(ctx *c, int g, int k, const double ctr[3], double r, double reach)
{
    const sim_terrain *t = &c->m->terrain;
    const double e = r + reach;
    int cr[4];
    cell_range(t, ctr[0] - e, ctr[0] + e, ctr[1] - e, ctr[1] + e, cr);
    for (int iy = cr[2]; iy <= cr[3]; iy++)
        for (int ix = cr[0]; ix <= cr[1]; ix++) sphere_cell(c, g, k, ctr, r, ix, iy, reach);
}

/* Signed distance of p to the prism of cell square b and top `top` (all its faces: a convex set). */
static double prism_sdist(const double b[4], double top, const double p[3])
{
    const double ox = p[0] < b[0] ? b[0] - p[0] : p[0] > b[1] ? p[0] - b[1] : 0;
    const double oy = p[1] < b[2] ? b[2] - p[1] : p[1] > b[3] ? p[1] - b[3] : 0;
    const double oz = p[2] > top ? p[2] - top : 0;
    if (ox > 0 || oy > 0 || oz > 0) return sqrt(ox * ox + oy * oy + oz * oz);
    double in = top - p[2];
    const double w[4] = {p[0] - b[0], b[1] - p[0], p[1] - b[2], b[3] - p[1]};
    for (int s = 0; s < 4; s++)
        if (w[s] < in) in = w[s];
    return -in;
}

/* Golden-section steps for the minimum of a convex (or maximum of a concave) function of a segment's parameter:
 * the bracket shrinks to 0.618^32 ~ 2e-7 of the segment (20 nm on a 0.1 m cell edge). */
#define GOLDEN_STEPS 32
static const double golden = 0.6180339887498949;

/* A capsule (segment a -> b, radius r) against every cell within its reach. */
static void capsule_cells(ctx *c, int g, const double a[3], const double bq[3], double r, double reach)
{
    const sim_terrain *t = &c->m->terrain;
    const double e = r + reach;
    const double zlo = cmin(a[2], bq[2]) - e;
    int cr[4];
    cell_range(t, cmin(a[0], bq[0]) - e, cmax(a[0], bq[0]) + e, cmin(a[1], bq[1]) - e, cmax(a[1], bq[1]) + e, cr);
    for (int iy = cr[2]; iy <= cr[3]; iy++)
        for (int ix = cr[0]; ix <= cr[1]; ix++) {
            if (!cell_smooth(t, ix, iy) && cell_top(t, ix, iy) < zlo) continue;
            sphere_cell(c, g, 0, a, r, ix, iy, reach);
            sphere_cell(c, g, 1, bq, r, ix, iy, reach);
            if (cell_smooth(t, ix, iy)) continue; /* a smooth cell: the ends only, as on a heightfield */
            double b[4];
            cell_bounds(t, ix, iy, b);
            const double top = cell_top(t, ix, iy);
            double lo = 0, hi = 1, p[3];
#define SEG_AT(s) (p[0] = a[0] + (s) * (bq[0] - a[0]), p[1] = a[1] + (s) * (bq[1] - a[1]), p[2] = a[2] + (s) * (bq[2] - a[2]), p)
            double s1 = hi - golden * (hi - lo), s2 = lo + golden * (hi - lo);
            double f1 = prism_sdist(b, top, SEG_AT(s1)), f2 = prism_sdist(b, top, SEG_AT(s2));
            for (int it = 0; it < GOLDEN_STEPS; it++) {
                if (f1 <= f2) hi = s2, s2 = s1, f2 = f1, s1 = hi - golden * (hi - lo), f1 = prism_sdist(b, top, SEG_AT(s1));
                else lo = s1, s1 = s2, f1 = f2, s2 = lo + golden * (hi - lo), f2 = prism_sdist(b, top, SEG_AT(s2));
            }
            const double s = 0.5 * (lo + hi), fs = prism_sdist(b, top, SEG_AT(s));
            const double fa = prism_sdist(b, top, a), fb = prism_sdist(b, top, bq);
            if (fs < cmin(fa, fb) - 1e-9) sphere_cell(c, g, 2, SEG_AT(s), r, ix, iy, reach);
#undef SEG_AT
        }
}

/* A box or a cylinder (geometry G at ctr with rotation R, world): depth of the world point p inside it (negative
 * outside, a lower bound of minus the distance), and the outward normal (world) of the face nearest p. */
static double solid_depth(const sim_geom *G, const double ctr[3], const double R[9], const double p[3], double o[3])
{
    double d[3], l[3];
    v3_sub(d, p, ctr);
    m3_tmulv(l, R, d);
    double ol[3] = {0, 0, 0}, depth;
    if (G->type == SIM_GEOM_BOX) {
        int f = 0;
        depth = INFINITY;
        for (int i = 0; i < 3; i++) {
            const double di = G->size[i] - fabs(l[i]);
            if (di < depth) depth = di, f = i;
        }
        ol[f] = l[f] < 0 ? -1 : 1;
    } else {
        const double rad = sqrt(l[0] * l[0] + l[1] * l[1]);
        const double dr = G->size[0] - rad, dz = G->size[1] - fabs(l[2]);
        if (dr < dz && rad > 1e-12) depth = dr, ol[0] = l[0] / rad, ol[1] = l[1] / rad;
        else depth = dz, ol[2] = l[2] < 0 ? -1 : 1;
    }
    if (o) m3_mulv(o, R, ol);
    return depth;
}

/* Edge segment p0 -> p1 of the terrain against a box or a cylinder: its deepest point, whose depth (concave along
 * the segment) is maximized by golden section.  The contact normal, -(the nearest face's outward normal), is kept
 * inside the edge's normal cone, spanned by the unit vectors u and w (u = +z and w the wall's normal for a top
 * edge; the two walls' normals for a vertical edge). */
static void segment_solid(ctx *c, int g, int feature, const double ctr[3], const double R[9], const double p0[3],
                          const double p1[3], const double u[3], const double w[3], double reach)
{
    const sim_geom *G = &c->m->geom[g];
    /* the segment beyond the bounding sphere's reach: nothing to find */
    double e[3], w0[3];
    v3_sub(e, p1, p0);
    v3_sub(w0, ctr, p0);
    const double ee = v3_dot(e, e), te = ee > 0 ? cmin(1, cmax(0, v3_dot(w0, e) / ee)) : 0;
    v3_addscl(w0, e, -te);
    const double rb = sim_geom_bound_radius(G) + reach;
    if (v3_dot(w0, w0) > rb * rb) return;
    double lo = 0, hi = 1, p[3];
#define SEG_AT(s) (p[0] = p0[0] + (s) * (p1[0] - p0[0]), p[1] = p0[1] + (s) * (p1[1] - p0[1]), p[2] = p0[2] + (s) * (p1[2] - p0[2]), p)
    double s1 = hi - golden * (hi - lo), s2 = lo + golden * (hi - lo);
    double f1 = solid_depth(G, ctr, R, SEG_AT(s1), NULL), f2 = solid_depth(G, ctr, R, SEG_AT(s2), NULL);
    for (int it = 0; it < GOLDEN_STEPS; it++) {
        if (f1 >= f2) hi = s2, s2 = s1, f2 = f1, s1 = hi - golden * (hi - lo), f1 = solid_depth(G, ctr, R, SEG_AT(s1), NULL);
        else lo = s1, s1 = s2, f1 = f2, s2 = lo + golden * (hi - lo), f2 = solid_depth(G, ctr, R, SEG_AT(s2), NULL);
    }
    double o[3];
    const double depth = solid_depth(G, ctr, R, SEG_AT(0.5 * (lo + hi)), o);
#undef SEG_AT
    if (-depth >= reach) return;
    /* n = -o, projected on the plane of u and w (normal to the edge) and clamped between them */
    double n[3] = {-o[0], -o[1], -o[2]};
    double ax[3];
    v3_cross(ax, u, w);
    const double an = v3_norm(ax);
    if (an > 1e-12) v3_addscl(n, ax, -v3_dot(n, ax) / (an * an));
    const double uw = v3_dot(u, w), nu = v3_dot(n, u), nw = v3_dot(n, w);
    /* n = alpha u + beta w in the plane: solve the 2x2 Gram system */
    const double det = 1 - uw * uw;
    double alpha = (nu - uw * nw) / det, beta = (nw - uw * nu) / det;
    if (alpha < 0 && beta < 0) {
        alpha = nu >= nw, beta = nu < nw;
    } else if (alpha < 0) alpha = 0;
    else if (beta < 0) beta = 0;
    for (int i = 0; i < 3; i++) n[i] = alpha * u[i] + beta * w[i];
    const double nn = v3_norm(n);
    if (!(nn > 1e-12)) v3_copy(n, u);
    else v3_scale(n, n, 1 / nn);
    double pos[3];
    for (int i = 0; i < 3; i++) pos[i] = p[i] - depth * n[i];
    offer(c, g, feature, pos, n, -depth);
}

/* A box's or a cylinder's faces against the exposed top edges and vertical edges of the prisms within its reach
 * (world AABB half extents ext about ctr). */
static void edges_solid(ctx *c, int g, const double ctr[3], const double R[9], const double ext[3], double reach)
{
    const sim_terrain *t = &c->m->terrain;
    const double zlo = ctr[2] - ext[2] - reach, zhi = ctr[2] + ext[2] + reach;
    int cr[4];
    cell_range(t, ctr[0] - ext[0] - reach, ctr[0] + ext[0] + reach, ctr[1] - ext[1] - reach, ctr[1] + ext[1] + reach, cr);
    for (int iy = cr[2]; iy <= cr[3]; iy++)
        for (int ix = cr[0]; ix <= cr[1]; ix++) {
            if (cell_smooth(t, ix, iy)) continue;
            const double top = cell_top(t, ix, iy);
            if (top < zlo) continue;
            double b[4];
            cell_bounds(t, ix, iy, b);
            const int tops = top <= zhi; /* top edges within the geometry's reach in z */
            const double nb[4] = {cell_nb(t, ix - 1, iy), cell_nb(t, ix + 1, iy), cell_nb(t, ix, iy - 1),
                                  cell_nb(t, ix, iy + 1)};
            static const double z[3] = {0, 0, 1};
            static const double wn[4][3] = {{-1, 0, 0}, {1, 0, 0}, {0, -1, 0}, {0, 1, 0}};
            for (int s = 0; s < 4 && tops; s++) { /* top edges: side s, between the corners of that side */
                if (!(nb[s] < top)) continue;
                /* the edge's extent clipped to the geometry's reach (a border cell's edge is infinite) */
                double p0[3], p1[3];
                const int a = s < 2 ? 1 : 0; /* the axis along the edge */
                p0[1 - a] = p1[1 - a] = b[s];
                p0[a] = cmax(b[2 * a], ctr[a] - ext[a] - reach);
                p1[a] = cmin(b[2 * a + 1], ctr[a] + ext[a] + reach);
                if (!(p0[a] <= p1[a])) continue;
                p0[2] = p1[2] = top;
                segment_solid(c, g, cell_feature(t, ix, iy, FACE_SEG + s, 0), ctr, R, p0, p1, z, wn[s], reach);
            }
            for (int k = 0; k < 4; k++) { /* vertical edges: corner k, above its three neighbours */
                const int sxk = k & 1, syk = 2 + (k >> 1);
                const double low = cmax(cmax(nb[sxk], nb[syk]), cell_nb(t, ix + (sxk ? 1 : -1), iy + (k >> 1 ? 1 : -1)));
                if (!(low < top)) continue;
                /* the edge's extent clipped to the geometry's reach in z */
                const double z0 = cmax(low, zlo), z1 = cmin(top, zhi);
                if (!(z0 <= z1)) continue;
                const double p0[3] = {b[sxk], b[syk], z0}, p1[3] = {b[sxk], b[syk], z1};
                segment_solid(c, g, cell_feature(t, ix, iy, FACE_VSEG + k, 0), ctr, R, p0, p1, wn[sxk], wn[syk], reach);
            }
        }
}

/* Contacts of every colliding geometry with a cell terrain. */
static int collide_cells(const sim_model *m, const sim_data *d, double margin, double dt, sim_contact *out, int max)
{
    const double grav = fabs(m->gravity[2]);
    ctx c = {m, d, margin, dt, grav, INFINITY, out, 0, max, 0, m->terrain.height};
    for (int g = 0; g < m->ngeom; g++) {
        const sim_geom *G = &m->geom[g];
        if (G->nocollide) continue;
        const double *Rb = d->xrot + 9 * G->body, *cv = d->cvel + 6 * G->body;
        double R[9], ctr[3], tv[3];
        m3_mulv(tv, Rb, G->pos);
        v3_add(ctr, d->xpos + 3 * G->body, tv);
        m3_mul(R, Rb, G->rot);
        /* reach: margin + the look-ahead of the fastest point of the bounding sphere */
        double v[3];
        point_vel(d, G->body, ctr, v);
        const double rb = sim_geom_bound_radius(G), speed = v3_norm(v) + v3_norm(cv) * rb;
        const double reach = margin + dt * (speed + grav * dt);
        if (!(reach < INFINITY)) continue;
        switch (G->type) {
        case SIM_GEOM_SPHERE:
            sphere_cells(&c, g, 0, ctr, G->size[0], reach);
            break;
        case SIM_GEOM_CAPSULE: {
            double a[3], b[3];
            for (int i = 0; i < 3; i++) a[i] = ctr[i] - G->size[1] * R[3 * i + 2], b[i] = ctr[i] + G->size[1] * R[3 * i + 2];
            capsule_cells(&c, g, a, b, G->size[0], reach);
            break;
        }
        case SIM_GEOM_BOX:
        case SIM_GEOM_CYLINDER: {
            double ext[3];
            for (int i = 0; i < 3; i++) {
                if (G->type == SIM_GEOM_BOX)
                    ext[i] = fabs(R[3 * i]) * G->size[0] + fabs(R[3 * i + 1]) * G->size[1] + fabs(R[3 * i + 2]) * G->size[2];
                else
                    ext[i] = fabs(R[3 * i + 2]) * G->size[1] + sqrt(cmax(0, 1 - R[3 * i + 2] * R[3 * i + 2])) * G->size[0];
            }
            /* whole-geometry test: the highest prism under it, and the highest sample of the smooth cells' surfaces */
            int cr[4];
            cell_range(&m->terrain, ctr[0] - ext[0] - reach, ctr[0] + ext[0] + reach, ctr[1] - ext[1] - reach,
                       ctr[1] + ext[1] + reach, cr);
            /* (the grid's offset added once: rounding is monotonic, so the largest sum is the offset plus the
               largest height) */
            const sim_terrain *t = &m->terrain;
            float hm = -INFINITY;
            int smooth = 0;
            for (int iy = cr[2]; iy <= cr[3]; iy++) {
                const float *hr = t->heights + (size_t)iy * t->nx;
                const unsigned char *sr = t->smooth ? t->smooth + (size_t)iy * t->nx : NULL;
                for (int ix = cr[0]; ix <= cr[1]; ix++) {
                    const int sm = sr && sr[ix];
                    smooth |= sm;
                    hm = !sm && hr[ix] > hm ? hr[ix] : hm;
                }
            }
            const double hmax = hm > -INFINITY ? t->height + hm : -INFINITY;
            const double smax = smooth ? surface_max(t, cr) : -INFINITY;
            /* a point higher than every prism under the geometry by its reach meets none; above a smooth cell the
               gap is measured along the surface's normal, so there the point must clear its highest sample by
               reach / n_z (1e-9 m for the interpolation's rounding) */
            const double sz = smax > -INFINITY ? (t->smooth_nz_min > 0 ? smax + reach / t->smooth_nz_min + 1e-9 : INFINITY)
                                               : -INFINITY;
            const double pz_max = cmax(hmax + reach, sz);
            if (!(ctr[2] - ext[2] - reach <= hmax) && !(ctr[2] - ext[2] < sz)) break;
            if (G->type == SIM_GEOM_BOX) {
                for (int k = 0; k < 8; k++) {
                    const double l[3] = {(k & 1) ? G->size[0] : -G->size[0], (k & 2) ? G->size[1] : -G->size[1],
                                         (k & 4) ? G->size[2] : -G->size[2]};
                    double p[3];
                    m3_mulv(p, R, l);
                    v3_add(p, p, ctr);
                    if (p[2] < pz_max) sphere_cells(&c, g, k, p, 0, reach);
                }
            } else { /* rim points as on flat ground (n = +z): the deepest of each cap, three more on a facing cap */
                const double ax[3] = {R[2], R[5], R[8]}, an = R[8];
                double dir[3] = {an * ax[0], an * ax[1], an * ax[2] - 1};
                const double dn = v3_norm(dir);
                if (dn < 1e-9) dir[0] = R[0], dir[1] = R[3], dir[2] = R[6];
                else v3_scale(dir, dir, 1 / dn);
                double perp[3];
                v3_cross(perp, ax, dir);
                const int facing = fabs(an) > 0.866;
                for (int e = 0; e < 2; e++) {
                    const double s = e ? G->size[1] : -G->size[1], r = G->size[0];
                    double cc[3], p[3];
                    for (int i = 0; i < 3; i++) cc[i] = ctr[i] + s * ax[i];
                    for (int i = 0; i < 3; i++) p[i] = cc[i] + r * dir[i];
                    if (p[2] < pz_max) sphere_cells(&c, g, e, p, 0, reach);
                    if (facing && ((an > 0) == (e == 0))) {
                        const double cs[3][2] = {{0, 1}, {-1, 0}, {0, -1}};
                        for (int j = 0; j < 3; j++) {
                            for (int i = 0; i < 3; i++) p[i] = cc[i] + r * (cs[j][0] * dir[i] + cs[j][1] * perp[i]);
                            if (p[2] < pz_max) sphere_cells(&c, g, 2 + 3 * e + j, p, 0, reach);
                        }
                    }
                }
            }
            edges_solid(&c, g, ctr, R, ext, reach);
            break;
        }
        default:
            break;
        }
    }
    return c.n;
}

int sim_collide(const sim_model *m, const sim_data *d, double margin, double dt, sim_contact *out, int max)
{
    if (m->terrain.type == SIM_TERRAIN_CELLS && m->terrain.heights) return collide_cells(m, d, margin, dt, out, max);
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
