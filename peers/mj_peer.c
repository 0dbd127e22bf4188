/* mj_peer.c — the herd model rebuilt in MuJoCo (see mj_peer.h): one object, linked by herd-bench and by the
 * tests that compare herd with MuJoCo (tests/test_vs_mujoco.c), and only where MuJoCo is installed (the
 * Makefile's MUJOCO). */
#include "mj_peer.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MJP_ROOT_LINK "herd_mjpeer_world"
#define MJP_ROOT_JOINT "herd_mjpeer_root"
#define MJP_FLOOR_HALF_XY 100.0   /* floor box half extents (m) */
#define MJP_FLOOR_HALF_Z 1.0
#define MJP_MAX_BOXES 8          /* terrain boxes of mj_peer_new_with_boxes (the patch buffer holds them) */

static char *mjp_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (cap - n < 4096) {
            size_t ncap = cap ? 2 * cap : 65536;
            char *nb = realloc(buf, ncap + 1);
            if (!nb) { free(buf); fclose(f); return NULL; }
            buf = nb;
            cap = ncap;
        }
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (r == 0) break;
    }
    fclose(f);
    buf[n] = 0;
    *len = n;
    return buf;
}

/* First occurrence of the start tag "<name" (followed by a space, '>' or '/') outside XML comments. */
static const char *mjp_find_tag(const char *text, const char *name)
{
    size_t n = strlen(name);
    for (const char *c = text; (c = strchr(c, '<')) != NULL; c++) {
        if (strncmp(c, "<!--", 4) == 0) {
            const char *e = strstr(c + 4, "-->");
            if (!e) return NULL;
            c = e + 2;
            continue;
        }
        if (strncmp(c + 1, name, n) == 0 && (c[1 + n] == ' ' || c[1 + n] == '>' || c[1 + n] == '/' ||
                                             c[1 + n] == '\t' || c[1 + n] == '\n' || c[1 + n] == '\r'))
            return c;
    }
    return NULL;
}

/* The URDF text with the compiler options and (for a floating herd model) the free root joint
 * inserted right after the <robot ...> start tag; with floor, the dummy world link carries the floor
 * box (top face at z = hm->terrain.height).  Returns a malloc'ed string or NULL. */
static char *mjp_patch_urdf(const char *text, const char *meshdir, const sim_model *hm, int floor, const double *boxes,
                            int nbox, char *err, size_t errlen)
{
    const char *robot = mjp_find_tag(text, "robot");
    if (!robot) { sim_fail(err, errlen, "no <robot> element"); return NULL; }
    const char *gt = strchr(robot, '>');
    if (!gt) { sim_fail(err, errlen, "unterminated <robot> tag"); return NULL; }
    if (gt > robot && gt[-1] == '/') { sim_fail(err, errlen, "empty <robot/> element"); return NULL; }
    if (mjp_find_tag(text, "mujoco")) { sim_fail(err, errlen, "URDF already has a <mujoco> element; not supported"); return NULL; }
    char ins[2 * PATH_MAX + 4 * SIM_NAME_MAX + 512];
    int k = snprintf(ins, sizeof ins,
                     "\n  <mujoco><compiler inertiafromgeom=\"false\" fusestatic=\"true\" discardvisual=\"true\""
                     " meshdir=\"%s\"/></mujoco>\n", meshdir);
    if (hm->floating && floor)
        k += snprintf(ins + k, sizeof ins - (size_t)k,
                      "  <link name=\"" MJP_ROOT_LINK "\"><collision><origin xyz=\"0 0 %.17g\" rpy=\"0 0 0\"/>"
                      "<geometry><box size=\"%.17g %.17g %.17g\"/></geometry></collision></link>\n",
                      hm->terrain.height - MJP_FLOOR_HALF_Z, 2 * MJP_FLOOR_HALF_XY, 2 * MJP_FLOOR_HALF_XY,
                      2 * MJP_FLOOR_HALF_Z);
    else if (hm->floating && nbox > 0) {
        k += snprintf(ins + k, sizeof ins - (size_t)k, "  <link name=\"" MJP_ROOT_LINK "\">");
        for (int b = 0; b < nbox && k > 0 && (size_t)k < sizeof ins; b++) {
            const double *x = boxes + 6 * b;
            k += snprintf(ins + k, sizeof ins - (size_t)k,
                          "<collision><origin xyz=\"%.17g %.17g %.17g\" rpy=\"0 0 0\"/><geometry><box size=\"%.17g %.17g "
                          "%.17g\"/></geometry></collision>", x[0], x[1], x[2], 2 * x[3], 2 * x[4], 2 * x[5]);
        }
        if (k > 0 && (size_t)k < sizeof ins) k += snprintf(ins + k, sizeof ins - (size_t)k, "</link>\n");
    } else if (hm->floating)
        k += snprintf(ins + k, sizeof ins - (size_t)k, "  <link name=\"" MJP_ROOT_LINK "\"/>\n");
    if (hm->floating)
        k += snprintf(ins + k, sizeof ins - (size_t)k,
                      "  <joint name=\"" MJP_ROOT_JOINT "\" type=\"floating\"><parent link=\"" MJP_ROOT_LINK "\"/>"
                      "<child link=\"%s\"/></joint>\n", hm->body[0].name);
    if (k <= 0 || (size_t)k >= sizeof ins) { sim_fail(err, errlen, "path too long"); return NULL; }
    size_t head = (size_t)(gt + 1 - text), tail = strlen(gt + 1);
    char *out = malloc(head + (size_t)k + tail + 1);
    if (!out) { sim_fail(err, errlen, "out of memory"); return NULL; }
    memcpy(out, text, head);
    memcpy(out + head, ins, (size_t)k);
    memcpy(out + head + (size_t)k, gt + 1, tail + 1);
    return out;
}

