/* sim_collision: each geometry type against a plane and a heightfield at known poses, with the contact
 * point, normal (frame) and gap checked against geometry worked out by hand; the terrain query; the
 * whole-geometry rejection and the velocity look-ahead; the contact capacity cap. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "sim_collision.h"
#include "sim_dynamics.h"
#include "sim_math.h"

#define TOL 1e-12

/* One free body carrying one geometry at its origin (geometry frame = body frame), friction 0.7, and its
 * data. */
typedef struct {
    sim_model *m;
    sim_data *d;
} world;

static world one_geom(int type, double s0, double s1, double s2)
{
    world w = {sim_model_new(), NULL};
    w.m->body[0] = (sim_body){.name = "body", .parent = -1, .joint_type = SIM_JOINT_FREE, .mass = 1,
                              .rot = {1, 0, 0, 0, 1, 0, 0, 0, 1}, .inertia = {0.01, 0, 0, 0, 0.01, 0, 0, 0, 0.01}};
    w.m->geom[0] = (sim_geom){.name = "g", .type = type, .body = 0, .rot = {1, 0, 0, 0, 1, 0, 0, 0, 1},
                              .size = {s0, s1, s2}, .friction = 0.7};
    w.m->nbody = 1;
    w.m->ngeom = 1;
    char err[256];
    cr_assert_eq(sim_model_finalize(w.m, err, sizeof err), 0, "%s", err);
    w.d = sim_data_new(w.m);
    cr_assert_not_null(w.d);
    return w;
}

static void destroy(world *w)
{
    sim_data_destroy(&w->d);
    sim_model_destroy(&w->m);
}

/* Places the body at pos with orientation quat (w x y z), velocity (v_world, omega_body), and runs the
 * kinematics the collision needs. */
static void place(const sim_model *m, sim_data *d, const double pos[3], const double quat[4], const double v[3],
                  const double w[3])
{
    memcpy(d->q, pos, 3 * sizeof(double));
    memcpy(d->q + 3, quat, 4 * sizeof(double));
    for (int k = 0; k < 3; k++) {
        d->u[k] = v ? v[k] : 0;
        d->u[3 + k] = w ? w[k] : 0;
    }
    sim_kinematics(m, d);
    sim_velocity(m, d);
}

static const double QID[4] = {1, 0, 0, 0};

/* Quaternion of a rotation by angle a about unit axis (x, y, z). */
static void quat_axis(double q[4], double x, double y, double z, double a)
{
    q[0] = cos(a / 2), q[1] = x * sin(a / 2), q[2] = y * sin(a / 2), q[3] = z * sin(a / 2);
}

static void assert_vec(const double *got, double x, double y, double z, double tol, const char *what)
{
    const double want[3] = {x, y, z};
    for (int k = 0; k < 3; k++)
        cr_assert(fabs(got[k] - want[k]) <= tol, "%s[%d] = %.15g, expected %.15g", what, k, got[k], want[k]);
}

/* The frame is orthonormal, right-handed, with n as its third row. */
static void assert_frame(const sim_contact *c, double nx, double ny, double nz)
{
    assert_vec(c->frame + 6, nx, ny, nz, TOL, "normal");
    const double *t1 = c->frame, *t2 = c->frame + 3, *n = c->frame + 6;
    cr_assert(fabs(v3_dot(t1, t1) - 1) < TOL && fabs(v3_dot(t2, t2) - 1) < TOL, "unit tangents");
    cr_assert(fabs(v3_dot(t1, n)) < TOL && fabs(v3_dot(t2, n)) < TOL && fabs(v3_dot(t1, t2)) < TOL, "orthogonal");
    double x[3];
    v3_cross(x, t1, t2);
    assert_vec(x, n[0], n[1], n[2], TOL, "t1 x t2");
}

/* The contact of feature f among out[0..n), or NULL. */
static const sim_contact *feature(const sim_contact *out, int n, int f)
{
    for (int i = 0; i < n; i++)
        if (out[i].feature == f) return &out[i];
    return NULL;
}

