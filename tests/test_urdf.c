/* test_urdf.c — the URDF loader (sim_urdf.h) and herd's ANYmal C model (envs/models/anymal_c.urdf).
 *
 * Part 1 checks the shipped model against the figures of ANYbotics' description (docs/anchors §3),
 * composing body poses through the tree here (independent of sim_dynamics).  Part 2 checks the
 * fixed-joint merge against hand-computed values on small inline documents.  Part 3 has one test per
 * error path: NULL is returned and the message names the element and its line.
 * Tests run from the repository root.
 */
#include <criterion/criterion.h>
#include <criterion/redirect.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_urdf.h"

#define MODEL_PATH "envs/models/anymal_c.urdf"
#define SRC "t.urdf"

static const char *LEGS[4] = {"LF", "RF", "LH", "RH"};
static const double SX[4] = {1, 1, -1, -1}, SY[4] = {1, -1, 1, -1};

/* ---- helpers ---- */

static sim_model *load_anymal(const sim_urdf_options *opt)
{
    char err[512] = "";
    sim_model *m = sim_urdf_load_file(MODEL_PATH, opt, err, sizeof err);
    cr_assert_not_null(m, "cannot load %s: %s", MODEL_PATH, err);
    return m;
}

static sim_model *load_ok(const char *xml, const sim_urdf_options *opt)
{
    char err[512] = "";
    sim_model *m = sim_urdf_load_string(xml, strlen(xml), SRC, opt, err, sizeof err);
    cr_assert_not_null(m, "load failed: %s", err);
    return m;
}

/* Asserts that loading fails with a message containing `elem`, "t.urdf:<line>:" when line > 0, and
 * `what` when not NULL. */
static void expect_error_opt(const char *xml, const sim_urdf_options *opt, const char *elem, int line, const char *what)
{
    char err[512] = "";
    sim_model *m = sim_urdf_load_string(xml, strlen(xml), SRC, opt, err, sizeof err);
    int loaded = m != NULL;
    sim_model_destroy(&m);
    cr_assert(!loaded, "expected an error (%s), the document loaded", what ? what : elem);
    cr_assert(err[0] != 0, "empty error message");
    if (elem) cr_assert(strstr(err, elem) != NULL, "error '%s' does not name '%s'", err, elem);
    if (line > 0) {
        char loc[64];
        snprintf(loc, sizeof loc, SRC ":%d:", line);
        cr_assert(strstr(err, loc) != NULL, "error '%s' does not give line '%s'", err, loc);
    }
    if (what) cr_assert(strstr(err, what) != NULL, "error '%s' does not say '%s'", err, what);
}

static void expect_error(const char *xml, const char *elem, int line, const char *what)
{
    expect_error_opt(xml, NULL, elem, line, what);
}

static void mat_mul(const double A[9], const double B[9], double C[9])
{
    double T[9];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) T[3 * i + j] = A[3 * i] * B[j] + A[3 * i + 1] * B[3 + j] + A[3 * i + 2] * B[6 + j];
    memcpy(C, T, sizeof T);
}

static void mat_vec(const double A[9], const double v[3], double out[3])
{
    double t[3];
    for (int i = 0; i < 3; i++) t[i] = A[3 * i] * v[0] + A[3 * i + 1] * v[1] + A[3 * i + 2] * v[2];
    memcpy(out, t, sizeof t);
}

/* World pose of every body at q = 0 (body 0 at its stored pose), composing pos/rot down the tree. */
static void world_poses(const sim_model *m, double *xpos, double *xrot)
{
    for (int i = 0; i < m->nbody; i++) {
        const sim_body *b = &m->body[i];
        if (b->parent < 0) {
            memcpy(xpos + 3 * i, b->pos, sizeof b->pos);
            memcpy(xrot + 9 * i, b->rot, sizeof b->rot);
            continue;
        }
        cr_assert_lt(b->parent, i, "body %d's parent %d does not precede it", i, b->parent);
        double t[3];
        mat_vec(xrot + 9 * b->parent, b->pos, t);
        for (int k = 0; k < 3; k++) xpos[3 * i + k] = xpos[3 * b->parent + k] + t[k];
        mat_mul(xrot + 9 * b->parent, b->rot, xrot + 9 * i);
    }
}

static void geom_world(const sim_model *m, const double *xpos, const double *xrot, int g, double out[3])
{
    const sim_geom *G = &m->geom[g];
    mat_vec(xrot + 9 * G->body, G->pos, out);
    for (int k = 0; k < 3; k++) out[k] += xpos[3 * G->body + k];
}

#define assert_near(a, b, tol, ...) cr_assert(fabs((double)(a) - (double)(b)) <= (tol), __VA_ARGS__)

static void assert_vec(const double *v, double x, double y, double z, double tol, const char *what)
{
    cr_assert(fabs(v[0] - x) <= tol && fabs(v[1] - y) <= tol && fabs(v[2] - z) <= tol,
              "%s = (%.9g %.9g %.9g), expected (%.9g %.9g %.9g)", what, v[0], v[1], v[2], x, y, z);
}

static void assert_identity(const double R[9], double tol, const char *what)
{
    for (int k = 0; k < 9; k++) assert_near(R[k], (k % 4 == 0) ? 1.0 : 0.0, tol, "%s: R[%d] = %g", what, k, R[k]);
}

/* ---- inline documents (each macro is exactly one line) ---- */

#define HEAD "<robot name=\"r\">\n"
#define TAIL "</robot>\n"
#define INERTIAL_1 "<inertial><mass value=\"1\"/><inertia ixx=\"0.1\" ixy=\"0\" ixz=\"0\" iyy=\"0.1\" iyz=\"0\" izz=\"0.1\"/></inertial>"
#define LINK(n) "  <link name=\"" n "\">" INERTIAL_1 "</link>\n"
#define REV(n, p, c) "  <joint name=\"" n "\" type=\"revolute\"><parent link=\"" p "\"/><child link=\"" c "\"/>" \
                     "<axis xyz=\"0 0 1\"/><limit lower=\"-1\" upper=\"1\" effort=\"10\" velocity=\"5\"/></joint>\n"
#define FIXED(n, p, c) "  <joint name=\"" n "\" type=\"fixed\"><parent link=\"" p "\"/><child link=\"" c "\"/></joint>\n"

/* ======================= Part 1: the ANYmal C model ======================= */

Test(anymal, loads_with_13_bodies_18_dofs)
{
    sim_model *m = load_anymal(NULL);
    cr_assert_eq(m->nbody, 13);
    cr_assert_eq(m->nv, 18);
    cr_assert_eq(m->nq, 19);
    cr_assert_eq(m->floating, 1);
    cr_assert_eq(m->body[0].joint_type, SIM_JOINT_FREE);
    cr_assert_str_eq(m->body[0].name, "base");
    cr_assert_eq(m->ngeom, 13);
    sim_model_destroy(&m);
    cr_assert_null(m);
}

Test(anymal, total_mass_matches_reference)
{
    sim_model *m = load_anymal(NULL);
    assert_near(m->total_mass, 52.13485, 1e-9, "total mass %.9f", m->total_mass);
    assert_near(m->total_mass, 52.1, 0.05, "anchor: 52.1 kg");
    double sum = 0;
    for (int i = 0; i < m->nbody; i++) sum += m->body[i].mass;
    assert_near(sum, m->total_mass, 1e-12, "total_mass is the sum of body masses");
    sim_model_destroy(&m);
}

