/* sim_model.h — the immutable kinematic/inertial model and the per-world data.
 *
 * herd follows the model/data split of MuJoCo: a sim_model is built once (by the URDF loader,
 * sim_urdf.h) and shared read-only by every world; each world owns a sim_data carved from one
 * allocation made by sim_data_new().  Nothing in the step allocates.
 *
 * Conventions (SI units, radians; all matrices row-major):
 *   - Bodies are stored parent-before-child; body 0 is the root.  After loading, every non-root body
 *     has exactly one degree of freedom (fixed joints are merged into their parent).
 *   - Floating base (model->floating = 1): q = [x y z  qw qx qy qz  joints...] (nq = nv + 1),
 *     u = [v_world (3)  omega_body (3)  joint rates...].  v_world is the velocity of the base frame
 *     origin in the world frame, omega_body the base angular velocity in the base frame (MuJoCo's
 *     free-joint convention).  Fixed base: q = joints, u = joint rates (nq = nv).
 *   - A body frame coincides with its joint frame; the joint axis is given in that frame.
 *   - Spatial vectors are ordered [angular; linear] (Featherstone).
 */
#ifndef HERD_SIM_MODEL_H
#define HERD_SIM_MODEL_H

#include <math.h>
#include <stddef.h>

#include "sim_solver.h"

#define SIM_NAME_MAX 64
#define SIM_MAX_BODIES 64   /* bodies after fixed-joint merging */
#define SIM_MAX_DOF (SIM_MAX_BODIES + 5) /* 6 + one per non-root body */
#define SIM_MAX_GEOMS 128

typedef enum {
    SIM_JOINT_FREE = 0,      /* the floating root */
    SIM_JOINT_ROOT_FIXED,    /* a root welded to the world */
    SIM_JOINT_REVOLUTE,
    SIM_JOINT_CONTINUOUS,
    SIM_JOINT_PRISMATIC
} sim_joint_type;

typedef enum {
    SIM_GEOM_SPHERE = 0,     /* size[0] = radius */
    SIM_GEOM_BOX,            /* size = half extents */
    SIM_GEOM_CYLINDER,       /* size[0] = radius, size[1] = half length (along local z) */
    SIM_GEOM_CAPSULE         /* size[0] = radius, size[1] = half length of the segment (local z) */
} sim_geom_type;

typedef struct {
    char name[SIM_NAME_MAX];        /* URDF link name (the first link of a merged group) */
    char joint_name[SIM_NAME_MAX];  /* URDF joint that moves this body ("" for the root) */
    int parent;                     /* parent body index, -1 for the root */
    int joint_type;                 /* sim_joint_type */
    int dof;                        /* first dof index in u (root: 0 if floating) ; -1 if none */
    int qadr;                       /* first index in q */
    double pos[3];                  /* joint frame origin in the parent body frame at q = 0 */
    double rot[9];                  /* orientation of the joint frame in the parent body frame */
    double axis[3];                 /* unit joint axis in this body frame */
    double mass;                    /* kg, of the merged body */
    double com[3];                  /* centre of mass in this body frame */
    double inertia[9];              /* rotational inertia about the COM, in this body frame */
    double lower, upper;            /* position limits (rad or m); +-INFINITY if none */
    double effort, velocity;        /* effort (N·m or N) and velocity limits; INFINITY if none */
    double damping;                 /* viscous joint damping, N·m·s/rad (or N·s/m); implicit in sim_step */
    double friction;                /* Coulomb joint friction ("frictionloss"), N·m (or N): a bounded row per step */
    double armature;                /* rotor inertia added to M's diagonal, kg·m² (or kg); 0 */
    /* derived by sim_model_finalize, for speed */
    int axis_kind;                  /* 0/1/2: axis is +x/+y/+z of the body frame, 3: general */
    int rot_identity;               /* 1 if rot is the identity */
} sim_body;