static mjModel *mjp_load(const char *urdf_path, const sim_model *hm, int floor, const double *boxes, int nbox, char *err,
                         size_t errlen)
{
    size_t len = 0;
    char *text = mjp_read_file(urdf_path, &len);
    if (!text) { sim_fail(err, errlen, "%s: cannot read", urdf_path); return NULL; }
    char dir[PATH_MAX];
    if (!realpath(urdf_path, dir)) { free(text); sim_fail(err, errlen, "%s: realpath failed", urdf_path); return NULL; }
    char *slash = strrchr(dir, '/');
    if (slash) slash[1] = 0;
    char *patched = mjp_patch_urdf(text, dir, hm, floor, boxes, nbox, err, errlen);
    free(text);
    if (!patched) return NULL;

    const char *tmpdir = getenv("TMPDIR");
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s/herd_mjpeer_XXXXXX.urdf", tmpdir && *tmpdir ? tmpdir : "/tmp");
    int fd = mkstemps(tmp, 5);
    if (fd < 0) { free(patched); sim_fail(err, errlen, "cannot create a temporary file in %s", tmp); return NULL; }
    size_t plen = strlen(patched), off = 0;
    while (off < plen) {
        ssize_t w = write(fd, patched + off, plen - off);
        if (w <= 0) break;
        off += (size_t)w;
    }
    close(fd);
    free(patched);
    if (off != plen) { unlink(tmp); sim_fail(err, errlen, "cannot write %s", tmp); return NULL; }

    char mjerr[1024] = "";
    mjModel *m = mj_loadXML(tmp, NULL, mjerr, (int)sizeof mjerr);
    mj_freeLastXML();                               /* the parser's copy kept for mj_saveLastXML */
    unlink(tmp);
    if (!m) sim_fail(err, errlen, "MuJoCo cannot load %s: %s", urdf_path, mjerr);
    return m;
}

static int mjp_geom_type(int herd_type)
{
    switch (herd_type) {
    case SIM_GEOM_SPHERE: return mjGEOM_SPHERE;
    case SIM_GEOM_BOX: return mjGEOM_BOX;
    case SIM_GEOM_CYLINDER: return mjGEOM_CYLINDER;
    case SIM_GEOM_CAPSULE: return mjGEOM_CAPSULE;
    default: return -1;
    }
}