Test(collision, sphere_on_raised_plane)
{
    world wm = one_geom(SIM_GEOM_SPHERE, 0.1, 0, 0);
    sim_model *m = wm.m;
    sim_data *d = wm.d;
    m->terrain.height = 0.05;
    place(m, d, (double[]){0.3, -0.2, 0.25}, QID, NULL, NULL);
    sim_contact c[4];
    cr_assert_eq(sim_collide(m, d, 1.0, 0.0, c, 4), 1);
    cr_assert_eq(c[0].geom, 0);
    cr_assert_eq(c[0].body, 0);
    cr_assert_eq(c[0].feature, 0);
    cr_assert_eq(c[0].mu, 0.7);
    /* gap = 0.25 - 0.05 - 0.1; lowest point of the sphere; a flat ground gives the world axes */
    cr_assert(fabs(c[0].gap - 0.1) < TOL, "gap %.15g", c[0].gap);
    assert_vec(c[0].pos, 0.3, -0.2, 0.15, TOL, "pos");
    assert_vec(c[0].frame, 1, 0, 0, TOL, "t1");
    assert_vec(c[0].frame + 3, 0, 1, 0, TOL, "t2");
    assert_frame(&c[0], 0, 0, 1);
    /* penetrating: centre 2 cm below the radius */
    place(m, d, (double[]){0, 0, 0.13}, QID, NULL, NULL);
    cr_assert_eq(sim_collide(m, d, 1e-3, 0.0, c, 4), 1);
    cr_assert(fabs(c[0].gap - -0.02) < TOL, "gap %.15g", c[0].gap);
    assert_vec(c[0].pos, 0, 0, 0.03, TOL, "pos");
    destroy(&wm);
}

Test(collision, margin_is_strict)
{
    world wm = one_geom(SIM_GEOM_SPHERE, 0.125, 0, 0);
    sim_model *m = wm.m;
    sim_data *d = wm.d;
    place(m, d, (double[]){0, 0, 0.375}, QID, NULL, NULL); /* gap 0.25, exact in binary */
    sim_contact c[1];
    cr_assert_eq(sim_collide(m, d, 0.25, 0.0, c, 1), 0, "gap == margin is not a contact");
    cr_assert_eq(sim_collide(m, d, 0.2500001, 0.0, c, 1), 1);
    cr_assert_eq(sim_collide(m, d, 1.0, 0.0, c, 0), 0, "max = 0 writes nothing");
    destroy(&wm);
}

Test(collision, tilted_capsule_end_spheres)
{
    const double r = 0.05, L = 0.2, th = M_PI / 6;
    world wm = one_geom(SIM_GEOM_CAPSULE, r, L, 0);
    sim_model *m = wm.m;
    sim_data *d = wm.d;
    double q[4];
    quat_axis(q, 0, 1, 0, th); /* local z -> (sin th, 0, cos th) */
    place(m, d, (double[]){0, 0, 0.5}, q, NULL, NULL);
    sim_contact c[4];
    cr_assert_eq(sim_collide(m, d, 1.0, 0.0, c, 4), 2);
    const sim_contact *lo = feature(c, 2, 0), *hi = feature(c, 2, 1);
    cr_assert(lo && hi);
    double zlo = 0.5 - L * cos(th), zhi = 0.5 + L * cos(th);
    cr_assert(fabs(lo->gap - (zlo - r)) < TOL, "gap %.15g", lo->gap);
    cr_assert(fabs(hi->gap - (zhi - r)) < TOL, "gap %.15g", hi->gap);
    assert_vec(lo->pos, -L * sin(th), 0, zlo - r, TOL, "low end");
    assert_vec(hi->pos, L * sin(th), 0, zhi - r, TOL, "high end");
    assert_frame(lo, 0, 0, 1);
    /* a margin between the two gaps keeps only the low end */
    cr_assert_eq(sim_collide(m, d, 0.5, 0.0, c, 4), 1);
    cr_assert_eq(c[0].feature, 0);
    destroy(&wm);
}