typedef struct {
    char name[SIM_NAME_MAX];        /* "<link>/collision<k>" or the collision's name attribute */
    int type;                       /* sim_geom_type */
    int body;                       /* body the geometry is attached to (after merging) */
    double pos[3];                  /* geometry frame in the body frame */
    double rot[9];
    double size[3];                 /* see sim_geom_type */
    double friction;                /* Coulomb coefficient of the (geometry, ground) pair */
    int nocollide;                  /* 1: the geometry never generates contacts (0 by default) */
    int contact_priority;           /* when a world's contacts exceed opt.max_contacts, those of a geometry with a
                                       higher priority are kept before any of a lower one (0 by default) */
} sim_geom;

/* The ground.  Three shapes, all on a grid of nx * ny heights (row-major, x fastest) with spacing dx, dy whose
 * sample (0,0) sits at (x0, y0), heights relative to `height`:
 *   SIM_TERRAIN_PLANE   the plane z = height (normal +z); the grid is unused.
 *   SIM_TERRAIN_HFIELD  a heightfield bilinearly interpolated between the samples; outside the grid the border
 *                       height continues.
 *   SIM_TERRAIN_CELLS   a union of vertical prisms: cell (ix, iy) is the square of side dx x dy centred on sample
 *                       (ix, iy), flat at that sample's height, with vertical walls where its neighbours are lower
 *                       (so a riser is a true step); the border cells extend to infinity.  A cell whose smooth
 *                       mask entry is nonzero is instead the HFIELD surface (bilinear) over its square and has no
 *                       walls of its own; the prisms beside it see it, for their walls, at its sample's height
 *                       (a smooth cell needs a grid of at least 2 x 2 samples: on a single row it is flat at `height`).
 * The heights (and the mask) are owned by whoever owns the model. */
typedef enum { SIM_TERRAIN_PLANE = 0, SIM_TERRAIN_HFIELD, SIM_TERRAIN_CELLS } sim_terrain_type;
typedef struct {
    int type;
    double height;                  /* plane height, or offset of the grid's heights (m) */
    int nx, ny;
    double x0, y0, dx, dy;
    const float *heights;           /* nx * ny, m */
    const unsigned char *smooth;    /* CELLS: nx * ny, nonzero = a bilinear cell; NULL: every cell a prism */
    double smooth_nz_min;           /* CELLS: a lower bound of the bilinear surface's normal z over the smooth cells
                                       (1 without any), set by sim_terrain_cells from the heights as they are then;
                                       0: unknown (collision then skips no geometry above a smooth cell) */
} sim_terrain;

/* Most cells a SIM_TERRAIN_CELLS grid may have (contact features encode the cell, sim_collision.h). */
#define SIM_TERRAIN_CELLS_MAX 8388607

/* The plane z = height. */
sim_terrain sim_terrain_plane(double height);
/* A SIM_TERRAIN_CELLS terrain over heights (nx * ny, m) and the optional smooth mask (nx * ny or NULL), both the
 * caller's, kept by pointer (call it again after changing either: it reads the smooth cells' slopes).  Returns 0, or -1 with err filled (nx or ny < 1, nx * ny above SIM_TERRAIN_CELLS_MAX,
 * a spacing not positive and finite, a corner or a height not finite, heights NULL). */
int sim_terrain_cells(sim_terrain *out, int nx, int ny, double x0, double y0, double dx, double dy,
                      const float *heights, const unsigned char *smooth, char *err, size_t errlen);

/* Step options (sim_step.h). */
typedef struct {
    int solver;                     /* index into the solver table (sim_solver.h: sim_solver_at / sim_solver_find);
                                       default SIM_SOLVER_PAPER_BISECTION, which sim_step also uses for an
                                       index without a solver (out of range or a reserved row) */
    sim_solver_params sp;           /* solver parameters (defaults of sim_solver_default_params) */
    double margin;                  /* contacts are considered below this gap (m), plus a look-ahead; 1e-3 */
    int gap_target;                 /* 1 (default): a positive gap may close within the step, v_n >= -gap/dt */
    double erp;                     /* 0 (default, off): push out penetration p at erp p / dt */
    int warmstart;                  /* 1 (default): persistent contacts start from their last impulse */
    int max_contacts;               /* per-world contact capacity (32); beyond it those of the geometries of the
                                       highest contact_priority are kept, the deepest first among equal priorities */
    int joint_limits;               /* 1 (default): joints with finite lower / upper get limit rows (sim_step.h);
                                       0: position limits are ignored */
} sim_step_opt;