Test(anymal, body_masses)
{
    sim_model *m = load_anymal(NULL);
    assert_near(m->body[0].mass, 26.37317, 1e-9, "base %.9f (anchor 26.4 kg)", m->body[0].mass);
    for (int l = 0; l < 4; l++) {
        char name[32];
        snprintf(name, sizeof name, "%s_HIP", LEGS[l]);
        int b = sim_model_body(m, name);
        cr_assert_geq(b, 0, "%s", name);
        assert_near(m->body[b].mass, 2.781, 1e-12, "%s mass %g", name, m->body[b].mass);
        snprintf(name, sizeof name, "%s_THIGH", LEGS[l]);
        b = sim_model_body(m, name);
        cr_assert_geq(b, 0, "%s", name);
        assert_near(m->body[b].mass, 3.071, 1e-12, "%s mass %g", name, m->body[b].mass);
        snprintf(name, sizeof name, "%s_SHANK", LEGS[l]);
        b = sim_model_body(m, name);
        cr_assert_geq(b, 0, "%s", name);
        assert_near(m->body[b].mass, 0.58842, 1e-12, "%s (shank + foot) mass %g", name, m->body[b].mass);
        snprintf(name, sizeof name, "%s_FOOT", LEGS[l]);
        cr_assert_eq(sim_model_body(m, name), -1, "%s must be merged into the shank", name);
    }
    sim_model_destroy(&m);
}

Test(anymal, body_order_is_depth_first_per_leg)
{
    sim_model *m = load_anymal(NULL);
    static const char *parts[3] = {"HIP", "THIGH", "SHANK"};
    for (int l = 0; l < 4; l++)
        for (int k = 0; k < 3; k++) {
            int b = 1 + 3 * l + k;
            char name[32];
            snprintf(name, sizeof name, "%s_%s", LEGS[l], parts[k]);
            cr_assert_str_eq(m->body[b].name, name);
            cr_assert_eq(m->body[b].parent, k == 0 ? 0 : b - 1, "%s parent %d", name, m->body[b].parent);
            cr_assert_eq(m->body[b].dof, 6 + 3 * l + k, "%s dof", name);
            cr_assert_eq(m->body[b].qadr, 7 + 3 * l + k, "%s qadr", name);
        }
    sim_model_destroy(&m);
}

Test(anymal, joints_names_axes_limits)
{
    sim_model *m = load_anymal(NULL);
    static const char *jn[3] = {"HAA", "HFE", "KFE"};
    for (int l = 0; l < 4; l++)
        for (int k = 0; k < 3; k++) {
            char name[32];
            snprintf(name, sizeof name, "%s_%s", LEGS[l], jn[k]);
            int b = sim_model_joint(m, name);
            cr_assert_eq(b, 1 + 3 * l + k, "joint %s on body %d", name, b);
            const sim_body *B = &m->body[b];
            cr_assert_eq(B->joint_type, SIM_JOINT_REVOLUTE, "%s type", name);
            if (k == 0) assert_vec(B->axis, 1, 0, 0, 0, name);
            else assert_vec(B->axis, 0, 1, 0, 0, name);
            assert_identity(B->rot, 0, name);
            assert_near(B->effort, 80, 0, "%s effort", name);
            assert_near(B->velocity, 7.5, 0, "%s velocity", name);
            assert_near(B->damping, 0, 0, "%s damping", name);
            if (k == 0) {
                int left = LEGS[l][0] == 'L';
                assert_near(B->lower, left ? -0.72 : -0.49, 1e-15, "%s lower %g", name, B->lower);
                assert_near(B->upper, left ? 0.49 : 0.72, 1e-15, "%s upper %g", name, B->upper);
            } else {
                assert_near(B->lower, -9.42477796077, 1e-12, "%s lower", name);
                assert_near(B->upper, 9.42477796077, 1e-12, "%s upper", name);
            }
        }
    cr_assert_eq(sim_model_joint(m, "LF_shank_foot"), -1, "fixed joints do not survive");
    sim_model_destroy(&m);
}

Test(anymal, joint_positions_at_zero)
{
    sim_model *m = load_anymal(NULL);
    double xpos[3 * SIM_MAX_BODIES], xrot[9 * SIM_MAX_BODIES];
    world_poses(m, xpos, xrot);
    for (int l = 0; l < 4; l++) {
        int b = 1 + 3 * l;
        assert_vec(xpos + 3 * b, SX[l] * 0.2999, SY[l] * 0.104, 0, 1e-12, m->body[b].joint_name);
        assert_vec(xpos + 3 * (b + 1), SX[l] * 0.3598, SY[l] * 0.18781, 0, 1e-12, m->body[b + 1].joint_name);
        assert_vec(xpos + 3 * (b + 2), SX[l] * 0.3598, SY[l] * 0.28811, -0.285, 1e-12, m->body[b + 2].joint_name);
    }
    sim_model_destroy(&m);
}

Test(anymal, foot_spheres_and_positions_at_zero)
{
    sim_model *m = load_anymal(NULL);
    double xpos[3 * SIM_MAX_BODIES], xrot[9 * SIM_MAX_BODIES];
    world_poses(m, xpos, xrot);
    int nsphere = 0;
    for (int g = 0; g < m->ngeom; g++) nsphere += m->geom[g].type == SIM_GEOM_SPHERE;
    cr_assert_eq(nsphere, 4, "exactly four spheres (the feet)");
    for (int l = 0; l < 4; l++) {
        char name[32], shank[32];
        snprintf(name, sizeof name, "%s_FOOT/collision0", LEGS[l]);
        snprintf(shank, sizeof shank, "%s_SHANK", LEGS[l]);
        int g = sim_model_geom(m, name);
        cr_assert_geq(g, 0, "no geometry %s", name);
        const sim_geom *G = &m->geom[g];
        cr_assert_eq(G->type, SIM_GEOM_SPHERE);
        assert_near(G->size[0], 0.03, 0, "%s radius", name);
        cr_assert_eq(G->body, sim_model_body(m, shank), "%s sits on %s", name, shank);
        assert_near(G->friction, 0.8, 0, "default friction");
        /* the foot frame (anchors: (±0.44775, ±0.30116, −0.62297)); the sphere is 0.0225 above it */
        assert_vec(G->pos, SX[l] * 0.08795, SY[l] * 0.01305, -0.33797 + 0.0225, 1e-12, name);
        double w[3];
        geom_world(m, xpos, xrot, g, w);
        assert_vec(w, SX[l] * 0.44775, SY[l] * 0.30116, -0.62297 + 0.0225, 1e-12, name);
    }
    sim_model_destroy(&m);
}