Test(collision, yawed_box_bottom_corners)
{
    const double hx = 0.2, hy = 0.1, hz = 0.05, a = M_PI / 4;
    world wm = one_geom(SIM_GEOM_BOX, hx, hy, hz);
    sim_model *m = wm.m;
    sim_data *d = wm.d;
    double q[4];
    quat_axis(q, 0, 0, 1, a);
    place(m, d, (double[]){1, 2, 0.04}, q, NULL, NULL);
    sim_contact c[8];
    /* the top corners (z = 0.09) are beyond the margin; the four bottom ones penetrate 1 cm */
    int n = sim_collide(m, d, 0.05, 0.0, c, 8);
    cr_assert_eq(n, 4);
    for (int f = 0; f < 4; f++) {
        const sim_contact *k = feature(c, n, f);
        cr_assert(k, "corner %d", f);
        double lx = (f & 1) ? hx : -hx, ly = (f & 2) ? hy : -hy;
        double x = 1 + cos(a) * lx - sin(a) * ly, y = 2 + sin(a) * lx + cos(a) * ly;
        assert_vec(k->pos, x, y, -0.01, TOL, "corner");
        cr_assert(fabs(k->gap - -0.01) < TOL, "gap %.15g", k->gap);
        assert_frame(k, 0, 0, 1);
    }
    cr_assert_eq(sim_collide(m, d, 1.0, 0.0, c, 8), 8, "all corners within a large margin");
    destroy(&wm);
}

Test(collision, cylinder_standing_and_lying)
{
    const double r = 0.1, L = 0.15;
    world wm = one_geom(SIM_GEOM_CYLINDER, r, L, 0);
    sim_model *m = wm.m;
    sim_data *d = wm.d;
    place(m, d, (double[]){0, 0, L + 0.01}, QID, NULL, NULL);
    sim_contact c[8];
    int n = sim_collide(m, d, 0.05, 0.0, c, 8);
    cr_assert_eq(n, 4);
    /* bottom cap (feature 0) at the body x axis, then 90-degree steps: +y, -x, -y (features 2, 3, 4) */
    const double want[4][3] = {{r, 0, 0.01}, {0, r, 0.01}, {-r, 0, 0.01}, {0, -r, 0.01}};
    const int feats[4] = {0, 2, 3, 4};
    for (int j = 0; j < 4; j++) {
        const sim_contact *k = feature(c, n, feats[j]);
        cr_assert(k, "feature %d", feats[j]);
        assert_vec(k->pos, want[j][0], want[j][1], want[j][2], TOL, "rim point");
        cr_assert(fabs(k->gap - 0.01) < TOL, "gap %.15g", k->gap);
    }
    /* the top cap gives its one deepest rim point (feature 1) within a large margin */
    n = sim_collide(m, d, 1.0, 0.0, c, 8);
    cr_assert_eq(n, 5);
    const sim_contact *top = feature(c, n, 1);
    cr_assert(top);
    cr_assert(fabs(top->gap - (2 * L + 0.01)) < TOL, "gap %.15g", top->gap);

    /* lying on its side (axis along world x), 2 cm up: it touches along a line */
    double q[4];
    quat_axis(q, 0, 1, 0, M_PI / 2);
    place(m, d, (double[]){0, 0, r + 0.02}, q, NULL, NULL);
    n = sim_collide(m, d, 0.05, 0.0, c, 8);
    cr_assert_eq(n, 2, "one lowest rim point per cap, no extra rim points when no cap faces the ground");
    const sim_contact *a = feature(c, n, 0), *b = feature(c, n, 1);
    cr_assert(a && b);
    assert_vec(a->pos, -L, 0, 0.02, TOL, "-z cap");
    assert_vec(b->pos, L, 0, 0.02, TOL, "+z cap");
    cr_assert(fabs(a->gap - 0.02) < TOL && fabs(b->gap - 0.02) < TOL);
    destroy(&wm);
}