typedef struct sim_model {
    int nbody, nq, nv, ngeom;
    int floating;                   /* 1: free root with 6 dofs, 0: fixed root */
    double gravity[3];              /* m/s², world frame; default (0, 0, -9.81) */
    sim_body body[SIM_MAX_BODIES];
    sim_geom geom[SIM_MAX_GEOMS];
    int dof_body[SIM_MAX_DOF];      /* body owning each dof */
    int dof_parent[SIM_MAX_DOF];    /* parent dof in the kinematic tree (-1 for the first); parent < child */
    int dof_nanc[SIM_MAX_DOF];      /* number of strict ancestors of each dof */
    int dof_anc[SIM_MAX_DOF][SIM_MAX_DOF]; /* strict ancestors of each dof, nearest first (decreasing) */
    int dof_adr[SIM_MAX_DOF];       /* start of row k in packed tree matrices (Mp, LD): 1 + nanc entries */
    double dof_lower[SIM_MAX_DOF];  /* each dof's joint position limits, the bodies' lower / upper (+-INFINITY for */
    double dof_upper[SIM_MAX_DOF];  /* the root's dofs), by dof so that sim_step scans them as contiguous arrays */
    int nM;                         /* size of a packed tree matrix */
    double total_mass;
    sim_terrain terrain;            /* default: the plane z = 0 */
    sim_step_opt opt;               /* defaults set by sim_model_new */
} sim_model;

/* What the last sim_step did. */
typedef struct {
    int ncon;                       /* contacts considered */
    int nactive;                    /* contacts with a positive normal impulse */
    int iterations;                 /* solver sweeps */
    double error;                   /* solver's final error (its own termination measure) */
    int converged;
    int fallback;                   /* 1 if the solver's stall detector handed the problem to ADMM */
    int impact;                     /* 1 if the "impacts" solver resolved the step as a set-valued impact */
    double penetration;             /* deepest penetration among the contacts at collision time (m) */
    int nlim;                       /* joint-limit rows considered (sides within reach this step) */
    int nlim_active;                /* of those, the ones with a positive impulse */
    double limit_impulse;           /* sum of the limit impulses (N·s or N·m·s) */
    double limit_violation;         /* largest position past a limit at the start of the step (rad or m); 0 if none */
    int nfriction;                  /* joint-friction rows (joints with friction > 0) */
    int answer;                     /* the model the contact solve's answer satisfies (sim_solver_stats.answer,
                                       SIM_ANSWER_*); SIM_ANSWER_NONE when no solve ran (no contact rows) */
} sim_step_stats;

/* One contact found by sim_collide (sim_collision.h): a point of a geometry and the ground. */
typedef struct sim_contact {
    int geom, body, feature;
    double pos[3];      /* contact point on the geometry surface (deepest point), world */
    double frame[9];    /* rows: t1, t2, n (world) */
    double gap;         /* signed distance from the ground along n, m (negative: penetration) */
    double mu;          /* friction coefficient of the pair */
} sim_contact;

/* Per-world state and scratch.  State arrays (q, u, tau, prev_*) point into the world's single
 * allocation; scratch arrays (everything else) point into it too (sim_data_new) or into a scratch
 * bound by the caller (sim_data_new_shared + sim_data_bind_scratch).  Sizes come from the model
 * (nq, nv, nbody, contacts); per-body arrays are flat: xpos[3*i + k], xrot[9*i + k], ... */