Test(anymal, base_box_and_leg_shapes)
{
    sim_model *m = load_anymal(NULL);
    int g = sim_model_geom(m, "base/collision0");
    cr_assert_eq(g, 0);
    cr_assert_eq(m->geom[g].type, SIM_GEOM_BOX);
    cr_assert_eq(m->geom[g].body, 0);
    assert_vec(m->geom[g].size, 0.29, 0.07, 0.09, 1e-15, "base half extents");
    assert_vec(m->geom[g].pos, 0, 0, 0, 0, "base box position");
    assert_identity(m->geom[g].rot, 0, "base box");
    double xpos[3 * SIM_MAX_BODIES], xrot[9 * SIM_MAX_BODIES];
    world_poses(m, xpos, xrot);
    for (int l = 0; l < 4; l++) {
        char name[48];
        snprintf(name, sizeof name, "%s_THIGH/collision0", LEGS[l]);
        int t = sim_model_geom(m, name);
        cr_assert_geq(t, 0, "%s", name);
        cr_assert_eq(m->geom[t].body, 2 + 3 * l);
        cr_assert(m->geom[t].type == SIM_GEOM_BOX || m->geom[t].type == SIM_GEOM_CYLINDER, "%s type", name);
        snprintf(name, sizeof name, "%s_SHANK/collision0", LEGS[l]);
        int s = sim_model_geom(m, name);
        cr_assert_geq(s, 0, "%s", name);
        cr_assert_eq(m->geom[s].body, 3 + 3 * l);
        cr_assert_eq(m->geom[s].type, SIM_GEOM_CYLINDER);
        /* the shank tube stands on the foot: its lower end is at the foot frame height + 0.0277 */
        double w[3];
        geom_world(m, xpos, xrot, s, w);
        assert_near(w[2] - m->geom[s].size[1], -0.62297 + 0.168985 - 0.141252, 1e-12, "%s lower end", name);
    }
    sim_model_destroy(&m);
}

Test(anymal, shank_merges_foot_inertial)
{
    /* Hand check of the loader's merge on the shipped figures: LF_SHANK (0.33842 kg at c_s) plus
     * LF_FOOT (0.25 kg at foot offset + c_f). */
    sim_model *m = load_anymal(NULL);
    const sim_body *B = &m->body[sim_model_body(m, "LF_SHANK")];
    const double cs[3] = {0.0345277, 0.0068597, 0.0009771};
    const double cf[3] = {0.08795 + 0.00948, 0.01305 - 0.00948, -0.33797 + 0.1468};
    for (int k = 0; k < 3; k++)
        assert_near(B->com[k], (0.33842 * cs[k] + 0.25 * cf[k]) / 0.58842, 1e-12, "com[%d] = %.9g", k, B->com[k]);
    /* inertia about the merged COM is larger than the sum of the parts' (parallel-axis terms > 0) */
    cr_assert_gt(B->inertia[0], 0.000328528 + 0.003171741);
    for (int r = 0; r < 3; r++)
        for (int s = 0; s < 3; s++) assert_near(B->inertia[3 * r + s], B->inertia[3 * s + r], 0, "symmetric");
    sim_model_destroy(&m);
}

Test(anymal, options_fixed_base_and_friction)
{
    sim_urdf_options opt = {.fixed_base = 1, .friction = 1.25};
    sim_model *m = load_anymal(&opt);
    cr_assert_eq(m->floating, 0);
    cr_assert_eq(m->body[0].joint_type, SIM_JOINT_ROOT_FIXED);
    cr_assert_eq(m->nq, 12);
    cr_assert_eq(m->nv, 12);
    cr_assert_eq(m->body[1].dof, 0);
    for (int g = 0; g < m->ngeom; g++) assert_near(m->geom[g].friction, 1.25, 0, "friction of %s", m->geom[g].name);
    sim_model_destroy(&m);
}

/* ======================= Part 2: merging and semantics ======================= */

/* a (2 kg, COM (0.1,0,0), diag(0.01,0.02,0.03)) carries b on a fixed joint at (0,0,0.5) yawed 90°;
 * b: 1 kg, COM (0.2,0,0) in b, diag(0.004,0.005,0.006) in b.  In a's frame b's COM is (0,0.2,0.5)
 * and its inertia diag(0.005,0.004,0.006).  Merged: 3 kg, COM (0.2/3, 0.2/3, 0.5/3);
 * d_a = (1/30, -1/15, -1/6), d_b = (-1/15, 2/15, 1/3); I = sum I_i + m_i (|d_i|^2 E - d_i d_i^T). */
static const char *MERGE_DOC =
    HEAD
    "  <link name=\"a\"><inertial><origin xyz=\"0.1 0 0\"/><mass value=\"2\"/>"
    "<inertia ixx=\"0.01\" ixy=\"0\" ixz=\"0\" iyy=\"0.02\" iyz=\"0\" izz=\"0.03\"/></inertial></link>\n"
    "  <link name=\"b\"><inertial><origin xyz=\"0.2 0 0\"/><mass value=\"1\"/>"
    "<inertia ixx=\"0.004\" ixy=\"0\" ixz=\"0\" iyy=\"0.005\" iyz=\"0\" izz=\"0.006\"/></inertial>"
    "<collision><origin xyz=\"0.1 0 0\"/><geometry><sphere radius=\"0.05\"/></geometry></collision></link>\n"
    "  <joint name=\"w\" type=\"fixed\"><parent link=\"a\"/><child link=\"b\"/>"
    "<origin xyz=\"0 0 0.5\" rpy=\"0 0 1.5707963267948966\"/></joint>\n"
    TAIL;

Test(merge, two_link_fixed_chain)
{
    sim_model *m = load_ok(MERGE_DOC, NULL);
    cr_assert_eq(m->nbody, 1);
    const sim_body *B = &m->body[0];
    cr_assert_str_eq(B->name, "a");
    assert_near(B->mass, 3, 1e-15, "mass");
    assert_vec(B->com, 0.2 / 3, 0.2 / 3, 0.5 / 3, 1e-15, "merged com");
    const double ex[9] = {
        0.01 + 0.005 + 2 * (1.0 / 30 - 1.0 / 900) + (2.0 / 15 - 1.0 / 225),
        2 * (1.0 / 450) + (2.0 / 225),
        2 * (1.0 / 180) + (1.0 / 45),
        0,
        0.02 + 0.004 + 2 * (1.0 / 30 - 1.0 / 225) + (2.0 / 15 - 4.0 / 225),
        2 * (-1.0 / 90) + (-2.0 / 45),
        0, 0,
        0.03 + 0.006 + 2 * (1.0 / 30 - 1.0 / 36) + (2.0 / 15 - 1.0 / 9),
    };
    const int idx[6][2] = {{0, 0}, {0, 1}, {0, 2}, {1, 1}, {1, 2}, {2, 2}};
    for (int k = 0; k < 6; k++) {
        int r = idx[k][0], s = idx[k][1];
        assert_near(B->inertia[3 * r + s], ex[3 * r + s], 1e-14, "I[%d][%d] = %.12g, expected %.12g", r, s,
                    B->inertia[3 * r + s], ex[3 * r + s]);
        assert_near(B->inertia[3 * s + r], ex[3 * r + s], 1e-14, "I[%d][%d] symmetric", s, r);
    }
    /* b's collision moved into a's frame: (0,0,0.5) + Rz(90°)(0.1,0,0) */
    cr_assert_eq(m->ngeom, 1);
    cr_assert_str_eq(m->geom[0].name, "b/collision0");
    cr_assert_eq(m->geom[0].body, 0);
    assert_vec(m->geom[0].pos, 0, 0.1, 0.5, 1e-15, "moved sphere");
    assert_near(m->geom[0].rot[1], -1, 1e-15, "sphere frame yawed 90 degrees");
    sim_model_destroy(&m);
}

