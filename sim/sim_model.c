/* sim_model.c — model allocation, validation/finalization, and per-world data allocation. */
#include "sim_model.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sim_fail(char *err, size_t n, const char *fmt, ...)
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
    m->opt.solver = SIM_SOLVER_PAPER_BISECTION;
    sim_solver_default_params(&m->opt.sp);
    m->opt.margin = 1e-3;
    m->opt.gap_target = 1;
    m->opt.erp = 0;
    m->opt.warmstart = 1;
    m->opt.max_contacts = 32;
    m->opt.joint_limits = 1;
    return m;
}

sim_terrain sim_terrain_plane(double height)
{
    return (sim_terrain){.type = SIM_TERRAIN_PLANE, .height = height};
}

int sim_terrain_cells(sim_terrain *out, int nx, int ny, double x0, double y0, double dx, double dy,
                      const float *heights, const unsigned char *smooth, char *err, size_t errlen)
{
    if (!out) return sim_fail(err, errlen, "terrain: no output");
    if (nx < 1 || ny < 1 || (long long)nx * ny > SIM_TERRAIN_CELLS_MAX)
        return sim_fail(err, errlen, "terrain: %d x %d cells (1 .. %d cells)", nx, ny, SIM_TERRAIN_CELLS_MAX);
    if (!(dx > 0 && dx < INFINITY && dy > 0 && dy < INFINITY))
        return sim_fail(err, errlen, "terrain: cell size %g x %g is not positive and finite", dx, dy);
    if (!isfinite(x0) || !isfinite(y0)) return sim_fail(err, errlen, "terrain: corner (%g, %g) not finite", x0, y0);
    if (!heights) return sim_fail(err, errlen, "terrain: no heights");
    for (long long k = 0; k < (long long)nx * ny; k++)
        if (!isfinite(heights[k])) return sim_fail(err, errlen, "terrain: height %lld is not finite", k);
    *out = (sim_terrain){.type = SIM_TERRAIN_CELLS, .nx = nx, .ny = ny, .x0 = x0, .y0 = y0, .dx = dx, .dy = dy,
                         .heights = heights, .smooth = smooth, .smooth_nz_min = 1};
    /* The bilinear surface over a smooth cell's square (centred on its sample) interpolates the patches between
       the samples ix-1 .. ix+1, iy-1 .. iy+1; its gradient along x is a convex combination of those patches'
       differences along x, and likewise along y.  The largest of each over every smooth cell bounds its slope. */
    if (smooth && nx >= 2 && ny >= 2) {
        double gx = 0, gy = 0;
        for (int iy = 0; iy < ny; iy++)
            for (int ix = 0; ix < nx; ix++) {
                if (!smooth[(size_t)iy * nx + ix]) continue;
                const int xa = ix > 0 ? ix - 1 : 0, xb = ix < nx - 1 ? ix + 1 : nx - 1;
                const int ya = iy > 0 ? iy - 1 : 0, yb = iy < ny - 1 ? iy + 1 : ny - 1;
                for (int y = ya; y <= yb; y++)
                    for (int x = xa; x <= xb; x++) {
                        const double h = heights[(size_t)y * nx + x];
                        if (x < xb) gx = fmax(gx, fabs(heights[(size_t)y * nx + x + 1] - h));
                        if (y < yb) gy = fmax(gy, fabs(heights[(size_t)(y + 1) * nx + x] - h));
                    }
            }
        gx /= dx, gy /= dy;
        out->smooth_nz_min = (1 - 1e-12) / sqrt(1 + gx * gx + gy * gy);
    }
    return 0;
}

void sim_model_destroy(sim_model **m)
{
    if (m && *m) {
        free(*m);
        *m = NULL;
    }
}

