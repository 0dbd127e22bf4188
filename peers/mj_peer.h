/* mj_peer.h — the same robot built in MuJoCo, as a reference for tests and a baseline for benchmarks.
 *
 * mj_peer_new() loads the URDF that herd loaded, in MuJoCo (2.2.x), so that both engines simulate the
 * same rigid-body system:
 *   - The URDF text is read, and before MuJoCo compiles it two things are inserted after <robot ...>:
 *       <mujoco><compiler inertiafromgeom="false" fusestatic="true" discardvisual="true" meshdir=.../></mujoco>
 *       <link name="herd_mjpeer_world"/> + a joint of type "floating" from it to herd's root link
 *     MuJoCo's URDF importer turns the "floating" joint into a free joint and fuses every jointless
 *     body into its parent (fusestatic): the empty dummy link disappears into the world, fixed-joint
 *     children merge into their parent like in herd.  (Fusing is done by MuJoCo's compiler, not
 *     herd's loader, so inertia merging is checked independently.)  The model is compiled straight
 *     from this text, in double precision: no mj_saveLastXML round trip, whose 6-digit output would
 *     limit any comparison to ~1e-6.
 *   - inertiafromgeom="false": inertias come only from <inertial> elements, never from geometry.
 *   - After compiling: joint damping, stiffness, armature and friction loss are set to 0, gravity is
 *     herd's, and contacts and joint limits are disabled (opt.disableflags), so that mj_forward
 *     computes the smooth, unconstrained dynamics qacc = M^-1 (qfrc_applied - qfrc_bias).
 *   - Bodies and joints are matched to herd's by name; the free joint's 6 dofs are herd's dofs 0..5.
 *
 * Conventions match herd's exactly (sim_model.h): qpos = [x y z qw qx qy qz joints], qvel = [v_world,
 * omega_body, joint rates]; only the order of the joints may differ, hence the index maps below.
 * A fixed-base herd model gives a MuJoCo model without the free joint (the root welded to the world).
 *
 * Ownership: mj_peer_new returns an object owning its mjModel and mjData; free it with
 * mj_peer_destroy.  Not thread-safe (MuJoCo's loader is not).  The herd model is only read.
 */
#ifndef HERD_PEERS_MJ_PEER_H
#define HERD_PEERS_MJ_PEER_H

#include <stddef.h>
#include <mujoco/mujoco.h>

#include "sim_model.h"

typedef struct mj_peer {
    mjModel *m;
    mjData *d;
    int nq, nv;                       /* equal to herd's */
    int qadr[SIM_MAX_DOF + 1];        /* herd q index   -> MuJoCo qpos index */
    int dofadr[SIM_MAX_DOF];          /* herd dof index -> MuJoCo dof index  */
    int body[SIM_MAX_BODIES];         /* herd body      -> MuJoCo body id    */
    int geom[SIM_MAX_GEOMS];          /* herd geometry  -> MuJoCo geom id, -1 if none matched */
    int floor;                        /* MuJoCo geom id of the floor (mj_peer_new_with_floor), else -1 */
} mj_peer;

/* Builds the MuJoCo model of urdf_path matched to herd model hm (loaded from the same file).
 * Returns NULL with err filled when MuJoCo cannot load it or the two models do not correspond
 * (body/joint names, joint types, tree, body and dof counts). */
mj_peer *mj_peer_new(const char *urdf_path, const sim_model *hm, char *err, size_t errlen);
void mj_peer_destroy(mj_peer **p);

/* Floors for mj_peer_new_with_floor. */
typedef enum {
    MJ_PEER_FLOOR_PLANE = 0,          /* a MuJoCo plane z = terrain height (see below) */
    MJ_PEER_FLOOR_BOX                 /* a static 200 x 200 x 2 m box whose top face is z = terrain height */
} mj_peer_floor_kind;