Test(merge, rotated_inertial_frame)
{
    /* diag(1,2,3) about axes yawed 90°: in the link frame diag(2,1,3); rolled 90°: diag(1,3,2). */
    static const char *doc =
        HEAD
        "  <link name=\"a\"><inertial><origin xyz=\"0 0 0\" rpy=\"0 0 1.5707963267948966\"/><mass value=\"1\"/>"
        "<inertia ixx=\"1\" ixy=\"0\" ixz=\"0\" iyy=\"2\" iyz=\"0\" izz=\"3\"/></inertial></link>\n"
        "  <link name=\"b\"><inertial><origin xyz=\"0 0 0\" rpy=\"1.5707963267948966 0 0\"/><mass value=\"1\"/>"
        "<inertia ixx=\"1\" ixy=\"0\" ixz=\"0\" iyy=\"2\" iyz=\"0\" izz=\"3\"/></inertial></link>\n"
        "  <link name=\"c\"><inertial><origin xyz=\"0 0 0\" rpy=\"0.3 -0.7 1.1\"/><mass value=\"1\"/>"
        "<inertia ixx=\"1\" ixy=\"0.1\" ixz=\"-0.2\" iyy=\"2\" iyz=\"0.3\" izz=\"3\"/></inertial></link>\n"
        REV("ab", "a", "b") REV("bc", "b", "c")
        TAIL;
    sim_model *m = load_ok(doc, NULL);
    const double *Ia = m->body[0].inertia, *Ib = m->body[1].inertia, *Ic = m->body[2].inertia;
    assert_vec((double[]){Ia[0], Ia[4], Ia[8]}, 2, 1, 3, 1e-12, "yawed diagonal");
    assert_vec((double[]){Ia[1], Ia[2], Ia[5]}, 0, 0, 0, 1e-12, "yawed off-diagonal");
    assert_vec((double[]){Ib[0], Ib[4], Ib[8]}, 1, 3, 2, 1e-12, "rolled diagonal");
    assert_vec((double[]){Ib[1], Ib[2], Ib[5]}, 0, 0, 0, 1e-12, "rolled off-diagonal");
    /* a general rotation keeps the invariants: trace and Frobenius norm */
    double tr = Ic[0] + Ic[4] + Ic[8], fro = 0;
    for (int k = 0; k < 9; k++) fro += Ic[k] * Ic[k];
    assert_near(tr, 6, 1e-12, "trace %g", tr);
    assert_near(fro, 1 + 4 + 9 + 2 * (0.01 + 0.04 + 0.09), 1e-12, "Frobenius norm");
    cr_assert_gt(fabs(Ic[1]) + fabs(Ic[2]) + fabs(Ic[5]), 0.3, "the tensor was rotated");
    sim_model_destroy(&m);
}

Test(merge, chain_of_fixed_joints_composes_movable_origin)
{
    /* a -fixed(1,0,0 yaw 90°)-> b (massless) -fixed(1,0,0)-> c -revolute(0,0,1)-> d.
     * c sits at (1,1,0) in a, yawed 90°: d's joint frame is at (1,1,1) in a, yawed 90°. */
    static const char *doc =
        HEAD
        LINK("a")
        "  <link name=\"b\"/>\n"
        "  <link name=\"c\"><inertial><mass value=\"2\"/><inertia ixx=\"0\" ixy=\"0\" ixz=\"0\" iyy=\"0\" iyz=\"0\" izz=\"0\"/></inertial>"
        "<collision><origin xyz=\"0 0.5 0\"/><geometry><box size=\"0.2 0.4 0.6\"/></geometry></collision></link>\n"
        LINK("d")
        "  <joint name=\"ab\" type=\"fixed\"><parent link=\"a\"/><child link=\"b\"/><origin xyz=\"1 0 0\" rpy=\"0 0 1.5707963267948966\"/></joint>\n"
        "  <joint name=\"bc\" type=\"fixed\"><parent link=\"b\"/><child link=\"c\"/><origin xyz=\"1 0 0\"/></joint>\n"
        "  <joint name=\"cd\" type=\"continuous\"><parent link=\"c\"/><child link=\"d\"/><origin xyz=\"0 0 1\"/><axis xyz=\"0 0 2\"/></joint>\n"
        TAIL;
    sim_model *m = load_ok(doc, NULL);
    cr_assert_eq(m->nbody, 2);
    cr_assert_eq(m->nv, 7);
    cr_assert_eq(m->nq, 8);
    cr_assert_str_eq(m->body[1].name, "d");
    cr_assert_str_eq(m->body[1].joint_name, "cd");
    cr_assert_eq(m->body[1].parent, 0);
    assert_vec(m->body[1].pos, 1, 1, 1, 1e-15, "composed joint origin");
    assert_near(m->body[1].rot[1], -1, 1e-15, "composed joint rotation (yaw 90)");
    assert_vec(m->body[1].axis, 0, 0, 1, 0, "normalized axis, joint frame");
    /* continuous: no position limits, no effort/velocity limit without <limit> */
    cr_assert(isinf(m->body[1].lower) && m->body[1].lower < 0);
    cr_assert(isinf(m->body[1].upper) && m->body[1].upper > 0);
    cr_assert(isinf(m->body[1].effort) && isinf(m->body[1].velocity));
    cr_assert_eq(m->body[1].joint_type, SIM_JOINT_CONTINUOUS);
    /* a (1 kg at 0) + c (2 kg at (1,1,0)) */
    assert_near(m->body[0].mass, 3, 1e-15, "mass");
    assert_vec(m->body[0].com, 2.0 / 3, 2.0 / 3, 0, 1e-15, "com");
    /* c's box: (1,1,0) + Rz(90)(0,0.5,0) = (0.5,1,0), half extents unchanged */
    cr_assert_eq(m->ngeom, 1);
    cr_assert_str_eq(m->geom[0].name, "c/collision0");
    assert_vec(m->geom[0].pos, 0.5, 1, 0, 1e-15, "box in a's frame");
    assert_vec(m->geom[0].size, 0.1, 0.2, 0.3, 1e-15, "half extents");
    sim_model_destroy(&m);
}

Test(merge, massless_merged_link_and_prismatic)
{
    static const char *doc =
        HEAD LINK("a")
        "  <link name=\"sensor\"/>\n"
        LINK("b")
        FIXED("as", "a", "sensor")
        "  <joint name=\"ab\" type=\"prismatic\"><parent link=\"a\"/><child link=\"b\"/><axis xyz=\"0 1 0\"/>"
        "<limit lower=\"-0.5\" upper=\"0.25\" effort=\"100\" velocity=\"2\"/><dynamics damping=\"3\" friction=\"0.5\"/></joint>\n"
        TAIL;
    sim_model *m = load_ok(doc, NULL);
    cr_assert_eq(m->nbody, 2);
    assert_near(m->body[0].mass, 1, 0, "massless link adds nothing");
    const sim_body *B = &m->body[1];
    cr_assert_eq(B->joint_type, SIM_JOINT_PRISMATIC);
    assert_vec(B->axis, 0, 1, 0, 0, "axis");
    assert_near(B->lower, -0.5, 0, "lower");
    assert_near(B->upper, 0.25, 0, "upper");
    assert_near(B->effort, 100, 0, "effort");
    assert_near(B->velocity, 2, 0, "velocity");
    assert_near(B->damping, 3, 0, "damping");
    assert_near(B->friction, 0.5, 0, "friction");
    sim_model_destroy(&m);
}