typedef struct sim_data {
    /* state */
    double *q;            /* nq */
    double *u;            /* nv */
    double *tau;          /* nv: generalized applied force (joint torques; base entries usually 0) */
    double time;
    /* kinematics (sim_kinematics) */
    double ref[3];        /* reference point of the spatial quantities below (the root origin) */
    double *xpos;         /* 3 nbody: body frame origin, world */
    double *xrot;         /* 9 nbody: body orientation, world (columns = body axes) */
    double *xcom;         /* 3 nbody: body COM, world */
    double *cinert;       /* 10 nbody: spatial inertia, world axes about ref: m, h = m(c - ref), I(xx yy zz xy xz yz) */
    double *cdof;         /* 6 nv: motion subspace of each dof, world axes about ref, [ang; lin] */
    /* velocities */
    double *cvel;         /* 6 nbody: spatial velocity of each body (world axes, about ref) */
    double *cdof_dot;     /* 6 nv: time derivative of cdof */
    /* dynamics */
    double *M;            /* nv*nv: dense mass matrix, filled by sim_full_m only; tree-coupled entries (others 0) */
    double *Mp;           /* nM: M packed by rows, row k = [M_kk, M_k,anc(k)...] at dof_adr[k] (see sim_model) */
    double *LD;           /* nM: LTDL factor of M in the same packing: [D_k, L_k,anc(k)...] */
    double *h;            /* nv: bias forces (Coriolis, centrifugal, gravity); damping excluded */
    double *udot;         /* nv: accelerations from the last forward-dynamics call */
    /* scratch */
    double *crb;          /* 10 nbody */
    double *cacc;         /* 6 nbody */
    double *cfrc;         /* 6 nbody */
    double *scratch;      /* 12 nv: general-purpose vectors (the step's Jacobian and solve scratch) */
    /* the contact problem (sim_step): blocks 0 .. ncon-1 are the geometry contacts d->con, then nlim joint-limit
       blocks, then nfric joint-friction blocks (sim_step.h); nblk = ncon + nlim + nfric <= nblk_max.  The
       per-block arrays are sized for nblk_max; d->con for ncon_max */
    int ncon_max, ncon;
    int nlim, nfric, nblk_max;
    sim_contact *con;  /* ncon_max: this step's contacts */
    int *jblk;            /* nblk_max - ncon_max: joint blocks' keys, 3 dof + side (0 lower, 1 upper, 2 friction) */
    double *lambda;       /* 3 nblk_max: block impulses, contact frames (t1, t2, n), N·s */
    double *Jc;           /* 3 nblk_max x nv: block Jacobians in contact frames (a joint block: row n = +-e_dof) */
    double *Bc;           /* 3 nblk_max x nv: rows of D^-1/2 L^-T J^T, compact along each block's root path */
    double *G;            /* (3 nblk)^2 used of (3 nblk_max)^2: Delassus matrix */
    double *cfree;        /* 3 nblk_max: free block velocity (with gap / erp targets) */
    double *vpre;         /* 3 nblk_max: pre-step block velocity J u (filled only for solvers that read it) */
    double *mu;           /* nblk_max: friction of each contact; 0 for a limit, -bound for a friction row */
    double *ufree;        /* nv: velocity without contact impulses */
    int *con_path;        /* nblk_max x nv: dofs on each block's root path */
    int *con_npath;       /* nblk_max */
    int nprev;            /* warm-start cache: last step's contacts */
    int *prev_key;        /* 2 ncon_max: (geom, feature) */
    double *prev_lambda;  /* 3 ncon_max */
    int njlim, njfric;    /* joints that may get a limit block / have a friction block (fixed at creation) */
    int *jdof;            /* njlim + njfric: their dofs, the limited joints' first */
    int njprev;           /* joint blocks of the last step (0: prev_jlambda holds nothing) */
    double *prev_jlambda; /* 3 nv: last step's joint-block impulses by 3 dof + side, 0 where there was none */
    double friction_scale;/* per-world multiplier of every pair's friction (domain randomization); 1 */
    double root_added_mass;/* per-world point mass (kg) added at the root body's COM (domain randomization); 0 */
    sim_step_stats stats;
    size_t nbytes;        /* size of the allocation */
} sim_data;

/* Writes the formatted message into err (at most errlen bytes, terminated; nothing when err is NULL or errlen 0)
 * and returns -1: how sim's functions, and the code built on them, fill a caller's err / errlen. */
int sim_fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Allocates a zeroed model (gravity (0,0,-9.81)); free with sim_model_destroy.  Builders fill bodies
 * and geoms, then call sim_model_finalize. */