/* Like mj_peer_new, but with the ground of a floating herd model (plane terrain only) and contacts on,
 * for comparing whole simulations (herd-bench solver --vs-mujoco):
 *   - The dummy world link of the patched URDF gets a collision box 200 x 200 x 2 m whose top is
 *     z = hm->terrain.height (MuJoCo's URDF importer has no planes; fusestatic moves the box into the
 *     world body).  MJ_PEER_FLOOR_PLANE then turns that compiled world geom into a plane (type, size,
 *     position at the top face, rbound 0 = unbounded): MuJoCo's usual ground, with its plane-sphere
 *     and plane-box colliders.  MJ_PEER_FLOOR_BOX keeps the box (sphere-box and box-box colliders).
 *   - Exactly the herd geometries with nocollide == 0 (call after e.g. env_scenario_configure_model) collide,
 *     and only with the floor: they get contype 1 / conaffinity 2, the floor contype 2 / conaffinity 1,
 *     every other geom 0 / 0.  Each herd-colliding geom must have a MuJoCo match (p->geom[]).
 *   - Sliding friction: each colliding geom gets herd's geom friction; the floor gets the smallest of
 *     them, so MuJoCo's pair friction max(geom, floor) equals herd's per-geom coefficient.  Torsional
 *     and rolling friction, condim (3), solref/solimp, margin, cone (pyramidal), solver (Newton),
 *     iterations, tolerance and integrator (Euler) stay MuJoCo's defaults.
 *   - As mj_peer_new otherwise: no damping, armature, stiffness, friction loss; joint limits and
 *     equality constraints disabled; herd's gravity (mj_peer_copy_joint_dynamics gives it herd's).
 * Returns NULL with err filled on failure (fixed-base model, heightfield terrain, unmatched geom). */
mj_peer *mj_peer_new_with_floor(const char *urdf_path, const sim_model *hm, int floor_kind, char *err, size_t errlen);

/* Like mj_peer_new_with_floor with MJ_PEER_FLOOR_BOX, but the ground is nbox (1 .. 8) static boxes, boxes[6 b ..]
 * = centre (x, y, z) and half extents (m, world axes): stairs for comparing herd's cell terrain.  The terrain
 * boxes collide with the herd-colliding geometries only (the same filter and friction as the floor's); p->floor is
 * the first box.  Whatever herd's terrain is, it is not read.  Returns NULL with err filled on failure. */
mj_peer *mj_peer_new_with_boxes(const char *urdf_path, const sim_model *hm, const double *boxes, int nbox, char *err,
                                size_t errlen);

/* MuJoCo 2.2's compiler keeps an inertia as principal moments + a principal-frame quaternion, and its
 * conversion of full (rotated or fused) inertia tensors is accurate to only ~1e-7..1e-6 relative.  This
 * replaces every body's mass, COM and inertia with herd's, diagonalized to machine precision, so that
 * the dynamics algorithms can be compared at ~1e-12 on identical inertial parameters (compare the
 * inertias themselves before calling it).  Returns the largest reconstruction error |R D R^T - I|. */
double mj_peer_adopt_inertia(mj_peer *p, const sim_model *hm);

/* Gives MuJoCo herd's joint damping (dof_damping from hm->body[].damping); by default it is 0. */
void mj_peer_copy_damping(mj_peer *p, const sim_model *hm);

/* Gives MuJoCo herd's joint dynamics for a step of h seconds: damping, armature and friction loss of every joint
 * (hm->body[]), and the position limits of the joints herd limits (sim_model_joint_limited: jnt_limited, jnt_range,
 * margin 0), enabling MuJoCo's limit and friction-loss constraints where there are any; opt.timestep = h.  MuJoCo's
 * constraints are soft; these are made as hard as it allows: solref (2h, 1), the smallest time constant its
 * reference-safety clamp keeps, and solimp (0.9999, 0.9999, ...), the largest impedance, which leaves a
 * regularization R = (1 - 0.9999) / 0.9999 of each row's diagonal (forces within ~1e-4 relative of the hard
 * problem's). */
void mj_peer_copy_joint_dynamics(mj_peer *p, const sim_model *hm, double h);

/* Writes herd's state (q: nq, u: nv, herd order) into p->d->qpos / qvel. */
void mj_peer_set_state(const mj_peer *p, const double *q, const double *u);
/* Writes a herd generalized force (nv, herd order) into p->d->qfrc_applied. */
void mj_peer_set_force(const mj_peer *p, const double *tau);
/* Permutes a MuJoCo dof vector (nv) into herd's order. */
void mj_peer_vec_to_herd(const mj_peer *p, const double *mjv, double *out);
/* Permutes a MuJoCo 3 x nv Jacobian (row-major) into herd's column order. */
void mj_peer_jac_to_herd(const mj_peer *p, const double *mjj, double *out);
/* The dense mass matrix of p->d->qM (needs mj_crb or mj_forward) in herd's order, nv*nv row-major;
 * scratch must hold nv*nv doubles. */
void mj_peer_full_mass(const mj_peer *p, double *out, double *scratch);

#endif