Test(merge, default_axis_origin_and_limits)
{
    static const char *doc =
        HEAD LINK("a") LINK("b")
        "  <joint name=\"ab\" type=\"revolute\"><parent link=\"a\"/><child link=\"b\"/><limit effort=\"1\" velocity=\"2\"/></joint>\n"
        TAIL;
    sim_model *m = load_ok(doc, NULL);
    assert_vec(m->body[1].axis, 1, 0, 0, 0, "URDF default axis");
    assert_vec(m->body[1].pos, 0, 0, 0, 0, "default origin");
    assert_identity(m->body[1].rot, 0, "default origin");
    assert_near(m->body[1].lower, 0, 0, "default lower");
    assert_near(m->body[1].upper, 0, 0, "default upper");
    sim_model_destroy(&m);
}

Test(merge, rpy_is_fixed_axis_roll_pitch_yaw)
{
    /* R = Rz(y) Ry(p) Rx(r) with r = 90°, y = 90°: x -> (0,1,0), y -> (0,0,1), z -> (1,0,0) */
    static const char *doc =
        HEAD LINK("a") LINK("b")
        "  <joint name=\"ab\" type=\"revolute\"><parent link=\"a\"/><child link=\"b\"/>"
        "<origin xyz=\"1 2 3\" rpy=\"1.5707963267948966 0 1.5707963267948966\"/><limit effort=\"1\" velocity=\"1\"/></joint>\n"
        TAIL;
    sim_model *m = load_ok(doc, NULL);
    const double *R = m->body[1].rot;
    const double ex[9] = {0, 0, 1, 1, 0, 0, 0, 1, 0}; /* columns: images of x, y, z */
    for (int k = 0; k < 9; k++) assert_near(R[k], ex[k], 1e-15, "R[%d] = %g", k, R[k]);
    assert_vec(m->body[1].pos, 1, 2, 3, 0, "origin");
    sim_model_destroy(&m);
}

Test(root, fixed_base_option)
{
    static const char *doc = HEAD LINK("a") LINK("b") REV("ab", "a", "b") TAIL;
    sim_urdf_options opt = {.fixed_base = 1};
    sim_model *m = load_ok(doc, &opt);
    cr_assert_eq(m->floating, 0);
    cr_assert_eq(m->body[0].joint_type, SIM_JOINT_ROOT_FIXED);
    cr_assert_eq(m->nq, 1);
    cr_assert_eq(m->nv, 1);
    assert_identity(m->body[0].rot, 0, "root pose");
    sim_model_destroy(&m);
}

Test(root, world_with_one_fixed_child_becomes_fixed_root)
{
    static const char *doc =
        HEAD
        "  <link name=\"world\"/>\n"
        "  <link name=\"base\">" INERTIAL_1 "<collision><geometry><sphere radius=\"0.1\"/></geometry></collision></link>\n"
        LINK("arm")
        "  <joint name=\"weld\" type=\"fixed\"><parent link=\"world\"/><child link=\"base\"/><origin xyz=\"0 0 1\" rpy=\"0 0 1.5707963267948966\"/></joint>\n"
        REV("shoulder", "base", "arm")
        TAIL;
    sim_model *m = load_ok(doc, NULL); /* floating by default, but the world link fixes the root */
    cr_assert_eq(m->nbody, 2);
    cr_assert_str_eq(m->body[0].name, "base");
    cr_assert_eq(m->body[0].joint_type, SIM_JOINT_ROOT_FIXED);
    cr_assert_eq(m->floating, 0);
    cr_assert_eq(m->nq, 1);
    assert_vec(m->body[0].pos, 0, 0, 1, 0, "root pose: position");
    assert_near(m->body[0].rot[1], -1, 1e-15, "root pose: yaw 90");
    assert_near(m->total_mass, 2, 0, "the world weighs nothing");
    cr_assert_eq(m->geom[0].body, 0);
    assert_vec(m->geom[0].pos, 0, 0, 0, 0, "collision stays in the base frame");
    sim_model_destroy(&m);
}

Test(root, world_with_movable_child_is_body_zero)
{
    static const char *doc = HEAD "  <link name=\"world\"/>\n" LINK("a") REV("j", "world", "a") TAIL;
    sim_model *m = load_ok(doc, NULL);
    cr_assert_eq(m->nbody, 2);
    cr_assert_str_eq(m->body[0].name, "world");
    cr_assert_eq(m->body[0].joint_type, SIM_JOINT_ROOT_FIXED);
    assert_near(m->body[0].mass, 0, 0, "world mass");
    cr_assert_eq(m->nv, 1);
    cr_assert_str_eq(m->body[1].joint_name, "j");
    sim_model_destroy(&m);
}

Test(geom, names_sizes_and_types)
{
    static const char *doc =
        HEAD
        "  <link name=\"a\">" INERTIAL_1 "\n"
        "    <visual><geometry><mesh filename=\"x.dae\"/></geometry></visual>\n"
        "    <collision><geometry><cylinder radius=\"0.1\" length=\"0.4\"/></geometry></collision>\n"
        "    <collision name=\"cap\"><origin xyz=\"1 0 0\"/><geometry><capsule radius=\"0.05\" length=\"0.3\"/></geometry></collision>\n"
        "    <collision><geometry><box size=\"1 2 3\"/></geometry></collision>\n"
        "  </link>\n"
        TAIL;
    sim_model *m = load_ok(doc, NULL);
    cr_assert_eq(m->ngeom, 3);
    cr_assert_str_eq(m->geom[0].name, "a/collision0");
    cr_assert_eq(m->geom[0].type, SIM_GEOM_CYLINDER);
    assert_vec(m->geom[0].size, 0.1, 0.2, 0, 1e-15, "cylinder radius, half length");
    cr_assert_str_eq(m->geom[1].name, "cap");
    cr_assert_eq(m->geom[1].type, SIM_GEOM_CAPSULE);
    assert_vec(m->geom[1].size, 0.05, 0.15, 0, 1e-15, "capsule radius, half length");
    assert_vec(m->geom[1].pos, 1, 0, 0, 0, "capsule origin");
    cr_assert_str_eq(m->geom[2].name, "a/collision2");
    cr_assert_eq(m->geom[2].type, SIM_GEOM_BOX);
    assert_vec(m->geom[2].size, 0.5, 1, 1.5, 0, "box half extents");
    sim_model_destroy(&m);
}

Test(geom, mesh_collisions_skipped_on_request)
{
    static const char *doc =
        HEAD
        "  <link name=\"a\">" INERTIAL_1 "<collision><geometry><mesh filename=\"x.stl\"/></geometry></collision>"
        "<collision><geometry><sphere radius=\"0.1\"/></geometry></collision></link>\n"
        TAIL;
    sim_urdf_options opt = {.ignore_mesh_collisions = 1};
    sim_model *m = load_ok(doc, &opt);
    cr_assert_eq(m->ngeom, 1);
    cr_assert_str_eq(m->geom[0].name, "a/collision1", "names count every <collision>, skipped or not");
    sim_model_destroy(&m);
}

