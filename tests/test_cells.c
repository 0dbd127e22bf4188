/* sim_collision on a cell terrain (SIM_TERRAIN_CELLS): each geometry against a step's top, wall, edge and corner at
 * known poses, with normals and gaps worked out by hand; internal faces dropped on flat ground; no normal pointing
 * into the terrain over random poses; contact identities that stay put while a body rests on a step; the smooth
 * cells equal the heightfield; the constructor's checks. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "sim_collision.h"
#include "sim_dynamics.h"
#include "sim_math.h"
#include "sim_step.h"

#define TOL 1e-12
#define NX 20
#define NY 6
#define H 0.25  /* riser (m), exact in float */
#define DX 0.1

/* A step: cells ix < 10 at 0, ix >= 10 at H (the wall at x = 0.95), on a 0.1 m grid from the origin. */
static float step_heights[NX * NY];
static unsigned char smooth_none[NX * NY];

typedef struct {
    sim_model *m;
    sim_data *d;
} world;

static void make_step(sim_terrain *t)
{
    for (int iy = 0; iy < NY; iy++)
        for (int ix = 0; ix < NX; ix++) step_heights[iy * NX + ix] = ix >= 10 ? (float)H : 0.0f;
    char err[256];
    cr_assert_eq(sim_terrain_cells(t, NX, NY, 0, 0, DX, DX, step_heights, NULL, err, sizeof err), 0, "%s", err);
}