int sim_inertia_valid(const double I[9], double rel_tol)
{
    const double s = fabs(I[0]) + fabs(I[4]) + fabs(I[8]);
    const double t1 = rel_tol * s, t2 = t1 * s, t3 = t2 * s;
    if (!isfinite(s)) return 0;
    if (fabs(I[1] - I[3]) > t1 || fabs(I[2] - I[6]) > t1 || fabs(I[5] - I[7]) > t1) return 0;
    if (s == 0) return I[1] == 0 && I[2] == 0 && I[5] == 0;
    if (I[0] < -t1 || I[4] < -t1 || I[8] < -t1) return 0;
    if (I[0] * I[4] - I[1] * I[1] < -t2) return 0;
    if (I[0] * I[8] - I[2] * I[2] < -t2) return 0;
    if (I[4] * I[8] - I[5] * I[5] < -t2) return 0;
    const double det = I[0] * (I[4] * I[8] - I[5] * I[5]) - I[1] * (I[1] * I[8] - I[5] * I[2]) +
                       I[2] * (I[1] * I[5] - I[4] * I[2]);
    return det >= -t3;
}

int sim_model_finalize(sim_model *m, char *err, size_t errlen)
{
    if (m->nbody < 1) return sim_fail(err, errlen, "model has no bodies");
    if (m->nbody > SIM_MAX_BODIES) return sim_fail(err, errlen, "model has %d bodies (max %d)", m->nbody, SIM_MAX_BODIES);
    if (m->ngeom < 0 || m->ngeom > SIM_MAX_GEOMS) return sim_fail(err, errlen, "model has %d geometries (max %d)", m->ngeom, SIM_MAX_GEOMS);
    sim_body *root = &m->body[0];
    if (root->parent != -1) return sim_fail(err, errlen, "body 0 '%s' must be the root (parent -1)", root->name);
    if (root->joint_type != SIM_JOINT_FREE && root->joint_type != SIM_JOINT_ROOT_FIXED)
        return sim_fail(err, errlen, "root body '%s' must have a free or fixed root joint", root->name);
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
        if (!(b->mass >= 0) || !isfinite(b->mass)) return sim_fail(err, errlen, "body '%s': mass %g is not >= 0", b->name, b->mass);
        if (!sim_inertia_valid(b->inertia, SIM_INERTIA_TOL)) return sim_fail(err, errlen, "body '%s': inertia is not symmetric positive semi-definite", b->name);
        m->total_mass += b->mass;
        if (i == 0) continue;
        if (b->parent < 0 || b->parent >= i)
            return sim_fail(err, errlen, "body '%s': parent %d must precede it", b->name, b->parent);
        if (b->joint_type != SIM_JOINT_REVOLUTE && b->joint_type != SIM_JOINT_CONTINUOUS &&
            b->joint_type != SIM_JOINT_PRISMATIC)
            return sim_fail(err, errlen, "body '%s': joint type %d is not a 1-dof joint", b->name, b->joint_type);
        double n = sqrt(b->axis[0] * b->axis[0] + b->axis[1] * b->axis[1] + b->axis[2] * b->axis[2]);
        if (!(n > 1e-12) || !isfinite(n)) return sim_fail(err, errlen, "joint '%s': axis has zero length", b->joint_name);
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
        if (gg->body < 0 || gg->body >= m->nbody) return sim_fail(err, errlen, "geometry '%s': body %d out of range", gg->name, gg->body);
        if (gg->type < SIM_GEOM_SPHERE || gg->type > SIM_GEOM_CAPSULE) return sim_fail(err, errlen, "geometry '%s': bad type", gg->name);
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
        m->dof_lower[k] = -INFINITY;
        m->dof_upper[k] = INFINITY;
    }
    for (int i = 0; i < m->nbody; i++) {
        sim_body *b = &m->body[i];
        const double *R = b->rot;
        b->rot_identity = R[0] == 1 && R[4] == 1 && R[8] == 1 && R[1] == 0 && R[2] == 0 && R[3] == 0 &&
                          R[5] == 0 && R[6] == 0 && R[7] == 0;
        if (i > 0) m->dof_lower[b->dof] = b->lower, m->dof_upper[b->dof] = b->upper;
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


/* The contact points sim_collide (sim_collision.c) generates at most per colliding geometry: a sphere 1, a
 * capsule 2 (its end caps), a box 8 (its corners), a cylinder 8 (up to four rim points per end cap); on a cell
 * terrain SIM_CELLS_CONTACTS_PER_GEOM each. */
#define SIM_CELLS_CONTACTS_PER_GEOM 16
int sim_model_max_contacts(const sim_model *m)
{
    int n = 0;
    if (m->terrain.type == SIM_TERRAIN_CELLS && m->terrain.heights) {
        /* a cell terrain: a geometry may touch several cells' tops, walls and edges; the per-world capacity
           (opt.max_contacts) bounds the total */
        for (int g = 0; g < m->ngeom; g++)
            if (!m->geom[g].nocollide) n += SIM_CELLS_CONTACTS_PER_GEOM;
        return n;
    }
    for (int g = 0; g < m->ngeom; g++) {
        if (m->geom[g].nocollide) continue;
        switch (m->geom[g].type) {
        case SIM_GEOM_SPHERE: n += 1; break;
        case SIM_GEOM_CAPSULE: n += 2; break;
        case SIM_GEOM_BOX: n += 8; break;
        case SIM_GEOM_CYLINDER: n += 8; break;
        default: break;
        }
    }
    return n;
}

/* The per-world allocation is split in two parts.  The state persists from step to step (q, u, tau,
 * the warm-start cache); the scratch holds everything a step recomputes from the state (kinematics,
 * mass matrix and factor, contacts, Jacobians, Delassus).  sim_data_new gives a world its own scratch;
 * sim_data_new_shared leaves it to the caller, who binds one scratch to many worlds in turn
 * (sim_data_bind_scratch) so that a batch of thousands of worlds keeps only their states in memory. */
int sim_model_joint_blocks(const sim_model *m)
{
    int n = 0;
    for (int b = 1; b < m->nbody; b++) n += sim_model_joint_limited(m, b) + (m->body[b].friction > 0);
    return n;
}

/* The joint blocks always fit (at most 2 per joint: SIM_MAX_BODIES < SIM_SOLVER_MAX_CONTACTS / 2); the geometry
 * contacts get the rest of the solver's capacity. */
_Static_assert(2 * SIM_MAX_BODIES <= SIM_SOLVER_MAX_CONTACTS, "every joint block must fit the solver");
static size_t max_contacts(const sim_model *m)
{
    size_t nc = (size_t)sim_model_max_contacts(m);
    const size_t room = SIM_SOLVER_MAX_CONTACTS - (size_t)sim_model_joint_blocks(m);
    if (m->opt.max_contacts > 0 && nc > (size_t)m->opt.max_contacts) nc = (size_t)m->opt.max_contacts;
    if (nc > room) nc = room;
    return nc;
}
static size_t max_blocks(const sim_model *m) { return max_contacts(m) + (size_t)sim_model_joint_blocks(m); }

/* Lays out the state part at mem (or only sizes it when d is NULL); returns its size in bytes. */
static size_t layout_state(const sim_model *m, sim_data *d, unsigned char *mem)
{
    size_t nv = (size_t)m->nv, nq = (size_t)m->nq, nc = max_contacts(m);
    size_t off = 0;
#define PLACE(field, type, count)                                                 \
    do {                                                                          \
        if (d) d->field = (type *)(mem + off);                                    \
        off += ((count) * sizeof(type) + 63) / 64 * 64;                           \
    } while (0)
    PLACE(q, double, nq);
    PLACE(u, double, nv);
    PLACE(tau, double, nv);
    PLACE(prev_lambda, double, 3 * nc);
    PLACE(prev_key, int, 2 * nc);
    PLACE(prev_jlambda, double, 3 * nv);
    PLACE(jdof, int, (size_t)sim_model_joint_blocks(m));
    return off;
}

/* A world's capacities (d->ncon_max, d->nblk_max) once it has them, else the model's. */
static size_t layout_scratch(const sim_model *m, sim_data *d, unsigned char *mem)
{
    const int have = d && d->nblk_max > 0;
    size_t nv = (size_t)m->nv, nb = (size_t)m->nbody, nM = (size_t)m->nM;
    size_t ncon = have ? (size_t)d->ncon_max : max_contacts(m), nc = have ? (size_t)d->nblk_max : max_blocks(m);
    size_t off = 0;
    PLACE(xpos, double, 3 * nb);
    PLACE(xrot, double, 9 * nb);
    PLACE(xcom, double, 3 * nb);
    PLACE(cinert, double, 10 * nb);
    PLACE(cdof, double, 6 * nv);
    PLACE(cvel, double, 6 * nb);
    PLACE(cdof_dot, double, 6 * nv);
    PLACE(M, double, nv * nv);
    PLACE(Mp, double, nM);
    PLACE(LD, double, nM);
    PLACE(h, double, nv);
    PLACE(udot, double, nv);
    PLACE(crb, double, 10 * nb);
    PLACE(cacc, double, 6 * nb);
    PLACE(cfrc, double, 6 * nb);
    PLACE(scratch, double, 12 * nv);
    PLACE(lambda, double, 3 * nc);
    PLACE(Jc, double, 3 * nc * nv);
    PLACE(Bc, double, 3 * nc * nv);
    PLACE(G, double, 9 * nc * nc);
    PLACE(cfree, double, 3 * nc);
    PLACE(vpre, double, 3 * nc);
    PLACE(mu, double, nc);
    PLACE(ufree, double, nv);
    PLACE(con, sim_contact, ncon);
    PLACE(jblk, int, nc - ncon);
    PLACE(con_path, int, nc * nv);
    PLACE(con_npath, int, nc);
#undef PLACE
    return off;
}

size_t sim_scratch_size(const sim_model *m) { return layout_scratch(m, NULL, NULL); }

void sim_data_bind_scratch(const sim_model *m, sim_data *d, void *mem)
{
    layout_scratch(m, d, mem);
}

static sim_data *data_new(const sim_model *m, int own_scratch)
{
    size_t head = (sizeof(sim_data) + 63) / 64 * 64;
    size_t st = layout_state(m, NULL, NULL), sc = own_scratch ? layout_scratch(m, NULL, NULL) : 0;
    size_t nbytes = head + st + sc;
    unsigned char *mem = aligned_alloc(64, nbytes);
    if (!mem) return NULL;
    memset(mem, 0, nbytes);
    sim_data *d = (sim_data *)mem;
    layout_state(m, d, mem + head);
    d->ncon_max = (int)max_contacts(m);
    d->nblk_max = (int)max_blocks(m);
    if (own_scratch) layout_scratch(m, d, mem + head + st);
    /* the joints that get blocks: limited ones first, then those with friction */
    d->njlim = d->njfric = 0;
    for (int b = 1; b < m->nbody; b++)
        if (sim_model_joint_limited(m, b)) d->jdof[d->njlim++] = m->body[b].dof;
    for (int b = 1; b < m->nbody; b++)
        if (m->body[b].friction > 0) d->jdof[d->njlim + d->njfric++] = m->body[b].dof;
    d->nbytes = nbytes;
    sim_data_reset(m, d);
    return d;
}

sim_data *sim_data_new(const sim_model *m) { return data_new(m, 1); }
sim_data *sim_data_new_shared(const sim_model *m) { return data_new(m, 0); }

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
    d->ncon = d->nlim = d->nfric = 0;
    d->nprev = d->njprev = 0;
    memset(d->prev_jlambda, 0, sizeof(double) * 3 * (size_t)m->nv);
    d->friction_scale = 1.0;
    d->root_added_mass = 0.0;
    memset(&d->stats, 0, sizeof d->stats);
}

/* The state sim_data_reset sets, copied: a field of state added to one belongs in the other. */
void sim_data_copy_state(const sim_model *m, sim_data *dst, const sim_data *src)
{
    if (dst == src) return;
    memcpy(dst->q, src->q, layout_state(m, NULL, NULL)); /* q, u, tau, prev_lambda, prev_key, prev_jlambda: one block */
    dst->time = src->time;
    dst->ncon = dst->nlim = dst->nfric = 0;
    dst->nprev = src->nprev;
    dst->njprev = src->njprev;
    dst->njlim = src->njlim;
    dst->njfric = src->njfric;
    dst->friction_scale = src->friction_scale;
    dst->root_added_mass = src->root_added_mass;
    dst->stats = src->stats;
}