Test(parse, unknown_elements_are_ignored)
{
    static const char *doc =
        "<?xml version=\"1.0\"?>\n"
        "<robot name=\"r\" xmlns:xacro=\"http://www.ros.org/wiki/xacro\">\n"
        "  <!-- comment -->\n"
        "  <material name=\"grey\"><color rgba=\"0.5 0.5 0.5 1\"/></material>\n"
        "  <mujoco><compiler fusestatic=\"true\"/></mujoco>\n"
        "  <gazebo reference=\"a\"><mu1>0.8</mu1></gazebo>\n"
        "  <link name=\"a\">" INERTIAL_1 "<self_filter/><visual><geometry><box size=\"1 1 1\"/></geometry></visual></link>\n"
        LINK("b")
        "  <joint name=\"ab\" type=\"revolute\"><parent link=\"a\"/><child link=\"b\"/><calibration rising=\"0\"/>"
        "<safety_controller k_velocity=\"1\"/><limit effort=\"1\" velocity=\"1\"/></joint>\n"
        "  <transmission name=\"t\"><type>x</type><joint name=\"ab\"/></transmission>\n"
        TAIL;
    sim_model *m = load_ok(doc, NULL);
    cr_assert_eq(m->nbody, 2);
    cr_assert_eq(m->ngeom, 0);
    sim_model_destroy(&m);
}

Test(parse, numbers_with_exponents_and_spaces)
{
    static const char *doc =
        HEAD
        "  <link name=\"a\"><inertial><origin xyz=\"  1e-1\t-2.5E+0   0 \"/><mass value=\" 1.5 \"/>"
        "<inertia ixx=\"1e-3\" ixy=\"0\" ixz=\"0\" iyy=\"1e-3\" iyz=\"0\" izz=\"1e-3\"/></inertial></link>\n"
        TAIL;
    sim_model *m = load_ok(doc, NULL);
    assert_near(m->body[0].mass, 1.5, 0, "mass");
    assert_vec(m->body[0].com, 0.1, -2.5, 0, 1e-15, "com");
    sim_model_destroy(&m);
}

/* ======================= Part 3: error paths ======================= */

Test(error, file_not_found)
{
    char err[256] = "";
    sim_model *m = sim_urdf_load_file("envs/models/no_such_robot.urdf", NULL, err, sizeof err);
    cr_assert_null(m);
    cr_assert(strstr(err, "envs/models/no_such_robot.urdf") != NULL, "%s", err);
    cr_assert(strstr(err, "No such file") != NULL, "%s", err);
}

Test(error, malformed_xml_is_reported_not_printed, .init = cr_redirect_stderr)
{
    static const char *doc = HEAD LINK("a") "  <link name=\"b\">\n" TAIL;
    expect_error(doc, NULL, 4, "malformed XML");
    fflush(stderr);
    cr_assert_stderr_eq_str("", "libxml2 printed to stderr");
}

Test(error, malformed_xml_unclosed_attribute)
{
    expect_error(HEAD "  <link name=\"a>\n" TAIL, NULL, 0, "malformed XML");
}

Test(error, empty_and_null_documents)
{
    char err[128] = "";
    cr_assert_null(sim_urdf_load_string("", 0, SRC, NULL, err, sizeof err));
    cr_assert(err[0] != 0);
    err[0] = 0;
    cr_assert_null(sim_urdf_load_string(NULL, 0, SRC, NULL, err, sizeof err));
    cr_assert(err[0] != 0);
    /* no error buffer, tiny error buffer: no crash */
    cr_assert_null(sim_urdf_load_string("<robot/>", 8, NULL, NULL, NULL, 0));
    char tiny[6];
    cr_assert_null(sim_urdf_load_string("<robot/>", 8, NULL, NULL, tiny, sizeof tiny));
    cr_assert_eq(strlen(tiny), 5);
}

Test(error, not_a_robot_document)
{
    expect_error("<?xml version=\"1.0\"?>\n<mujoco model=\"x\"/>\n", "<mujoco", 2, "<robot>");
}

Test(error, robot_without_links)
{
    expect_error(HEAD "  <material name=\"m\"/>\n" TAIL, "<robot name=\"r\">", 1, "no <link>");
}

Test(error, link_without_name)
{
    expect_error(HEAD LINK("a") "  <link>" INERTIAL_1 "</link>\n" TAIL, "<link>", 3, "'name'");
}

Test(error, joint_without_type)
{
    expect_error(HEAD LINK("a") LINK("b") "  <joint name=\"j\"><parent link=\"a\"/><child link=\"b\"/></joint>\n" TAIL,
                 "<joint name=\"j\">", 4, "'type'");
}

Test(error, joint_without_parent_element)
{
    expect_error(HEAD LINK("a") LINK("b") "  <joint name=\"j\" type=\"fixed\"><child link=\"b\"/></joint>\n" TAIL,
                 "<joint name=\"j\">", 4, "<parent>");
}

Test(error, mass_without_value)
{
    expect_error(HEAD "  <link name=\"a\"><inertial>\n<mass/><inertia ixx=\"1\" ixy=\"0\" ixz=\"0\" iyy=\"1\" iyz=\"0\" izz=\"1\"/></inertial></link>\n" TAIL,
                 "<link name=\"a\"> <inertial> <mass>", 3, "'value'");
}

Test(error, inertia_missing_component)
{
    expect_error(HEAD "  <link name=\"a\"><inertial><mass value=\"1\"/>\n<inertia ixx=\"1\" ixy=\"0\" iyy=\"1\" iyz=\"0\" izz=\"1\"/></inertial></link>\n" TAIL,
                 "<link name=\"a\"> <inertial> <inertia>", 3, "'ixz'");
}

Test(error, inertial_without_inertia)
{
    expect_error(HEAD "  <link name=\"a\"><inertial><mass value=\"1\"/></inertial></link>\n" TAIL,
                 "<link name=\"a\"> <inertial>", 2, "<inertia>");
}

Test(error, non_numeric_number)
{
    expect_error(HEAD "  <link name=\"a\"><inertial><mass value=\"1.0abc\"/><inertia ixx=\"1\" ixy=\"0\" ixz=\"0\" iyy=\"1\" iyz=\"0\" izz=\"1\"/></inertial></link>\n" TAIL,
                 "<link name=\"a\"> <inertial> <mass>", 2, "'1.0abc' is not a finite number");
}

Test(error, non_finite_number)
{
    expect_error(HEAD LINK("a") LINK("b")
                 "  <joint name=\"j\" type=\"revolute\"><parent link=\"a\"/><child link=\"b\"/><limit lower=\"nan\" upper=\"1\" effort=\"1\" velocity=\"1\"/></joint>\n" TAIL,
                 "<joint name=\"j\"> <limit>", 4, "not a finite number");
}

Test(error, xyz_wrong_arity)
{
    expect_error(HEAD LINK("a") LINK("b")
                 "  <joint name=\"j\" type=\"fixed\"><parent link=\"a\"/><child link=\"b\"/><origin xyz=\"1 2\"/></joint>\n" TAIL,
                 "<joint name=\"j\"> <origin>", 4, "expected 3 numbers, found 2");
    expect_error(HEAD LINK("a") LINK("b")
                 "  <joint name=\"j\" type=\"fixed\"><parent link=\"a\"/><child link=\"b\"/><origin rpy=\"0 0 0 0\"/></joint>\n" TAIL,
                 "<joint name=\"j\"> <origin>", 4, "found 4");
}

Test(error, negative_mass)
{
    expect_error(HEAD "  <link name=\"a\"><inertial><mass value=\"-1\"/><inertia ixx=\"1\" ixy=\"0\" ixz=\"0\" iyy=\"1\" iyz=\"0\" izz=\"1\"/></inertial></link>\n" TAIL,
                 "<link name=\"a\"> <inertial> <mass>", 2, "negative");
}

