/* sim_model.c — model allocation, validation/finalization, and per-world data allocation. */
#include "sim_model.h"

#include "sim_collision.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(char *err, size_t n, const char *fmt, ...)
{
    if (err && n) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, n, fmt, ap);
        va_end(ap);
    }
    return -1;
}

sim_model *sim_model_new(void)
{
    sim_model *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->gravity[2] = -9.81;
    m->terrain.type = SIM_TERRAIN_PLANE;
    m->opt.solver = SIM_SOLVER_BISECTION;
    sim_solver_default_params(&m->opt.sp);
    m->opt.margin = 1e-3;
    m->opt.gap_target = 1;
    m->opt.erp = 0;
    m->opt.warmstart = 1;
    m->opt.max_contacts = 32;
    return m;
}

void sim_model_destroy(sim_model **m)
{
    if (m && *m) {
        free(*m);
        *m = NULL;
    }
}

/* Is the symmetric 3x3 matrix positive semi-definite (Sylvester on a shifted matrix)? */
static int inertia_ok(const double I[9])
{
    const double tol = 1e-12;
    if (!(I[0] >= -tol && I[4] >= -tol && I[8] >= -tol)) return 0;
    if (fabs(I[1] - I[3]) > 1e-9 || fabs(I[2] - I[6]) > 1e-9 || fabs(I[5] - I[7]) > 1e-9) return 0;
    /* triangle inequality of principal moments is implied by PSD of a physical body; check minors */
    double m2 = I[0] * I[4] - I[1] * I[3];
    double det = I[0] * (I[4] * I[8] - I[5] * I[7]) - I[1] * (I[3] * I[8] - I[5] * I[6]) +
                 I[2] * (I[3] * I[7] - I[4] * I[6]);
    double scale = I[0] + I[4] + I[8] + 1e-300;
    return m2 >= -tol * scale * scale && det >= -tol * scale * scale * scale;
}

int sim_model_finalize(sim_model *m, char *err, size_t errlen)
{
    if (m->nbody < 1) return fail(err, errlen, "model has no bodies");
    if (m->nbody > SIM_MAX_BODIES) return fail(err, errlen, "model has %d bodies (max %d)", m->nbody, SIM_MAX_BODIES);
    if (m->ngeom < 0 || m->ngeom > SIM_MAX_GEOMS) return fail(err, errlen, "model has %d geometries (max %d)", m->ngeom, SIM_MAX_GEOMS);
    sim_body *root = &m->body[0];
    if (root->parent != -1) return fail(err, errlen, "body 0 '%s' must be the root (parent -1)", root->name);
    if (root->joint_type != SIM_JOINT_FREE && root->joint_type != SIM_JOINT_ROOT_FIXED)
        return fail(err, errlen, "root body '%s' must have a free or fixed root joint", root->name);
    m->floating = root->joint_type == SIM_JOINT_FREE;
    int nv = 0, nq = 0;
    if (m->floating) {
        root->dof = 0; root->qadr = 0;
        for (int k = 0; k < 6; k++) { m->dof_body[k] = 0; m->dof_parent[k] = k - 1; }
        nv = 6; nq = 7;
    } else {
        root->dof = -1; root->qadr = -1;
    }
    m->total_mass = 0;
    for (int i = 0; i < m->nbody; i++) {
        sim_body *b = &m->body[i];
        if (!(b->mass >= 0) || !isfinite(b->mass)) return fail(err, errlen, "body '%s': mass %g is not >= 0", b->name, b->mass);
        if (!inertia_ok(b->inertia)) return fail(err, errlen, "body '%s': inertia is not symmetric positive semi-definite", b->name);
        m->total_mass += b->mass;
        if (i == 0) continue;
        if (b->parent < 0 || b->parent >= i)
            return fail(err, errlen, "body '%s': parent %d must precede it", b->name, b->parent);
        if (b->joint_type != SIM_JOINT_REVOLUTE && b->joint_type != SIM_JOINT_CONTINUOUS &&
            b->joint_type != SIM_JOINT_PRISMATIC)
            return fail(err, errlen, "body '%s': joint type %d is not a 1-dof joint", b->name, b->joint_type);
        double n = sqrt(b->axis[0] * b->axis[0] + b->axis[1] * b->axis[1] + b->axis[2] * b->axis[2]);
        if (!(n > 1e-12) || !isfinite(n)) return fail(err, errlen, "joint '%s': axis has zero length", b->joint_name);
        for (int k = 0; k < 3; k++) b->axis[k] /= n;
        b->dof = nv;
        b->qadr = nq;
        m->dof_body[nv] = i;
        const sim_body *p = &m->body[b->parent];
        m->dof_parent[nv] = (b->parent == 0) ? (m->floating ? 5 : -1) : p->dof;
        nv++;
        nq++;
    }
    for (int g = 0; g < m->ngeom; g++) {
        const sim_geom *gg = &m->geom[g];
        if (gg->body < 0 || gg->body >= m->nbody) return fail(err, errlen, "geometry '%s': body %d out of range", gg->name, gg->body);
        if (gg->type < SIM_GEOM_SPHERE || gg->type > SIM_GEOM_CAPSULE) return fail(err, errlen, "geometry '%s': bad type", gg->name);
    }
    m->nv = nv;
    m->nq = nq;
    m->nM = 0;
    for (int k = 0; k < nv; k++) {
        int n = 0;
        for (int i = m->dof_parent[k]; i >= 0; i = m->dof_parent[i]) m->dof_anc[k][n++] = i;
        m->dof_nanc[k] = n;
        m->dof_adr[k] = m->nM;
        m->nM += 1 + n;
    }
    for (int i = 0; i < m->nbody; i++) {
        sim_body *b = &m->body[i];
        const double *R = b->rot;
        b->rot_identity = R[0] == 1 && R[4] == 1 && R[8] == 1 && R[1] == 0 && R[2] == 0 && R[3] == 0 &&
                          R[5] == 0 && R[6] == 0 && R[7] == 0;
        b->axis_kind = 3;
        for (int k = 0; k < 3; k++)
            if (b->axis[k] == 1 && b->axis[(k + 1) % 3] == 0 && b->axis[(k + 2) % 3] == 0) b->axis_kind = k;
    }
    return 0;
}