static world one_geom(int type, double s0, double s1, double s2)
{
    world w = {sim_model_new(), NULL};
    w.m->body[0] = (sim_body){.name = "body", .parent = -1, .joint_type = SIM_JOINT_FREE, .mass = 1,
                              .rot = {1, 0, 0, 0, 1, 0, 0, 0, 1}, .inertia = {0.01, 0, 0, 0, 0.01, 0, 0, 0, 0.01}};
    w.m->geom[0] = (sim_geom){.name = "g", .type = type, .body = 0, .rot = {1, 0, 0, 0, 1, 0, 0, 0, 1},
                              .size = {s0, s1, s2}, .friction = 0.7};
    w.m->nbody = 1;
    w.m->ngeom = 1;
    make_step(&w.m->terrain);
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

static void place(const sim_model *m, sim_data *d, const double pos[3], const double quat[4])
{
    memcpy(d->q, pos, 3 * sizeof(double));
    memcpy(d->q + 3, quat, 4 * sizeof(double));
    memset(d->u, 0, (size_t)m->nv * sizeof(double));
    sim_kinematics(m, d);
    sim_velocity(m, d);
}

static const double QID[4] = {1, 0, 0, 0};

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

static int cell_of(int ix, int iy) { return iy * NX + ix; }

Test(cells, sphere_against_wall_is_horizontal)
{
    world w = one_geom(SIM_GEOM_SPHERE, 0.03, 0, 0);
    /* centre 2 cm before the wall (x = 0.95), 10 cm up: the wall 1 cm deep, the tread 7 cm below */
    place(w.m, w.d, (double[]){0.93, 0.3, 0.1}, QID);
    sim_contact c[8];
    const int n = sim_collide(w.m, w.d, 1e-3, 0.0, c, 8);
    cr_assert_eq(n, 1);
    assert_vec(c[0].frame + 6, -1, 0, 0, TOL, "normal");
    cr_assert(fabs(c[0].gap - -0.01) < TOL, "gap %.15g", c[0].gap);
    assert_vec(c[0].pos, 0.96, 0.3, 0.1, TOL, "pos");
    cr_assert_eq(sim_contact_face(&w.m->terrain, c[0].feature), SIM_FACE_WALL);
    cr_assert_eq(sim_contact_cell(&w.m->terrain, c[0].feature), cell_of(10, 3));
    destroy(&w);
}

/* A point pushed sideways into the riser at the lower tread's level, a hair below it (as a shank resting on the
 * tread and pressed against the riser sits): the nearest way out is the lower tread's edge of the wall, a few
 * millimetres away, not the step's top a riser above.  Just above the tread the way out is the horizontal wall. */
Test(cells, point_in_the_riser_at_tread_level_leaves_by_the_wall)
{
    world w = one_geom(SIM_GEOM_SPHERE, 0.0, 0, 0);
    /* 3 mm past the wall (x = 0.95), 0.5 mm below the lower tread (z = 0) */
    place(w.m, w.d, (double[]){0.953, 0.3, -0.0005}, QID);
    sim_contact c[8];
    int n = sim_collide(w.m, w.d, 1e-3, 0.0, c, 8);
    int wall = -1;
    for (int k = 0; k < n; k++)
        if (sim_contact_cell(&w.m->terrain, c[k].feature) == cell_of(10, 3)) wall = k;
    cr_assert_geq(wall, 0, "no contact with the step's cell");
    const double e = hypot(0.003, 0.0005);
    cr_assert(fabs(c[wall].gap - -e) < 1e-9, "gap %.15g, expected %.15g (not the riser's depth)", c[wall].gap, -e);
    assert_vec(c[wall].frame + 6, -0.003 / e, 0, 0.0005 / e, 1e-9, "normal");
    cr_assert_eq(sim_contact_face(&w.m->terrain, c[wall].feature), SIM_FACE_WALL);
    /* 1 mm above the tread: straight out through the wall */
    place(w.m, w.d, (double[]){0.953, 0.3, 0.001}, QID);
    n = sim_collide(w.m, w.d, 1e-3, 0.0, c, 8);
    wall = -1;
    for (int k = 0; k < n; k++)
        if (sim_contact_cell(&w.m->terrain, c[k].feature) == cell_of(10, 3)) wall = k;
    cr_assert_geq(wall, 0);
    cr_assert(fabs(c[wall].gap - -0.003) < 1e-9, "gap %.15g", c[wall].gap);
    assert_vec(c[wall].frame + 6, -1, 0, 0, 1e-12, "normal");
    destroy(&w);
}

Test(cells, sphere_against_edge_takes_the_edge_line_normal)
{
    world w = one_geom(SIM_GEOM_SPHERE, 0.03, 0, 0);
    /* centre 2 cm before and 2 cm above the nose (x = 0.95, z = 0.2): normal (-1, 0, 1) / sqrt 2 */
    place(w.m, w.d, (double[]){0.93, 0.33, H + 0.02}, QID);
    sim_contact c[8];
    const int n = sim_collide(w.m, w.d, 1e-3, 0.0, c, 8);
    cr_assert_eq(n, 1);
    const double s = sqrt(0.5);
    assert_vec(c[0].frame + 6, -s, 0, s, 1e-12, "normal");
    cr_assert(fabs(c[0].gap - (0.02 * sqrt(2.0) - 0.03)) < 1e-12, "gap %.15g", c[0].gap);
    cr_assert_eq(sim_contact_face(&w.m->terrain, c[0].feature), SIM_FACE_EDGE);
    cr_assert_eq(sim_contact_cell(&w.m->terrain, c[0].feature), cell_of(10, 3));
    /* in the concave corner (on the tread, against the riser): the tread and the wall, two contacts */
    place(w.m, w.d, (double[]){0.925, 0.33, 0.029}, QID);
    const int n2 = sim_collide(w.m, w.d, 1e-3, 0.0, c, 8);
    cr_assert_eq(n2, 2);
    int top = 0, wall = 0;
    for (int i = 0; i < n2; i++) {
        const int f = sim_contact_face(&w.m->terrain, c[i].feature);
        if (f == SIM_FACE_TOP) top++, assert_vec(c[i].frame + 6, 0, 0, 1, TOL, "top normal");
        if (f == SIM_FACE_WALL) wall++, assert_vec(c[i].frame + 6, -1, 0, 0, TOL, "wall normal");
    }
    cr_assert(top == 1 && wall == 1);
    destroy(&w);
}

Test(cells, flat_ground_of_many_cells_gives_one_contact)
{
    world w = one_geom(SIM_GEOM_SPHERE, 0.03, 0, 0);
    /* on a cell corner of the upper tread (four cells meet at (1.25, 0.25)), 1 mm deep */
    place(w.m, w.d, (double[]){1.25, 0.25, H + 0.029}, QID);
    sim_contact c[8];
    const int n = sim_collide(w.m, w.d, 1e-3, 0.0, c, 8);
    cr_assert_eq(n, 1, "%d contacts", n);
    assert_vec(c[0].frame + 6, 0, 0, 1, TOL, "normal");
    cr_assert(fabs(c[0].gap - -0.001) < 1e-12);
    destroy(&w);
}

Test(cells, box_corner_on_top_face)
{
    const double a = 0.05;
    world w = one_geom(SIM_GEOM_BOX, a, a, a);
    /* a cube standing on its corner -x-y-z: the body diagonal vertical */
    double q[4];
    const double ang = acos(1 / sqrt(3.0));
    const double ax[3] = {1 / sqrt(2.0), -1 / sqrt(2.0), 0};
    quat_axis(q, ax[0], ax[1], ax[2], ang);
    double R[9];
    quat_to_mat(R, q);
    /* R (-a, -a, -a) should point straight down: its z is -a sqrt 3 */
    double l[3] = {-a, -a, -a}, p[3];
    m3_mulv(p, R, l);
    cr_assert(fabs(p[2] + a * sqrt(3.0)) < 1e-12 && fabs(p[0]) < 1e-12 && fabs(p[1]) < 1e-12);
    const double z = H + a * sqrt(3.0) - 0.002;
    place(w.m, w.d, (double[]){1.5, 0.3, z}, q);
    sim_contact c[32];
    const int n = sim_collide(w.m, w.d, 1e-3, 0.0, c, 32);
    cr_assert_eq(n, 1);
    cr_assert_eq(c[0].feature % 8, 0, "corner 0");
    cr_assert_eq(sim_contact_face(&w.m->terrain, c[0].feature), SIM_FACE_TOP);
    assert_vec(c[0].frame + 6, 0, 0, 1, TOL, "normal");
    cr_assert(fabs(c[0].gap - -0.002) < 1e-12, "gap %.15g", c[0].gap);
    assert_vec(c[0].pos, 1.5, 0.3, H - 0.002, 1e-12, "pos");
    destroy(&w);
}

Test(cells, box_across_the_nose_rests_on_the_edge)
{
    /* a flat box 0.2 x 0.08 x 0.04 centred over the nose, its bottom 1 mm below the upper tread: the two corners
       over the upper tread touch its top; the nose edge (two cells' edges under the box) presses into the bottom
       face with the normal +z */
    world w = one_geom(SIM_GEOM_BOX, 0.1, 0.04, 0.02);
    place(w.m, w.d, (double[]){0.95, 0.3, H + 0.02 - 0.001}, QID);
    sim_contact c[32];
    const int n = sim_collide(w.m, w.d, 1e-3, 0.0, c, 32);
    int top = 0, edge = 0;
    for (int i = 0; i < n; i++) {
        assert_vec(c[i].frame + 6, 0, 0, 1, 1e-12, "normal");
        cr_assert(fabs(c[i].gap - -0.001) < 1e-9, "gap %.15g", c[i].gap);
        const int f = sim_contact_face(&w.m->terrain, c[i].feature);
        top += f == SIM_FACE_TOP, edge += f == SIM_FACE_EDGE;
    }
    cr_assert_eq(top, 2, "corners on the tread");
    cr_assert_eq(edge, 1, "the nose under the box (one cell's edge: y 0.3 +- 0.04 lies in cell row 3)");
    destroy(&w);
}

Test(cells, capsule_and_cylinder_across_the_nose)
{
    /* a capsule in the xz plane tilted 20 degrees up towards +x, resting on the nose only (both ends in the air):
       the segment's point nearest the nose line, normal (-sin 20, 0, cos 20) perpendicular to the segment */
    const double th = 20 * M_PI / 180, r = 0.02;
    const double nrm[3] = {-sin(th), 0, cos(th)};
    double q[4];
    quat_axis(q, 0, 1, 0, M_PI / 2 - th); /* local z -> (cos th, 0, sin th) */
    const double ctr[3] = {0.95 + (r - 0.001) * nrm[0], 0.3, H + (r - 0.001) * nrm[2]};
    world w = one_geom(SIM_GEOM_CAPSULE, r, 0.15, 0);
    place(w.m, w.d, ctr, q);
    cr_assert(fabs(w.d->xrot[2] - cos(th)) < 1e-12 && fabs(w.d->xrot[8] - sin(th)) < 1e-12, "axis");
    sim_contact c[32];
    int n = sim_collide(w.m, w.d, 1e-3, 0.0, c, 32);
    cr_assert_eq(n, 1);
    cr_assert_eq(c[0].feature % 8, 2, "the segment's point");
    cr_assert_eq(sim_contact_face(&w.m->terrain, c[0].feature), SIM_FACE_EDGE);
    cr_assert(fabs(c[0].gap - -0.001) < 1e-9, "gap %.15g", c[0].gap);
    assert_vec(c[0].frame + 6, nrm[0], nrm[1], nrm[2], 1e-6, "normal");
    destroy(&w);
    /* a cylinder the same way: the nose edge inside its side */
    w = one_geom(SIM_GEOM_CYLINDER, r, 0.15, 0);
    place(w.m, w.d, ctr, q);
    n = sim_collide(w.m, w.d, 1e-3, 0.0, c, 32);
    cr_assert_eq(n, 1);
    cr_assert_eq(sim_contact_face(&w.m->terrain, c[0].feature), SIM_FACE_EDGE);
    assert_vec(c[0].frame + 6, nrm[0], nrm[1], nrm[2], 1e-9, "normal");
    cr_assert(fabs(c[0].gap - -0.001) < 1e-9, "gap %.15g", c[0].gap);
    destroy(&w);
}

Test(cells, box_against_an_outer_corner_takes_the_vertical_edge)
{
    /* one raised cell (a post 0.1 x 0.1, H high, its corner -x-y at (0.45, 0.15)) and a box turned 45 degrees about z
       whose face presses 1 mm onto that vertical corner line from the -x-y side, 10 cm up: one contact, on the
       vertical edge, its normal the horizontal bisector (-1, -1, 0) / sqrt 2 (the box face's), not into the post */
    static float post[NX * NY];
    post[2 * NX + 5] = (float)H;
    world w = one_geom(SIM_GEOM_BOX, 0.05, 0.05, 0.03);
    char err[256];
    cr_assert_eq(sim_terrain_cells(&w.m->terrain, NX, NY, 0, 0, DX, DX, post, NULL, err, sizeof err), 0);
    double q[4];
    quat_axis(q, 0, 0, 1, M_PI / 4);
    const double s = sqrt(0.5), back = 0.05 - 0.001; /* the box centre 4.9 cm from the corner line along the bisector */
    place(w.m, w.d, (double[]){0.45 - back * s, 0.15 - back * s, 0.1}, q);
    sim_contact c[32];
    const int n = sim_collide(w.m, w.d, 1e-3, 0.0, c, 32);
    cr_assert_eq(n, 1);
    cr_assert_eq(sim_contact_face(&w.m->terrain, c[0].feature), SIM_FACE_EDGE);
    cr_assert_eq(sim_contact_cell(&w.m->terrain, c[0].feature), cell_of(5, 2));
    assert_vec(c[0].frame + 6, -s, -s, 0, 1e-9, "normal");
    cr_assert(fabs(c[0].gap - -0.001) < 1e-9, "gap %.15g", c[0].gap);
    destroy(&w);
}

/* splitmix64 */
static double urand(uint64_t *s, double lo, double hi)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return lo + (hi - lo) * (double)(z >> 11) / 9007199254740992.0;
}