Test(error, non_psd_inertia)
{
    expect_error(HEAD "  <link name=\"a\"><inertial><mass value=\"1\"/><inertia ixx=\"1\" ixy=\"2\" ixz=\"0\" iyy=\"1\" iyz=\"0\" izz=\"1\"/></inertial></link>\n" TAIL,
                 "<link name=\"a\"> <inertial> <inertia>", 2, "positive semi-definite");
    expect_error(HEAD "  <link name=\"a\"><inertial><mass value=\"1\"/><inertia ixx=\"-1\" ixy=\"0\" ixz=\"0\" iyy=\"1\" iyz=\"0\" izz=\"1\"/></inertial></link>\n" TAIL,
                 "<inertia>", 2, "positive semi-definite");
}

Test(error, unknown_joint_type)
{
    expect_error(HEAD LINK("a") LINK("b") "  <joint name=\"j\" type=\"screw\"><parent link=\"a\"/><child link=\"b\"/></joint>\n" TAIL,
                 "<joint name=\"j\">", 4, "unknown joint type 'screw'");
}

Test(error, floating_and_planar_joints_rejected)
{
    expect_error(HEAD LINK("a") LINK("b") "  <joint name=\"j\" type=\"floating\"><parent link=\"a\"/><child link=\"b\"/></joint>\n" TAIL,
                 "<joint name=\"j\">", 4, "'floating' is not supported");
    expect_error(HEAD LINK("a") LINK("b") "  <joint name=\"k\" type=\"planar\"><parent link=\"a\"/><child link=\"b\"/></joint>\n" TAIL,
                 "<joint name=\"k\">", 4, "'planar' is not supported");
}

Test(error, joint_refers_to_unknown_link)
{
    expect_error(HEAD LINK("a") LINK("b") "  <joint name=\"j\" type=\"fixed\">\n<parent link=\"nope\"/><child link=\"b\"/></joint>\n" TAIL,
                 "<joint name=\"j\"> <parent>", 5, "unknown link 'nope'");
    expect_error(HEAD LINK("a") LINK("b") "  <joint name=\"j\" type=\"fixed\"><parent link=\"a\"/>\n<child link=\"zz\"/></joint>\n" TAIL,
                 "<joint name=\"j\"> <child>", 5, "unknown link 'zz'");
}

Test(error, joint_to_itself)
{
    expect_error(HEAD LINK("a") FIXED("j", "a", "a") TAIL, "<joint name=\"j\">", 3, "itself");
}

Test(error, link_with_two_parents)
{
    expect_error(HEAD LINK("a") LINK("b") LINK("c") FIXED("j1", "a", "c") FIXED("j2", "b", "c") TAIL,
                 "<joint name=\"j2\">", 6, "already has a parent (joint 'j1')");
}

Test(error, several_roots)
{
    expect_error(HEAD LINK("a") LINK("b") LINK("c") FIXED("j", "a", "b") TAIL, "<link name=\"c\">", 4, "several root links");
}

Test(error, no_root_cycle)
{
    expect_error(HEAD LINK("a") LINK("b") REV("j1", "a", "b") REV("j2", "b", "a") TAIL, "<robot name=\"r\">", 1, "no root link");
}

Test(error, cycle_detached_from_root)
{
    expect_error(HEAD LINK("root") LINK("a") LINK("b") REV("j1", "a", "b") REV("j2", "b", "a") TAIL,
                 "<link name=\"a\">", 3, "cycle");
}

Test(error, duplicate_link_name)
{
    expect_error(HEAD LINK("a") LINK("b") LINK("a") TAIL, "<link name=\"a\">", 4, "duplicate link name (first defined on line 2)");
}

Test(error, duplicate_joint_name)
{
    expect_error(HEAD LINK("a") LINK("b") LINK("c") REV("j", "a", "b") REV("j", "a", "c") TAIL,
                 "<joint name=\"j\">", 6, "duplicate joint name");
}

Test(error, zero_axis)
{
    expect_error(HEAD LINK("a") LINK("b")
                 "  <joint name=\"j\" type=\"continuous\"><parent link=\"a\"/><child link=\"b\"/>\n<axis xyz=\"0 0 0\"/></joint>\n" TAIL,
                 "<joint name=\"j\"> <axis>", 5, "zero length");
}

Test(error, revolute_and_prismatic_require_limit)
{
    expect_error(HEAD LINK("a") LINK("b") "  <joint name=\"j\" type=\"revolute\"><parent link=\"a\"/><child link=\"b\"/></joint>\n" TAIL,
                 "<joint name=\"j\">", 4, "requires <limit>");
    expect_error(HEAD LINK("a") LINK("b") "  <joint name=\"p\" type=\"prismatic\"><parent link=\"a\"/><child link=\"b\"/></joint>\n" TAIL,
                 "<joint name=\"p\">", 4, "requires <limit>");
}

Test(error, limit_without_effort)
{
    expect_error(HEAD LINK("a") LINK("b")
                 "  <joint name=\"j\" type=\"revolute\"><parent link=\"a\"/><child link=\"b\"/><limit lower=\"0\" upper=\"1\" velocity=\"1\"/></joint>\n" TAIL,
                 "<joint name=\"j\"> <limit>", 4, "'effort'");
}

Test(error, lower_above_upper)
{
    expect_error(HEAD LINK("a") LINK("b")
                 "  <joint name=\"j\" type=\"revolute\"><parent link=\"a\"/><child link=\"b\"/>\n"
                 "<limit lower=\"1\" upper=\"-1\" effort=\"1\" velocity=\"1\"/></joint>\n" TAIL,
                 "<joint name=\"j\"> <limit>", 5, "lower limit 1 > upper limit -1");
}

Test(error, negative_damping)
{
    expect_error(HEAD LINK("a") LINK("b")
                 "  <joint name=\"j\" type=\"continuous\"><parent link=\"a\"/><child link=\"b\"/><dynamics damping=\"-1\"/></joint>\n" TAIL,
                 "<joint name=\"j\"> <dynamics>", 4, "negative");
}

Test(error, negative_radius_and_sizes)
{
    expect_error(HEAD "  <link name=\"a\"><collision>\n<geometry><sphere radius=\"-0.1\"/></geometry></collision></link>\n" TAIL,
                 "<link name=\"a\"> <collision> <geometry> <sphere>", 3, "radius -0.1 must be positive");
    expect_error(HEAD "  <link name=\"a\"><collision><geometry><box size=\"1 -2 1\"/></geometry></collision></link>\n" TAIL,
                 "<box>", 2, "box size -2 must be positive");
    expect_error(HEAD "  <link name=\"a\"><collision><geometry><cylinder radius=\"1\" length=\"-2\"/></geometry></collision></link>\n" TAIL,
                 "<cylinder>", 2, "length -2 must be positive");
    expect_error(HEAD "  <link name=\"a\"><collision><geometry><box size=\"1 1\"/></geometry></collision></link>\n" TAIL,
                 "<box>", 2, "expected 3 numbers");
}

Test(error, unsupported_geometry)
{
    expect_error(HEAD "  <link name=\"a\"><collision><geometry>\n<cone radius=\"1\"/></geometry></collision></link>\n" TAIL,
                 "<link name=\"a\"> <collision> <geometry> <cone>", 3, "unsupported geometry <cone>");
}