/* A 3 x 3 heightfield of the tilted plane z = 0.5 x (+ 0.1 offset) over [-1, 1]^2. */
static const float SLOPE[9] = {-0.5f, 0.0f, 0.5f, -0.5f, 0.0f, 0.5f, -0.5f, 0.0f, 0.5f};

static void slope_terrain(sim_model *m)
{
    m->terrain.type = SIM_TERRAIN_HFIELD;
    m->terrain.height = 0.1;
    m->terrain.nx = m->terrain.ny = 3;
    m->terrain.x0 = m->terrain.y0 = -1;
    m->terrain.dx = m->terrain.dy = 1;
    m->terrain.heights = SLOPE;
}

Test(collision, terrain_query_bilinear_and_clamped)
{
    static const float bowl[4] = {0.0f, 1.0f, 2.0f, 4.0f}; /* 2 x 2: h(0,0)=0 h(1,0)=1 h(0,1)=2 h(1,1)=4 */
    sim_terrain t = {SIM_TERRAIN_HFIELD, 0.0, 2, 2, 0.0, 0.0, 1.0, 1.0, bowl, NULL, 0};
    double h, n[3];
    sim_terrain_query(&t, 0.25, 0.5, &h, n);
    /* bilinear: (1-y)((1-x) 0 + x 1) + y((1-x) 2 + x 4) = 0.5 * 0.25 + 0.5 * 2.5 */
    cr_assert(fabs(h - 1.375) < TOL, "h %.15g", h);
    /* gradient: dh/dx = (1-y)(1) + y(2) = 1.5, dh/dy = (1-x)(2) + x(3) = 2.25; n ~ (-gx, -gy, 1) */
    double s = sqrt(1.5 * 1.5 + 2.25 * 2.25 + 1);
    assert_vec(n, -1.5 / s, -2.25 / s, 1 / s, TOL, "normal");
    /* beyond the +x border: the border height continues and the x slope is dropped */
    sim_terrain_query(&t, 3.0, 0.5, &h, n);
    cr_assert(fabs(h - 2.5) < TOL, "h %.15g", h);
    s = sqrt(3.0 * 3.0 + 1);
    assert_vec(n, 0, -3.0 / s, 1 / s, TOL, "clamped normal");
    /* a plane ignores x, y */
    sim_terrain p = {SIM_TERRAIN_PLANE, -0.3, 0, 0, 0, 0, 0, 0, NULL, NULL, 0};
    sim_terrain_query(&p, 5, -7, &h, n);
    cr_assert_eq(h, -0.3);
    assert_vec(n, 0, 0, 1, 0, "plane normal");
}

Test(collision, sphere_on_sloped_heightfield)
{
    const double r = 0.1;
    world wm = one_geom(SIM_GEOM_SPHERE, r, 0, 0);
    sim_model *m = wm.m;
    sim_data *d = wm.d;
    slope_terrain(m);

    const double ctr[3] = {0.2, 0.3, 0.7};
    place(m, d, ctr, QID, NULL, NULL);
    sim_contact c[2];
    cr_assert_eq(sim_collide(m, d, 1.0, 0.0, c, 2), 1);
    /* plane 0.5 x - z + 0.1 = 0: unit normal (-0.5, 0, 1) / sqrt(1.25); distance of the centre
       |0.5 * 0.2 - 0.7 + 0.1| / sqrt(1.25) = 0.5 / sqrt(1.25) */
    const double s = sqrt(1.25), nx = -0.5 / s, nz = 1 / s;
    cr_assert(fabs(c[0].gap - (0.5 / s - r)) < TOL, "gap %.15g", c[0].gap);
    assert_vec(c[0].pos, ctr[0] - r * nx, ctr[1], ctr[2] - r * nz, TOL, "pos");
    assert_frame(&c[0], nx, 0, nz);
    /* t1 is world x projected on the tangent plane */
    assert_vec(c[0].frame, nz, 0, -nx, TOL, "t1");
    destroy(&wm);
}