Test(cells, no_normal_points_into_the_terrain)
{
    /* random stairs and obstacles; every geometry type at random poses near the ground: from the ground point of
       each contact (pos - gap n), a step of 0.1 mm along n stays out of the terrain */
    static float hts[NX * NY];
    uint64_t s = 7;
    for (int k = 0; k < NX * NY; k++) hts[k] = (float)(0.05 * floor(urand(&s, 0, 5)));
    const int types[4] = {SIM_GEOM_SPHERE, SIM_GEOM_CAPSULE, SIM_GEOM_BOX, SIM_GEOM_CYLINDER};
    const double sizes[4][3] = {{0.04, 0, 0}, {0.03, 0.12, 0}, {0.08, 0.05, 0.03}, {0.03, 0.12, 0}};
    long checked = 0, classes[SIM_FACE_COUNT] = {0};
    for (int ty = 0; ty < 4; ty++) {
        world w = one_geom(types[ty], sizes[ty][0], sizes[ty][1], sizes[ty][2]);
        char err[256];
        cr_assert_eq(sim_terrain_cells(&w.m->terrain, NX, NY, 0, 0, DX, DX, hts, NULL, err, sizeof err), 0);
        for (int trial = 0; trial < 3000; trial++) {
            double q[4] = {urand(&s, -1, 1), urand(&s, -1, 1), urand(&s, -1, 1), urand(&s, -1, 1)};
            const double qn = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
            for (int k = 0; k < 4; k++) q[k] /= qn;
            const double x = urand(&s, 0.3, 1.7), y = urand(&s, 0.15, 0.45);
            double h, nn[3];
            sim_terrain_query(&w.m->terrain, x, y, &h, nn);
            place(w.m, w.d, (double[]){x, y, h + urand(&s, -0.02, 0.15)}, q);
            sim_contact c[64];
            const int n = sim_collide(w.m, w.d, 0.01, 0.0, c, 64);
            for (int i = 0; i < n; i++) {
                const double *nv = c[i].frame + 6;
                double g[3];
                for (int k = 0; k < 3; k++) g[k] = c[i].pos[k] - c[i].gap * nv[k] + 1e-4 * nv[k];
                double hg, ng[3];
                sim_terrain_query(&w.m->terrain, g[0], g[1], &hg, ng);
                cr_assert(g[2] >= hg - 1e-9, "type %d trial %d contact %d (feature %d, face %d): normal (%g %g %g) "
                          "points into the terrain (%g below)", ty, trial, i, c[i].feature,
                          sim_contact_face(&w.m->terrain, c[i].feature), nv[0], nv[1], nv[2], hg - g[2]);
                cr_assert(fabs(v3_norm(nv) - 1) < 1e-12);
                classes[sim_contact_face(&w.m->terrain, c[i].feature)]++;
                checked++;
            }
        }
        destroy(&w);
    }
    cr_assert_gt(checked, 1000);
    for (int f = 0; f < SIM_FACE_COUNT; f++) cr_assert_gt(classes[f], 10, "face class %d met %ld times", f, classes[f]);
}