/* Matches herd's bodies, joints and geometries to MuJoCo's by name / placement. */
static int mjp_map(mj_peer *p, const sim_model *hm, char *err, size_t errlen)
{
    const mjModel *m = p->m;
    if (m->nv != hm->nv || m->nq != hm->nq)
        return sim_fail(err, errlen, "MuJoCo model has nq=%d nv=%d, herd nq=%d nv=%d", m->nq, m->nv, hm->nq, hm->nv);
    /* MuJoCo's body 0 is the world; a fixed herd root may have been fused into it. */
    int expect_nbody = hm->nbody + (hm->floating ? 1 : 0);
    if (m->nbody != expect_nbody && !(!hm->floating && m->nbody == hm->nbody))
        return sim_fail(err, errlen, "MuJoCo model has %d bodies (with the world), herd %d", m->nbody, hm->nbody);
    for (int i = 0; i < hm->nbody; i++) {
        int id = mj_name2id(m, mjOBJ_BODY, hm->body[i].name);
        if (id < 0 && i == 0 && !hm->floating) id = 0;
        if (id < 0) return sim_fail(err, errlen, "herd body '%s' not found in MuJoCo's model", hm->body[i].name);
        p->body[i] = id;
        if (i > 0) {
            int par = hm->body[i].parent;
            if (m->body_parentid[id] != p->body[par])
                return sim_fail(err, errlen, "body '%s': MuJoCo parent '%s', herd parent '%s'", hm->body[i].name,
                                mj_id2name(m, mjOBJ_BODY, m->body_parentid[id]), hm->body[par].name);
        }
    }
    for (int k = 0; k <= SIM_MAX_DOF; k++) p->qadr[k] = -1;
    for (int k = 0; k < SIM_MAX_DOF; k++) p->dofadr[k] = -1;
    if (hm->floating) {
        int j = mj_name2id(m, mjOBJ_JOINT, MJP_ROOT_JOINT);
        if (j < 0 || m->jnt_type[j] != mjJNT_FREE || m->jnt_bodyid[j] != p->body[0])
            return sim_fail(err, errlen, "MuJoCo's model lacks the free root joint on '%s'", hm->body[0].name);
        for (int k = 0; k < 7; k++) p->qadr[k] = m->jnt_qposadr[j] + k;
        for (int k = 0; k < 6; k++) p->dofadr[k] = m->jnt_dofadr[j] + k;
    }
    for (int i = 1; i < hm->nbody; i++) {
        const sim_body *b = &hm->body[i];
        int j = mj_name2id(m, mjOBJ_JOINT, b->joint_name);
        if (j < 0) return sim_fail(err, errlen, "herd joint '%s' not found in MuJoCo's model", b->joint_name);
        int want = b->joint_type == SIM_JOINT_PRISMATIC ? mjJNT_SLIDE : mjJNT_HINGE;
        if (m->jnt_type[j] != want) return sim_fail(err, errlen, "joint '%s': MuJoCo type %d", b->joint_name, m->jnt_type[j]);
        if (m->jnt_bodyid[j] != p->body[i])
            return sim_fail(err, errlen, "joint '%s' moves MuJoCo body '%s', herd body '%s'", b->joint_name,
                            mj_id2name(m, mjOBJ_BODY, m->jnt_bodyid[j]), b->name);
        if (b->dof < 0 || b->dof >= hm->nv || b->qadr < 0 || b->qadr >= hm->nq)
            return sim_fail(err, errlen, "joint '%s': bad herd dof/qadr", b->joint_name);
        p->qadr[b->qadr] = m->jnt_qposadr[j];
        p->dofadr[b->dof] = m->jnt_dofadr[j];
    }
    for (int k = 0; k < hm->nq; k++)
        if (p->qadr[k] < 0) return sim_fail(err, errlen, "herd q[%d] has no MuJoCo counterpart", k);
    for (int k = 0; k < hm->nv; k++)
        if (p->dofadr[k] < 0) return sim_fail(err, errlen, "herd dof %d has no MuJoCo counterpart", k);
    /* Geometries: same body, same type, same size and placement (each MuJoCo geom used once). */
    char used[4096] = {0};
    for (int g = 0; g < hm->ngeom; g++) {
        const sim_geom *hg = &hm->geom[g];
        p->geom[g] = -1;
        int type = mjp_geom_type(hg->type), best = -1;
        double bestd = 1e-9;
        for (int k = 0; k < m->ngeom && k < (int)sizeof used; k++) {
            if (used[k] || m->geom_bodyid[k] != p->body[hg->body] || m->geom_type[k] != type) continue;
            double dd = 0;
            for (int c = 0; c < 3; c++) dd = fmax(dd, fabs(m->geom_pos[3 * k + c] - hg->pos[c]));
            int nsize = type == mjGEOM_SPHERE ? 1 : type == mjGEOM_BOX ? 3 : 2;
            for (int c = 0; c < nsize; c++) dd = fmax(dd, fabs(m->geom_size[3 * k + c] - hg->size[c]));
            if (dd <= bestd) { bestd = dd; best = k; }
        }
        if (best >= 0) { used[best] = 1; p->geom[g] = best; }
    }
    return 0;
}