Test(error, empty_or_missing_geometry)
{
    expect_error(HEAD "  <link name=\"a\"><collision><geometry/></collision></link>\n" TAIL, "<geometry>", 2, "empty <geometry>");
    expect_error(HEAD "  <link name=\"a\"><collision name=\"c\"/></link>\n" TAIL, "<collision name=\"c\">", 2, "missing <geometry>");
}

Test(error, mesh_collision_without_option)
{
    expect_error(HEAD LINK("a") "  <link name=\"b\"><collision><geometry><mesh filename=\"b.stl\"/></geometry></collision></link>\n"
                 FIXED("j", "a", "b") TAIL,
                 "<link name=\"b\"> <collision> <geometry> <mesh>", 3, "mesh collisions are not supported");
}

Test(error, duplicate_geometry_name)
{
    expect_error(HEAD "  <link name=\"a\"><collision name=\"g\"><geometry><sphere radius=\"1\"/></geometry></collision>"
                 "<collision name=\"g\"><geometry><sphere radius=\"1\"/></geometry></collision></link>\n" TAIL,
                 "<collision name=\"g\">", 2, "duplicate geometry name 'g'");
}

Test(error, name_too_long)
{
    static const char *doc =
        HEAD LINK("a")
        LINK("a_link_name_that_is_far_too_long_for_the_sixty_three_characters_of_sim_name")
        REV("j", "a", "a_link_name_that_is_far_too_long_for_the_sixty_three_characters_of_sim_name")
        TAIL;
    expect_error(doc, "<link name=\"a_link_name_that_is_far", 3, "too long");
}

/* A chain of n links joined by revolute joints, each link carrying `geoms` spheres. */
static char *chain_doc(int n, int geoms)
{
    size_t cap = (size_t)n * (400 + 120 * (size_t)geoms) + 64;
    char *s = malloc(cap);
    cr_assert_not_null(s);
    size_t k = (size_t)snprintf(s, cap, "<robot name=\"r\">\n");
    for (int i = 0; i < n; i++) {
        k += (size_t)snprintf(s + k, cap - k, "<link name=\"l%d\">" INERTIAL_1, i);
        for (int g = 0; g < geoms; g++)
            k += (size_t)snprintf(s + k, cap - k, "<collision><geometry><sphere radius=\"0.1\"/></geometry></collision>");
        k += (size_t)snprintf(s + k, cap - k, "</link>\n");
        if (i > 0)
            k += (size_t)snprintf(s + k, cap - k,
                                  "<joint name=\"j%d\" type=\"continuous\"><parent link=\"l%d\"/><child link=\"l%d\"/></joint>\n",
                                  i, i - 1, i);
    }
    snprintf(s + k, cap - k, "</robot>\n");
    return s;
}

Test(error, too_many_bodies)
{
    char *ok = chain_doc(SIM_MAX_BODIES, 0);
    sim_model *m = load_ok(ok, NULL);
    cr_assert_eq(m->nbody, SIM_MAX_BODIES);
    sim_model_destroy(&m);
    free(ok);
    char *doc = chain_doc(SIM_MAX_BODIES + 1, 0);
    char elem[64], line_text[32];
    snprintf(elem, sizeof elem, "<joint name=\"j%d\">", SIM_MAX_BODIES);
    snprintf(line_text, sizeof line_text, "(max %d)", SIM_MAX_BODIES);
    /* link i is on line 2 + 2i - (i > 0), joint i right after it */
    expect_error(doc, elem, 2 + 2 * SIM_MAX_BODIES, line_text);
    free(doc);
}

Test(error, too_many_geoms)
{
    char *doc = chain_doc(3, SIM_MAX_GEOMS / 2);
    char what[32];
    snprintf(what, sizeof what, "(max %d)", SIM_MAX_GEOMS);
    expect_error(doc, "<link name=\"l2\"> <collision>", 5, what);
    free(doc);
}

Test(error, source_name_prefix)
{
    /* messages start with the source name given to sim_urdf_load_string, or "<string>" */
    char err[256];
    const char *doc = HEAD "<link/>\n" TAIL;
    cr_assert_null(sim_urdf_load_string(doc, strlen(doc), "my_robot", NULL, err, sizeof err));
    cr_assert(strncmp(err, "my_robot:2: <link>", 18) == 0, "%s", err);
    cr_assert_null(sim_urdf_load_string(doc, strlen(doc), NULL, NULL, err, sizeof err));
    cr_assert(strncmp(err, "<string>:2: <link>", 18) == 0, "%s", err);
}

/* The one inertia check shared by the URDF loader and sim_model_finalize. */
Test(inertia, valid_and_invalid_tensors)
{
    const double diag[9] = {0.1, 0, 0, 0, 0.2, 0, 0, 0, 0.25};
    const double zero[9] = {0};
    const double rod[9] = {1, 0, 0, 0, 1, 0, 0, 0, 0};              /* thin rod: PSD, singular */
    const double asym[9] = {1, 0.1, 0, 0.2, 1, 0, 0, 0, 1};          /* I_xy != I_yx */
    const double neg_diag[9] = {-0.1, 0, 0, 0, 1, 0, 0, 0, 1};
    const double neg_minor[9] = {1, 2, 0, 2, 1, 0, 0, 0, 1};         /* Ixx Iyy - Ixy^2 = -3 */
    const double neg_det[9] = {1, 0.9, 0.9, 0.9, 1, -0.9, 0.9, -0.9, 1}; /* 2x2 minors > 0, det < 0 */
    const double offdiag_only[9] = {0, 1e-3, 0, 1e-3, 0, 0, 0, 0, 0};
    const double nan_entry[9] = {NAN, 0, 0, 0, 1, 0, 0, 0, 1};
    cr_assert(sim_inertia_valid(diag, SIM_INERTIA_TOL));
    cr_assert(sim_inertia_valid(zero, SIM_INERTIA_TOL));
    cr_assert(sim_inertia_valid(rod, SIM_INERTIA_TOL));
    cr_assert_not(sim_inertia_valid(asym, SIM_INERTIA_TOL));
    cr_assert_not(sim_inertia_valid(neg_diag, SIM_INERTIA_TOL));
    cr_assert_not(sim_inertia_valid(neg_minor, SIM_INERTIA_TOL));
    cr_assert_not(sim_inertia_valid(neg_det, SIM_INERTIA_TOL));
    cr_assert_not(sim_inertia_valid(offdiag_only, SIM_INERTIA_TOL));
    cr_assert_not(sim_inertia_valid(nan_entry, SIM_INERTIA_TOL));
    /* a rod whose zero moment printed as -1e-12 passes at the loader's 1e-9, not at a tight 1e-15 */
    const double printed_rod[9] = {1, 0, 0, 0, 1, 0, 0, 0, -1e-12};
    cr_assert(sim_inertia_valid(printed_rod, 1e-9));
    cr_assert_not(sim_inertia_valid(printed_rod, 1e-15));
}

Test(inertia, loader_rejects_non_psd_inertial)
{
    const char *doc = "<robot name=\"r\"><link name=\"a\"><inertial><mass value=\"1\"/>"
                      "<inertia ixx=\"1\" ixy=\"2\" ixz=\"0\" iyy=\"1\" iyz=\"0\" izz=\"1\"/></inertial></link></robot>";
    char err[256];
    cr_assert_null(sim_urdf_load_string(doc, strlen(doc), "r", NULL, err, sizeof err));
    cr_assert(strstr(err, "not positive semi-definite") != NULL, "%s", err);
}