Test(cells, identities_stay_while_resting_on_a_step)
{
    /* a box dropped flat on the upper tread: after it settles, the same (geom, feature) set step after step */
    world w = one_geom(SIM_GEOM_BOX, 0.08, 0.06, 0.03);
    place(w.m, w.d, (double[]){1.3, 0.3, H + 0.035}, QID);
    int prev[64], nprev = -1, same = 0;
    for (int step = 0; step < 600; step++) {
        cr_assert_eq(sim_step(w.m, w.d, 1e-3), 0);
        const int n = w.d->ncon;
        int cur[64];
        for (int i = 0; i < n && i < 64; i++) cur[i] = w.d->con[i].feature;
        if (step >= 300) {
            cr_assert_eq(n, nprev, "step %d: %d contacts, %d before", step, n, nprev);
            for (int i = 0; i < n; i++) cr_assert_eq(cur[i], prev[i], "step %d contact %d", step, i);
            same++;
        }
        memcpy(prev, cur, sizeof cur);
        nprev = n;
    }
    cr_assert_eq(same, 300);
    cr_assert_eq(nprev, 4, "four bottom corners");
    cr_assert(w.d->stats.penetration <= 2e-3, "penetration %g", w.d->stats.penetration);
    cr_assert(fabs(w.d->q[2] - (H + 0.03)) < 2e-3, "rests at %g", w.d->q[2]);
    destroy(&w);
}