/* Finds the floor box in the compiled model, makes it a plane if asked, and sets the collision filter
 * and friction (see mj_peer_new_with_floor). */
static int mjp_setup_floor(mj_peer *p, const sim_model *hm, int floor_kind, char *err, size_t errlen)
{
    mjModel *m = p->m;
    int root = mj_name2id(m, mjOBJ_BODY, MJP_ROOT_LINK);     /* -1 when fused into the world (expected) */
    int fl = -1;
    for (int k = 0; k < m->ngeom; k++) {
        int b = m->geom_bodyid[k];
        if ((b != 0 && b != root) || m->geom_type[k] != mjGEOM_BOX) continue;
        if (fabs(m->geom_size[3 * k] - MJP_FLOOR_HALF_XY) > 1e-9 || fabs(m->geom_size[3 * k + 2] - MJP_FLOOR_HALF_Z) > 1e-9)
            continue;
        if (fl >= 0) return sim_fail(err, errlen, "two floor candidates in MuJoCo's model");
        fl = k;
    }
    if (fl < 0) return sim_fail(err, errlen, "the floor box is missing from MuJoCo's model");
    if (m->geom_bodyid[fl] != 0 || m->body_weldid[m->geom_bodyid[fl]] != 0)
        return sim_fail(err, errlen, "the floor is not static in MuJoCo's model");
    double top = hm->terrain.height;
    if (fabs(m->geom_pos[3 * fl + 2] + MJP_FLOOR_HALF_Z - top) > 1e-9 || fabs(m->geom_quat[4 * fl] - 1) > 1e-12)
        return sim_fail(err, errlen, "the floor box is misplaced in MuJoCo's model (top %g)", m->geom_pos[3 * fl + 2] + MJP_FLOOR_HALF_Z);
    if (floor_kind == MJ_PEER_FLOOR_PLANE) {
        /* A world plane: normal +z through (0, 0, top).  Its size only matters for rendering (0 =
         * infinite); rbound 0 turns off the bounding-sphere filter, as the compiler does for planes. */
        m->geom_type[fl] = mjGEOM_PLANE;
        m->geom_size[3 * fl] = 0;
        m->geom_size[3 * fl + 1] = 0;
        m->geom_size[3 * fl + 2] = 1;
        m->geom_pos[3 * fl + 2] = top;
        m->geom_rbound[fl] = 0;
    }
    p->floor = fl;
    for (int k = 0; k < m->ngeom; k++) m->geom_contype[k] = m->geom_conaffinity[k] = 0;
    double mu_min = INFINITY;
    for (int g = 0; g < hm->ngeom; g++) {
        if (hm->geom[g].nocollide) continue;
        int k = p->geom[g];
        if (k < 0) return sim_fail(err, errlen, "herd geometry '%s' collides but has no MuJoCo counterpart", hm->geom[g].name);
        m->geom_contype[k] = 1;
        m->geom_conaffinity[k] = 2;
        m->geom_friction[3 * k] = hm->geom[g].friction;
        mu_min = fmin(mu_min, hm->geom[g].friction);
    }
    if (!(mu_min < INFINITY)) return sim_fail(err, errlen, "no herd geometry collides");
    m->geom_contype[fl] = 2;
    m->geom_conaffinity[fl] = 1;
    m->geom_friction[3 * fl] = mu_min;
    return 0;
}

/* The collision filter and friction of a ground of nbox world boxes (mj_peer_new_with_boxes): as mjp_setup_floor's,
 * every world box a floor. */