Test(collision, box_corner_on_sloped_heightfield)
{
    const double h = 0.05;
    world wm = one_geom(SIM_GEOM_BOX, h, h, h);
    sim_model *m = wm.m;
    sim_data *d = wm.d;
    slope_terrain(m);
    place(m, d, (double[]){-0.4, 0.1, 0.0}, QID, NULL, NULL);
    sim_contact c[8];
    int n = sim_collide(m, d, 0.2, 0.0, c, 8);
    /* corner gap = (z - (0.1 + 0.5 x)) / sqrt(1.25): every corner has z - ground in [0.025, 0.175] */
    cr_assert_eq(n, 8);
    const double s = sqrt(1.25);
    for (int f = 0; f < 8; f++) {
        const sim_contact *k = feature(c, n, f);
        cr_assert(k);
        double x = -0.4 + ((f & 1) ? h : -h), y = 0.1 + ((f & 2) ? h : -h), z = (f & 4) ? h : -h;
        assert_vec(k->pos, x, y, z, TOL, "corner");
        cr_assert(fabs(k->gap - (z - 0.1 - 0.5 * x) / s) < TOL, "corner %d gap %.15g", f, k->gap);
        assert_frame(k, -0.5 / s, 0, 1 / s);
    }
    destroy(&wm);
}

Test(collision, whole_geometry_rejection_keeps_fast_approaches)
{
    /* a capsule lying along x, 0.58 m above the ground at its ends: its bounding sphere (0.52 m) is far
       above the margin, so at rest it is rejected whole */
    const double r = 0.02, L = 0.5, dt = 0.01;
    world wm = one_geom(SIM_GEOM_CAPSULE, r, L, 0);
    sim_model *m = wm.m;
    sim_data *d = wm.d;
    double q[4];
    quat_axis(q, 0, 1, 0, M_PI / 2);
    place(m, d, (double[]){0, 0, 0.6}, q, NULL, NULL);
    sim_contact c[2];
    cr_assert_eq(sim_collide(m, d, 1e-3, dt, c, 2), 0);
    /* spinning at 120 rad/s about y, the +x end comes down at 60 m/s: within the look-ahead
       dt (60 + g dt) = 0.601 m > 0.58 m; the -x end goes up and stays out */
    place(m, d, (double[]){0, 0, 0.6}, q, NULL, (double[]){0, 120, 0});
    cr_assert_eq(sim_collide(m, d, 1e-3, dt, c, 2), 1);
    cr_assert_eq(c[0].feature, 1);
    assert_vec(c[0].pos, L, 0, 0.6 - r, TOL, "+x end");
    /* the same for a fall: 0.06 m gap, 10 m/s down, look-ahead 0.101 m */
    world ws = one_geom(SIM_GEOM_SPHERE, 0.1, 0, 0);
    sim_model *s = ws.m;
    sim_data *ds = ws.d;
    place(s, ds, (double[]){0, 0, 0.16}, QID, NULL, NULL);
    cr_assert_eq(sim_collide(s, ds, 1e-3, dt, c, 2), 0);
    place(s, ds, (double[]){0, 0, 0.16}, QID, (double[]){0, 0, -10}, NULL);
    cr_assert_eq(sim_collide(s, ds, 1e-3, dt, c, 2), 1);
    cr_assert(fabs(c[0].gap - 0.06) < TOL);
    destroy(&ws);
    destroy(&wm);
}