Test(cells, smooth_cells_are_the_heightfield)
{
    static float hts[NX * NY];
    static unsigned char mask[NX * NY];
    for (int iy = 0; iy < NY; iy++)
        for (int ix = 0; ix < NX; ix++) hts[iy * NX + ix] = (float)(0.03 * ix + 0.01 * iy), mask[iy * NX + ix] = 1;
    world w = one_geom(SIM_GEOM_SPHERE, 0.03, 0, 0);
    char err[256];
    cr_assert_eq(sim_terrain_cells(&w.m->terrain, NX, NY, 0, 0, DX, DX, hts, mask, err, sizeof err), 0);
    sim_terrain hf = w.m->terrain;
    hf.type = SIM_TERRAIN_HFIELD;
    for (int k = 0; k < 20; k++) {
        const double x = 0.3 + 0.061 * k, y = 0.2 + 0.007 * k;
        double h1, n1[3], h2, n2[3];
        sim_terrain_query(&w.m->terrain, x, y, &h1, n1);
        sim_terrain_query(&hf, x, y, &h2, n2);
        cr_assert(h1 == h2 && n1[0] == n2[0] && n1[1] == n2[1] && n1[2] == n2[2]);
        place(w.m, w.d, (double[]){x, y, h1 + 0.025}, QID);
        sim_contact c[8];
        const int n = sim_collide(w.m, w.d, 1e-3, 0.0, c, 8);
        cr_assert_eq(n, 1);
        cr_assert_eq(sim_contact_face(&w.m->terrain, c[0].feature), SIM_FACE_TOP);
        assert_vec(c[0].frame + 6, n2[0], n2[1], n2[2], 0, "normal");
        cr_assert(fabs(c[0].gap - ((h1 + 0.025 - h2) * n2[2] - 0.03)) < 1e-15);
    }
    destroy(&w);
    (void)smooth_none;
}