static int mjp_setup_boxes(mj_peer *p, const sim_model *hm, int nbox, char *err, size_t errlen)
{
    mjModel *m = p->m;
    int root = mj_name2id(m, mjOBJ_BODY, MJP_ROOT_LINK);
    for (int k = 0; k < m->ngeom; k++) m->geom_contype[k] = m->geom_conaffinity[k] = 0;
    double mu_min = INFINITY;
    for (int g = 0; g < hm->ngeom; g++) {
        if (hm->geom[g].nocollide) continue;
        int k = p->geom[g];
        if (k < 0) return sim_fail(err, errlen, "herd geometry '%s' collides but has no MuJoCo counterpart", hm->geom[g].name);
        m->geom_contype[k] = 1;
        m->geom_conaffinity[k] = 2;
        m->geom_friction[3 * k] = hm->geom[g].friction;
        mu_min = fmin(mu_min, hm->geom[g].friction);
    }
    if (!(mu_min < INFINITY)) return sim_fail(err, errlen, "no herd geometry collides");
    int found = 0;
    for (int k = 0; k < m->ngeom; k++) {
        int b = m->geom_bodyid[k];
        if ((b != 0 && b != root) || m->geom_type[k] != mjGEOM_BOX) continue;
        if (b != 0) return sim_fail(err, errlen, "a terrain box is not static in MuJoCo's model");
        m->geom_contype[k] = 2;
        m->geom_conaffinity[k] = 1;
        m->geom_friction[3 * k] = mu_min;
        if (p->floor < 0) p->floor = k;
        found++;
    }
    if (found != nbox) return sim_fail(err, errlen, "%d terrain boxes in MuJoCo's model, %d given", found, nbox);
    return 0;
}

/* floor: 0 none (mj_peer_new), 1 + mj_peer_floor_kind otherwise (contacts set up by mjp_setup_floor); nbox > 0:
 * a ground of boxes (mj_peer_new_with_boxes). */
static mj_peer *mjp_new(const char *urdf_path, const sim_model *hm, int floor, const double *boxes, int nbox, char *err,
                        size_t errlen)
{
    if (!hm || hm->nv > SIM_MAX_DOF) { sim_fail(err, errlen, "no herd model"); return NULL; }
    mj_peer *p = calloc(1, sizeof *p);
    if (!p) { sim_fail(err, errlen, "out of memory"); return NULL; }
    p->floor = -1;
    p->m = mjp_load(urdf_path, hm, floor, boxes, nbox, err, errlen);
    if (!p->m) { free(p); return NULL; }
    mjModel *m = p->m;
    if (mjp_map(p, hm, err, errlen) != 0) { mj_peer_destroy(&p); return NULL; }
    p->nq = m->nq;
    p->nv = m->nv;
    /* The bare rigid-body system: no passive forces, no armature, no constraints. */
    for (int k = 0; k < m->nv; k++) {
        m->dof_damping[k] = 0;
        m->dof_armature[k] = 0;
        m->dof_frictionloss[k] = 0;
    }
    for (int j = 0; j < m->njnt; j++) m->jnt_stiffness[j] = 0;
    for (int c = 0; c < 3; c++) m->opt.gravity[c] = hm->gravity[c];
    m->opt.disableflags |= (floor || nbox ? 0 : mjDSBL_CONTACT) | mjDSBL_LIMIT | mjDSBL_FRICTIONLOSS | mjDSBL_EQUALITY;
    if (floor && mjp_setup_floor(p, hm, floor - 1, err, errlen) != 0) { mj_peer_destroy(&p); return NULL; }
    if (nbox && mjp_setup_boxes(p, hm, nbox, err, errlen) != 0) { mj_peer_destroy(&p); return NULL; }
    p->d = mj_makeData(m);
    if (!p->d) { sim_fail(err, errlen, "mj_makeData failed"); mj_peer_destroy(&p); return NULL; }
    return p;
}

mj_peer *mj_peer_new(const char *urdf_path, const sim_model *hm, char *err, size_t errlen)
{
    return mjp_new(urdf_path, hm, 0, NULL, 0, err, errlen);
}

mj_peer *mj_peer_new_with_floor(const char *urdf_path, const sim_model *hm, int floor_kind, char *err, size_t errlen)
{
    if (!hm) { sim_fail(err, errlen, "no herd model"); return NULL; }
    if (!hm->floating) { sim_fail(err, errlen, "a floor needs a floating herd model"); return NULL; }
    if (hm->terrain.type != SIM_TERRAIN_PLANE) { sim_fail(err, errlen, "a floor needs herd's plane terrain"); return NULL; }
    if (floor_kind != MJ_PEER_FLOOR_PLANE && floor_kind != MJ_PEER_FLOOR_BOX) {
        sim_fail(err, errlen, "unknown floor kind %d", floor_kind);
        return NULL;
    }
    return mjp_new(urdf_path, hm, 1 + floor_kind, NULL, 0, err, errlen);
}