Test(collision, capacity_keeps_the_deepest)
{
    const double hx = 0.3, hy = 0.2, hz = 0.1;
    world wm = one_geom(SIM_GEOM_BOX, hx, hy, hz);
    sim_model *m = wm.m;
    sim_data *d = wm.d;
    /* a generic orientation: eight corners at eight different heights */
    double q[4], qa[4], qb[4];
    quat_axis(qa, 1, 0, 0, 0.3);
    quat_axis(qb, 0, 1, 0, 0.5);
    quat_mul(q, qa, qb);
    place(m, d, (double[]){0, 0, 0.1}, q, NULL, NULL);
    double R[9], gaps[8];
    quat_to_mat(R, q);
    for (int f = 0; f < 8; f++) {
        double l[3] = {(f & 1) ? hx : -hx, (f & 2) ? hy : -hy, (f & 4) ? hz : -hz};
        gaps[f] = 0.1 + R[6] * l[0] + R[7] * l[1] + R[8] * l[2];
    }
    sim_contact all[8], few[3];
    cr_assert_eq(sim_collide(m, d, 10.0, 0.0, all, 8), 8);
    for (int i = 0; i < 8; i++)
        cr_assert(fabs(all[i].gap - gaps[all[i].feature]) < TOL, "corner %d", all[i].feature);
    cr_assert_eq(sim_collide(m, d, 10.0, 0.0, few, 3), 3);
    /* the kept three are the three smallest gaps */
    double sorted[8];
    memcpy(sorted, gaps, sizeof sorted);
    for (int i = 1; i < 8; i++)
        for (int j = i; j > 0 && sorted[j] < sorted[j - 1]; j--) {
            double t = sorted[j];
            sorted[j] = sorted[j - 1];
            sorted[j - 1] = t;
        }
    cr_assert(sorted[3] - sorted[2] > 1e-6, "the pose must separate the third and fourth deepest corners");
    for (int i = 0; i < 3; i++) {
        cr_assert(few[i].gap <= sorted[2] + TOL, "kept gap %.6g is not among the 3 deepest", few[i].gap);
        cr_assert(fabs(few[i].gap - gaps[few[i].feature]) < TOL);
        for (int j = 0; j < i; j++) cr_assert_neq(few[i].feature, few[j].feature);
    }
    destroy(&wm);
}

/* A full list keeps the contacts of the geometry of the higher contact_priority before deeper ones of a lower: a box
 * 5 cm into the ground and a sphere 20 cm above it, one slot. */
Test(collision, capacity_keeps_the_higher_priority)
{
    world wm = one_geom(SIM_GEOM_BOX, 0.3, 0.2, 0.1);
    sim_model *m = wm.m;
    m->geom[1] = (sim_geom){.name = "s", .type = SIM_GEOM_SPHERE, .body = 0, .pos = {0, 0, 0.15},
                            .rot = {1, 0, 0, 0, 1, 0, 0, 0, 1}, .size = {0.05}, .friction = 0.7};
    m->ngeom = 2;
    char err[256];
    cr_assert_eq(sim_model_finalize(m, err, sizeof err), 0, "%s", err);
    for (int prio = 0; prio < 2; prio++) {
        m->geom[1].contact_priority = prio;
        place(m, wm.d, (double[]){0, 0, 0.05}, QID, NULL, NULL);
        sim_contact one[1], all[5];
        cr_assert_eq(sim_collide(m, wm.d, 10.0, 0.0, all, 5), 5);
        cr_assert_eq(sim_collide(m, wm.d, 10.0, 0.0, one, 1), 1);
        if (prio) {
            cr_assert_eq(one[0].geom, 1, "the sphere's contact is kept");
            cr_assert(fabs(one[0].gap - 0.15) < TOL, "gap %g", one[0].gap);
        } else {
            cr_assert_eq(one[0].geom, 0, "equal priorities: the deepest (a box corner) is kept");
            cr_assert(fabs(one[0].gap + 0.05) < TOL, "gap %g", one[0].gap);
        }
    }
    destroy(&wm);
}

Test(collision, max_contacts_counts_features)
{
    world wm = one_geom(SIM_GEOM_SPHERE, 0.1, 0, 0);
    sim_model *m = wm.m;
    const int types[4] = {SIM_GEOM_SPHERE, SIM_GEOM_CAPSULE, SIM_GEOM_BOX, SIM_GEOM_CYLINDER};
    const int want[4] = {1, 2, 8, 8};
    for (int i = 0; i < 4; i++) {
        m->geom[0].type = types[i];
        cr_assert_eq(sim_model_max_contacts(m), want[i], "type %d", types[i]);
    }
    m->geom[0].nocollide = 1;
    cr_assert_eq(sim_model_max_contacts(m), 0);
    sim_data *d = wm.d;
    place(m, d, (double[]){0, 0, 0.0}, QID, NULL, NULL);
    sim_contact c[8];
    cr_assert_eq(sim_collide(m, d, 1.0, 0.0, c, 8), 0, "a nocollide geometry makes no contact");
    destroy(&wm);
}