Test(cells, query_is_the_cell_top)
{
    sim_terrain t;
    make_step(&t);
    double h, n[3];
    sim_terrain_query(&t, 0.9499, 0.3, &h, n);
    cr_assert_eq(h, 0);
    sim_terrain_query(&t, 0.9501, 0.3, &h, n);
    cr_assert(fabs(h - H) < 1e-7);
    assert_vec(n, 0, 0, 1, 0, "normal");
    sim_terrain_query(&t, 100, -100, &h, n); /* beyond the grid: the border cell continues */
    cr_assert(fabs(h - H) < 1e-7);
    sim_terrain_query(&t, NAN, 0, &h, n);
    cr_assert_eq(h, 0);
}

Test(cells, constructor_checks)
{
    sim_terrain t;
    char err[256] = "";
    static const float one[4] = {0, 0, 0, 0};
    static const float bad[4] = {0, NAN, 0, 0};
    cr_assert_eq(sim_terrain_cells(&t, 2, 2, 0, 0, 0.1, 0.1, one, NULL, err, sizeof err), 0);
    cr_assert_eq(sim_terrain_cells(&t, 0, 2, 0, 0, 0.1, 0.1, one, NULL, err, sizeof err), -1);
    cr_assert(strstr(err, "cells"));
    cr_assert_eq(sim_terrain_cells(&t, 2, 2, 0, 0, 0, 0.1, one, NULL, err, sizeof err), -1);
    cr_assert_eq(sim_terrain_cells(&t, 2, 2, 0, 0, 0.1, INFINITY, one, NULL, err, sizeof err), -1);
    cr_assert_eq(sim_terrain_cells(&t, 2, 2, NAN, 0, 0.1, 0.1, one, NULL, err, sizeof err), -1);
    cr_assert_eq(sim_terrain_cells(&t, 2, 2, 0, 0, 0.1, 0.1, NULL, NULL, err, sizeof err), -1);
    cr_assert_eq(sim_terrain_cells(&t, 2, 2, 0, 0, 0.1, 0.1, bad, NULL, err, sizeof err), -1);
    cr_assert_eq(sim_terrain_cells(&t, 4096, 4096, 0, 0, 0.1, 0.1, one, NULL, err, sizeof err), -1);
    sim_terrain p = sim_terrain_plane(0.25);
    cr_assert(p.type == SIM_TERRAIN_PLANE && p.height == 0.25 && !p.heights);
}

/* A rugged field: prism cells and patches of smooth cells whose samples rise and fall by up to 0.16 m per 0.1 m
 * (slopes to 58 deg), from a fixed LCG. */
static float rug_h[NX * NY];
static unsigned char rug_mask[NX * NY];
static uint64_t rug_seed = 12345;
static double rug_uniform(void)
{
    rug_seed = rug_seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(rug_seed >> 11) / 9007199254740992.0;
}

Test(cells, smooth_slope_bound_holds_at_every_point)
{
    for (int k = 0; k < NX * NY; k++) rug_h[k] = (float)(0.16 * rug_uniform()), rug_mask[k] = (k / 3) % 2;
    sim_terrain t;
    char err[256];
    cr_assert_eq(sim_terrain_cells(&t, NX, NY, 0, 0, DX, DX, rug_h, rug_mask, err, sizeof err), 0, "%s", err);
    cr_assert(t.smooth_nz_min > 0.3 && t.smooth_nz_min < 0.9, "bound %g", t.smooth_nz_min);
    /* the bound is below the normal's z at every point over a smooth cell, and close to the smallest one found */
    double lo = 1;
    for (int k = 0; k < 200000; k++) {
        const double x = -0.05 + (NX * DX) * rug_uniform(), y = -0.05 + (NY * DX) * rug_uniform();
        const int ix = (int)floor(x / DX + 0.5), iy = (int)floor(y / DX + 0.5);
        if (ix < 0 || iy < 0 || ix >= NX || iy >= NY || !rug_mask[iy * NX + ix]) continue;
        double h, n[3];
        sim_terrain_query(&t, x, y, &h, n);
        cr_assert(n[2] >= t.smooth_nz_min, "n_z %.17g below the bound %.17g at (%g, %g)", n[2], t.smooth_nz_min, x, y);
        lo = fmin(lo, n[2]);
    }
    cr_assert(lo < 1.3 * t.smooth_nz_min, "smallest n_z %g, bound %g", lo, t.smooth_nz_min);
    /* without a smooth cell there is no slope to bound */
    cr_assert_eq(sim_terrain_cells(&t, NX, NY, 0, 0, DX, DX, rug_h, NULL, err, sizeof err), 0);
    cr_assert_eq(t.smooth_nz_min, 1);
}