void mj_peer_destroy(mj_peer **pp)
{
    if (!pp || !*pp) return;
    mj_peer *p = *pp;
    if (p->d) mj_deleteData(p->d);
    if (p->m) mj_deleteModel(p->m);
    free(p);
    *pp = NULL;
}

/* Eigen-decomposition of a symmetric 3x3 matrix by cyclic Jacobi rotations, run to convergence in
 * double precision: A = V diag(w) V^T, V a proper rotation (columns = eigenvectors). */
static void mjp_eig3(const double A[9], double w[3], double V[9])
{
    double a[3][3];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            a[i][j] = 0.5 * (A[3 * i + j] + A[3 * j + i]);
            V[3 * i + j] = i == j;
        }
    for (int sweep = 0; sweep < 64; sweep++) {
        double off = fabs(a[0][1]) + fabs(a[0][2]) + fabs(a[1][2]);
        double scale = fabs(a[0][0]) + fabs(a[1][1]) + fabs(a[2][2]);
        if (off == 0 || off < 1e-18 * scale) break;
        for (int pi = 0; pi < 2; pi++)
            for (int qi = pi + 1; qi < 3; qi++) {
                double apq = a[pi][qi];
                if (apq == 0) continue;
                double theta = (a[qi][qi] - a[pi][pi]) / (2 * apq);
                double t = (theta >= 0 ? 1 : -1) / (fabs(theta) + sqrt(theta * theta + 1));
                double c = 1 / sqrt(t * t + 1), s = t * c;
                for (int k = 0; k < 3; k++) {         /* A <- A G (columns p, q) */
                    double akp = a[k][pi], akq = a[k][qi];
                    a[k][pi] = c * akp - s * akq;
                    a[k][qi] = s * akp + c * akq;
                }
                for (int k = 0; k < 3; k++) {         /* A <- G^T A (rows p, q) */
                    double apk = a[pi][k], aqk = a[qi][k];
                    a[pi][k] = c * apk - s * aqk;
                    a[qi][k] = s * apk + c * aqk;
                }
                for (int k = 0; k < 3; k++) {         /* V <- V G */
                    double vkp = V[3 * k + pi], vkq = V[3 * k + qi];
                    V[3 * k + pi] = c * vkp - s * vkq;
                    V[3 * k + qi] = s * vkp + c * vkq;
                }
            }
    }
    for (int k = 0; k < 3; k++) w[k] = a[k][k];
    double det = V[0] * (V[4] * V[8] - V[5] * V[7]) - V[1] * (V[3] * V[8] - V[5] * V[6]) +
                 V[2] * (V[3] * V[7] - V[4] * V[6]);
    if (det < 0)
        for (int k = 0; k < 3; k++) V[3 * k + 2] = -V[3 * k + 2];
}

double mj_peer_adopt_inertia(mj_peer *p, const sim_model *hm)
{
    mjModel *m = p->m;
    double worst = 0;
    for (int i = 0; i < hm->nbody; i++) {
        const sim_body *b = &hm->body[i];
        int id = p->body[i];
        if (id == 0) continue;                      /* a fixed root fused into the world */
        double w[3], V[9], quat[4], R[9];
        mjp_eig3(b->inertia, w, V);
        mju_mat2Quat(quat, V);
        mju_normalize4(quat);
        m->body_mass[id] = b->mass;
        for (int k = 0; k < 3; k++) {
            m->body_ipos[3 * id + k] = b->com[k];
            m->body_inertia[3 * id + k] = w[k];
        }
        for (int k = 0; k < 4; k++) m->body_iquat[4 * id + k] = quat[k];
        mju_quat2Mat(R, quat);
        for (int r = 0; r < 3; r++)
            for (int c = 0; c < 3; c++) {
                double s = 0;
                for (int k = 0; k < 3; k++) s += R[3 * r + k] * w[k] * R[3 * c + k];
                worst = fmax(worst, fabs(s - b->inertia[3 * r + c]));
            }
    }
    mj_setConst(m, p->d);                           /* subtree masses, invweights */
    return worst;
}