/* The flat-ground path (no terrain query, each point's gap tested against the look-ahead bound before the point
 * is built) against the generic terrain path on a height field that is flat at the same height: for every
 * geometry type in random poses and velocities, the same contacts in the same order, with the same points, gaps
 * and frames (to rounding). */
Test(collision, plane_fast_path_matches_flat_heightfield)
{
    static const float FLAT[4] = {0, 0, 0, 0};
    const int types[4] = {SIM_GEOM_SPHERE, SIM_GEOM_CAPSULE, SIM_GEOM_BOX, SIM_GEOM_CYLINDER};
    const double sizes[4][3] = {{0.03, 0, 0}, {0.04, 0.2, 0}, {0.1, 0.06, 0.04}, {0.05, 0.1, 0}};
    uint64_t s = 12345;
#define RND() ((s = s * 6364136223846793005ull + 1442695040888963407ull), (double)(s >> 11) / 9007199254740992.0)
    int total = 0;
    for (int ty = 0; ty < 4; ty++) {
        world wp = one_geom(types[ty], sizes[ty][0], sizes[ty][1], sizes[ty][2]);
        world wh = one_geom(types[ty], sizes[ty][0], sizes[ty][1], sizes[ty][2]);
        wp.m->terrain.height = 0.1;
        wh.m->terrain = (sim_terrain){SIM_TERRAIN_HFIELD, 0.1, 2, 2, -10.0, -10.0, 20.0, 20.0, FLAT, NULL, 0};
        for (int trial = 0; trial < 400; trial++) {
            double q[4] = {RND() - 0.5, RND() - 0.5, RND() - 0.5, RND() - 0.5}, qn = 0;
            for (int k = 0; k < 4; k++) qn += q[k] * q[k];
            for (int k = 0; k < 4; k++) q[k] /= sqrt(qn);
            const double pos[3] = {RND() - 0.5, RND() - 0.5, 0.1 + 0.35 * RND() - 0.05};
            const double v[3] = {4 * (RND() - 0.5), 4 * (RND() - 0.5), 6 * (RND() - 0.7)};
            const double w[3] = {20 * (RND() - 0.5), 20 * (RND() - 0.5), 20 * (RND() - 0.5)};
            place(wp.m, wp.d, pos, q, v, w);
            place(wh.m, wh.d, pos, q, v, w);
            sim_contact cp[16], ch[16];
            const int np = sim_collide(wp.m, wp.d, 1e-3, 0.01, cp, 16);
            const int nh = sim_collide(wh.m, wh.d, 1e-3, 0.01, ch, 16);
            cr_assert_eq(np, nh, "type %d trial %d: %d contacts on the plane, %d on the flat height field", types[ty],
                         trial, np, nh);
            for (int i = 0; i < np; i++) {
                cr_assert(cp[i].geom == ch[i].geom && cp[i].feature == ch[i].feature && cp[i].body == ch[i].body);
                cr_assert(fabs(cp[i].gap - ch[i].gap) < 1e-14, "gap %.17g vs %.17g", cp[i].gap, ch[i].gap);
                assert_vec(cp[i].pos, ch[i].pos[0], ch[i].pos[1], ch[i].pos[2], 1e-14, "point");
                for (int k = 0; k < 9; k++) cr_assert(fabs(cp[i].frame[k] - ch[i].frame[k]) < 1e-14, "frame");
                cr_assert_eq(cp[i].mu, ch[i].mu);
            }
            total += np;
        }
        destroy(&wh);
        destroy(&wp);
    }
#undef RND
    cr_assert(total > 200, "the poses must produce contacts to compare (%d)", total);
}