/* The whole-geometry cull of boxes and cylinders over smooth cells (the highest sample + reach / n_z) skips only
 * geometries that meet nothing: over random poses near the rugged field, the contacts equal those found with the
 * bound unknown (smooth_nz_min 0: no geometry above a smooth cell skipped), bit for bit. */
Test(cells, smooth_cull_drops_no_contact)
{
    for (int k = 0; k < NX * NY; k++) rug_h[k] = (float)(0.16 * rug_uniform()), rug_mask[k] = (k / 3) % 2;
    int met = 0, near_cull = 0;
    for (int ty = 0; ty < 2; ty++) {
        world w = ty == 0 ? one_geom(SIM_GEOM_BOX, 0.12, 0.05, 0.04) : one_geom(SIM_GEOM_CYLINDER, 0.03, 0.1, 0);
        char err[256];
        cr_assert_eq(sim_terrain_cells(&w.m->terrain, NX, NY, 0, 0, DX, DX, rug_h, rug_mask, err, sizeof err), 0);
        const sim_terrain culled = w.m->terrain;
        sim_terrain open = culled;
        open.smooth_nz_min = 0;
        const double margin = 0.02; /* reach = margin at dt = 0: wide, so that reach / n_z matters */
        for (int k = 0; k < 4000; k++) {
            double q[4] = {rug_uniform() - 0.5, rug_uniform() - 0.5, rug_uniform() - 0.5, rug_uniform() - 0.5};
            const double qn = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
            for (int a = 0; a < 4; a++) q[a] /= qn;
            const double x = 0.2 + (NX * DX - 0.4) * rug_uniform(), y = 0.2 + (NY * DX - 0.4) * rug_uniform();
            place(w.m, w.d, (double[]){x, y, 0}, q);
            /* the lowest point of the geometry from 0.02 m under the field's top to 0.06 m above it */
            double zlo = INFINITY;
            for (int c = 0; c < 8; c++) { /* the box's corners (for the cylinder: its bounding box's) */
                const double l[3] = {(c & 1 ? 1 : -1) * w.m->geom[0].size[0], (c & 2 ? 1 : -1) * w.m->geom[0].size[ty == 0 ? 1 : 0],
                                     (c & 4 ? 1 : -1) * w.m->geom[0].size[ty == 0 ? 2 : 1]};
                double p[3];
                m3_mulv(p, w.d->xrot, l);
                zlo = fmin(zlo, p[2]);
            }
            const double z = 0.16 - zlo - 0.06 + 0.1 * rug_uniform();
            place(w.m, w.d, (double[]){x, y, z}, q);
            sim_contact a[64], b[64];
            w.m->terrain = culled;
            const int na = sim_collide(w.m, w.d, margin, 0.0, a, 64);
            w.m->terrain = open;
            const int nb = sim_collide(w.m, w.d, margin, 0.0, b, 64);
            cr_assert_eq(na, nb, "pose %d: %d contacts with the cull, %d without", k, na, nb);
            for (int i = 0; i < na; i++) {
                cr_assert_eq(a[i].feature, b[i].feature, "pose %d contact %d", k, i);
                cr_assert_eq(memcmp(&a[i].gap, &b[i].gap, sizeof a[i].gap), 0, "pose %d contact %d gap", k, i);
            }
            met += na > 0;
            near_cull += na > 0 && z + zlo > 0.16; /* a contact from a pose above every sample */
        }
        destroy(&w);
    }
    cr_log_info("%d poses met the field, %d of them above every sample", met, near_cull);
    cr_assert(met > 1000, "%d poses met the field", met);
    cr_assert(near_cull > 20, "%d poses above every sample met a slope", near_cull);
}