void mj_peer_copy_damping(mj_peer *p, const sim_model *hm)
{
    for (int i = 1; i < hm->nbody; i++)
        if (hm->body[i].dof >= 0) p->m->dof_damping[p->dofadr[hm->body[i].dof]] = hm->body[i].damping;
}

void mj_peer_copy_joint_dynamics(mj_peer *p, const sim_model *hm, double h)
{
    mjModel *m = p->m;
    const double ref[mjNREF] = {2 * h, 1}, imp[mjNIMP] = {mjMAXIMP, mjMAXIMP, 0.001, 0.5, 2};
    int friction = 0, limits = 0;
    for (int i = 1; i < hm->nbody; i++) {
        const sim_body *b = &hm->body[i];
        const int k = p->dofadr[b->dof], j = m->dof_jntid[k];
        m->dof_damping[k] = b->damping;
        m->dof_armature[k] = b->armature;
        m->dof_frictionloss[k] = b->friction;
        friction |= b->friction > 0;
        m->jnt_limited[j] = (mjtByte)sim_model_joint_limited(hm, i);
        limits |= m->jnt_limited[j];
        if (m->jnt_limited[j]) m->jnt_range[2 * j] = b->lower, m->jnt_range[2 * j + 1] = b->upper;
        m->jnt_margin[j] = 0;
        for (int r = 0; r < mjNREF; r++) m->jnt_solref[mjNREF * j + r] = m->dof_solref[mjNREF * k + r] = ref[r];
        for (int r = 0; r < mjNIMP; r++) m->jnt_solimp[mjNIMP * j + r] = m->dof_solimp[mjNIMP * k + r] = imp[r];
    }
    m->opt.timestep = h;
    if (friction) m->opt.disableflags &= ~mjDSBL_FRICTIONLOSS;
    if (limits) m->opt.disableflags &= ~mjDSBL_LIMIT;
    mj_setConst(m, p->d); /* the armature changes the constant inertia terms (dof_invweight0) */
}

void mj_peer_set_state(const mj_peer *p, const double *q, const double *u)
{
    for (int k = 0; k < p->nq; k++) p->d->qpos[p->qadr[k]] = q[k];
    for (int k = 0; k < p->nv; k++) p->d->qvel[p->dofadr[k]] = u[k];
}

void mj_peer_set_force(const mj_peer *p, const double *tau)
{
    for (int k = 0; k < p->nv; k++) p->d->qfrc_applied[p->dofadr[k]] = tau[k];
}

void mj_peer_vec_to_herd(const mj_peer *p, const double *mjv, double *out)
{
    for (int k = 0; k < p->nv; k++) out[k] = mjv[p->dofadr[k]];
}

void mj_peer_jac_to_herd(const mj_peer *p, const double *mjj, double *out)
{
    int nv = p->nv;
    for (int r = 0; r < 3; r++)
        for (int k = 0; k < nv; k++) out[r * nv + k] = mjj[r * nv + p->dofadr[k]];
}

void mj_peer_full_mass(const mj_peer *p, double *out, double *scratch)
{
    int nv = p->nv;
    mj_fullM(p->m, scratch, p->d->qM);
    for (int i = 0; i < nv; i++)
        for (int j = 0; j < nv; j++) out[i * nv + j] = scratch[p->dofadr[i] * nv + p->dofadr[j]];
}

mj_peer *mj_peer_new_with_boxes(const char *urdf_path, const sim_model *hm, const double *boxes, int nbox, char *err,
                                size_t errlen)
{
    if (!hm) { sim_fail(err, errlen, "no herd model"); return NULL; }
    if (!hm->floating) { sim_fail(err, errlen, "a ground needs a floating herd model"); return NULL; }
    if (!boxes || nbox < 1 || nbox > MJP_MAX_BOXES) { sim_fail(err, errlen, "1 .. %d boxes, not %d", MJP_MAX_BOXES, nbox); return NULL; }
    for (int i = 0; i < 6 * nbox; i++)
        if (!isfinite(boxes[i]) || (i % 6 >= 3 && !(boxes[i] > 0))) { sim_fail(err, errlen, "box %d is not finite and positive", i / 6); return NULL; }
    return mjp_new(urdf_path, hm, 0, boxes, nbox, err, errlen);
}