sim_model *sim_model_new(void);
void sim_model_destroy(sim_model **m);
/* Checks the bodies (parent order, unit axes, positive-definite inertias, joint types) and computes
 * nq, nv, dof/qadr indices, dof_body, dof_parent, the dofs' limits and total_mass.  Call it again after changing a
 * body.  Returns 0, or -1 with err filled. */
int sim_model_finalize(sim_model *m, char *err, size_t errlen);

/* 1 if the inertia tensor I (3x3 row-major, kg·m², any frame) is symmetric and positive semi-definite
 * (all principal minors >= 0), each test with a tolerance relative to the trace s = |Ixx| + |Iyy| + |Izz|
 * (rel_tol s for entries, rel_tol s^2 for 2x2 minors, rel_tol s^3 for the determinant); a zero tensor is
 * valid (point mass).  Non-finite entries are invalid.  The one inertia check of sim (sim_model_finalize
 * uses SIM_INERTIA_TOL, the URDF loader 1e-9 for the rounding of printed figures). */
#define SIM_INERTIA_TOL 1e-12
int sim_inertia_valid(const double I[9], double rel_tol);

/* Number of contact points the model's colliding geometries can produce (upper bound on contacts). */
int sim_model_max_contacts(const sim_model *m);

/* 1 if body b's joint gets a position-limit row in sim_step: m->opt.joint_limits is on, the joint is not
 * continuous, and lower < upper with at least one of them finite (a zeroed body, lower = upper = 0, has none). */
static inline int sim_model_joint_limited(const sim_model *m, int b)
{
    const sim_body *bb = &m->body[b];
    if (b <= 0 || !m->opt.joint_limits || bb->joint_type == SIM_JOINT_CONTINUOUS || !(bb->lower < bb->upper)) return 0;
    return bb->lower > -HUGE_VAL || bb->upper < HUGE_VAL;
}
/* Joint blocks of m's contact problem: one per limited joint (sim_model_joint_limited) plus one per joint with
 * friction > 0.  sim_data_new sizes a world for the model's options and joints at that time; change
 * opt.joint_limits or a joint's friction only before creating the worlds. */
int sim_model_joint_blocks(const sim_model *m);

/* Allocates a world's data for model m in one allocation, zeroed, in the model's reference pose
 * (identity orientation, zero joint angles), with its own scratch.  Returns NULL if out of memory.
 * Free with sim_data_destroy. */
sim_data *sim_data_new(const sim_model *m);
/* The same without scratch: only the state (q, u, tau, warm-start cache, per-world parameters, stats).
 * Before any sim_ function touches it, bind a scratch with sim_data_bind_scratch.  A batch of worlds
 * stepped by one thread shares one scratch, so the batch's memory is its states (~1 kB per ANYmal). */
sim_data *sim_data_new_shared(const sim_model *m);
/* Bytes of scratch a world of model m needs; mem must be 64-byte aligned and that large. */
size_t sim_scratch_size(const sim_model *m);
/* Points d's scratch arrays (kinematics, dynamics, contacts of the last step) into mem.  What they hold
 * is valid until another world bound to the same mem is computed. */
void sim_data_bind_scratch(const sim_model *m, sim_data *d, void *mem);
void sim_data_destroy(sim_data **d);
/* Copies the state of world src into world dst, both of model m: q, u, tau, time, the warm-start cache, the
 * per-world parameters and the stats, so that dst steps on exactly as src would.  dst keeps its own arrays and
 * its scratch (own or bound); no contact of the last step is carried over (dst->ncon = 0). */
void sim_data_copy_state(const sim_model *m, sim_data *dst, const sim_data *src);
/* Sets q to the reference pose and zeroes u, tau and time. */
void sim_data_reset(const sim_model *m, sim_data *d);

/* Index of the body / geometry / joint-owning body with that name, or -1. */
int sim_model_body(const sim_model *m, const char *name);
int sim_model_geom(const sim_model *m, const char *name);
int sim_model_joint(const sim_model *m, const char *joint_name);

#endif