int sim_model_body(const sim_model *m, const char *name)
{
    for (int i = 0; i < m->nbody; i++)
        if (strcmp(m->body[i].name, name) == 0) return i;
    return -1;
}

int sim_model_geom(const sim_model *m, const char *name)
{
    for (int i = 0; i < m->ngeom; i++)
        if (strcmp(m->geom[i].name, name) == 0) return i;
    return -1;
}

int sim_model_joint(const sim_model *m, const char *joint_name)
{
    for (int i = 1; i < m->nbody; i++)
        if (strcmp(m->body[i].joint_name, joint_name) == 0) return i;
    return -1;
}

/* ---- data: one allocation, 64-byte aligned blocks ---- */

#define ALIGN_DOUBLES 8
static size_t blk(size_t ndouble) { return (ndouble + ALIGN_DOUBLES - 1) / ALIGN_DOUBLES * ALIGN_DOUBLES; }

sim_data *sim_data_new(const sim_model *m)
{
    size_t nv = (size_t)m->nv, nq = (size_t)m->nq, nb = (size_t)m->nbody;
    size_t nc = (size_t)sim_collision_max_contacts(m);
    if (m->opt.max_contacts > 0 && nc > (size_t)m->opt.max_contacts) nc = (size_t)m->opt.max_contacts;
    if (nc > SIM_SOLVER_MAX_CONTACTS) nc = SIM_SOLVER_MAX_CONTACTS;
    /* double blocks, in the order of the pointer table below */
    size_t sizes[] = {nq, nv, nv, 3 * nb, 9 * nb, 3 * nb, 10 * nb, 6 * nv, 6 * nb, 6 * nv,
                      nv * nv, (size_t)m->nM, (size_t)m->nM, nv, nv, 10 * nb, 6 * nb, 6 * nb, 12 * nv,
                      3 * nc, 3 * nc * nv, 3 * nc * nv, 9 * nc * nc, 3 * nc, nc, nv, 3 * nc};
    size_t nd = sizeof sizes / sizeof sizes[0];
    size_t total = 0;
    for (size_t i = 0; i < nd; i++) total += blk(sizes[i]);
    size_t head = (sizeof(sim_data) + 63) / 64 * 64;
    size_t con_bytes = (nc * sizeof(sim_contact) + 63) / 64 * 64;
    size_t int_bytes = ((nc * nv + nc + 2 * nc) * sizeof(int) + 63) / 64 * 64;
    size_t nbytes = head + total * sizeof(double) + con_bytes + int_bytes;
    unsigned char *mem = aligned_alloc(64, (nbytes + 63) / 64 * 64);
    if (!mem) return NULL;
    memset(mem, 0, nbytes);
    sim_data *d = (sim_data *)mem;
    double **fields[] = {&d->q, &d->u, &d->tau, &d->xpos, &d->xrot, &d->xcom, &d->cinert, &d->cdof,
                         &d->cvel, &d->cdof_dot, &d->M, &d->Mp, &d->LD, &d->h, &d->udot, &d->crb, &d->cacc,
                         &d->cfrc, &d->scratch, &d->lambda, &d->Jc, &d->Bc, &d->G, &d->cfree, &d->mu, &d->ufree,
                         &d->prev_lambda};
    double *p = (double *)(mem + head);
    for (size_t i = 0; i < nd; i++) {
        *fields[i] = p;
        p += blk(sizes[i]);
    }
    d->con = (sim_contact *)p;
    int *ip = (int *)((unsigned char *)p + con_bytes);
    d->con_path = ip; ip += nc * nv;
    d->con_npath = ip; ip += nc;
    d->prev_key = ip;
    d->ncon_max = (int)nc;
    d->nbytes = nbytes;
    sim_data_reset(m, d);
    return d;
}

void sim_data_destroy(sim_data **d)
{
    if (d && *d) {
        free(*d);
        *d = NULL;
    }
}

void sim_data_reset(const sim_model *m, sim_data *d)
{
    memset(d->q, 0, sizeof(double) * (size_t)m->nq);
    memset(d->u, 0, sizeof(double) * (size_t)m->nv);
    memset(d->tau, 0, sizeof(double) * (size_t)m->nv);
    if (m->floating) d->q[3] = 1.0;
    d->time = 0;
    d->ncon = 0;
    d->nprev = 0;
    d->friction_scale = 1.0;
    d->root_added_mass = 0.0;
    memset(&d->stats, 0, sizeof d->stats);
}
