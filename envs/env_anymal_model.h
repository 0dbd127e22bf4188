/* env_anymal_model.h — the ANYmal C robot as the tasks and the paper scenarios see it: the model
 * (embedded URDF), the joint map and default pose, the PD gains of legged_gym's ANYmal C, the
 * classification of collision geometries (base, leg, foot) and the joint-space PD controller.
 *
 * Joint order everywhere (observations, actions, targets): LF, RF, LH, RH x HAA, HFE, KFE.
 * Units: rad, rad/s, N·m.
 */
#ifndef HERD_ENV_ANYMAL_MODEL_H
#define HERD_ENV_ANYMAL_MODEL_H

#include <stddef.h>

#include "sim_model.h"

enum { ENV_ANYMAL_NJ = 12 };

/* legged_gym's ANYmal C PD gains and torque limit (the defaults of the tasks, the scenarios' values). */
#define ENV_ANYMAL_KP 80.0          /* N·m/rad */
#define ENV_ANYMAL_KD 2.0           /* N·m·s/rad */
#define ENV_ANYMAL_TAU_MAX 80.0     /* N·m */

/* The joints of one ANYmal model, in the order above. */
typedef struct {
    int qadr[ENV_ANYMAL_NJ], dof[ENV_ANYMAL_NJ];    /* indices into d->q and d->u / d->tau */
    double lower[ENV_ANYMAL_NJ], upper[ENV_ANYMAL_NJ];  /* position limits (rad) */
    double q_default[ENV_ANYMAL_NJ];                /* nominal standing pose: HFE +-0.4, KFE -+0.8 */
} env_anymal_joints;

/* The joint options of a task's configuration (keys for env_internal.h's key tables): `joint_limits` (1: the URDF's
 * position limits are hard constraints, sim_step.h; 0: none, as legged_gym's ANYmal C, whose URDF has none) and the
 * damping (implicit), Coulomb friction and armature of the 12 actuated joints.  Defaults 0 but for the limits. */
#define ENV_ANYMAL_JOINT_KEYS(limits_default)                                                                 \
    ENV_NUM_KEY("joint_limits", limits_default, 0, 1, 1,                                                      \
                "1: the URDF's joint position limits are hard constraints; 0: none (legged_gym's ANYmal C)"), \
    ENV_NUM_KEY("joint_damping", 0, 0, 100, 0, "viscous damping of the 12 joints (N m s / rad), implicit"),   \
    ENV_NUM_KEY("joint_friction", 0, 0, 100, 0, "Coulomb friction (frictionloss) of the 12 joints (N m)"),    \
    ENV_NUM_KEY("joint_armature", 0, 0, 10, 0, "rotor inertia added to the 12 joints (kg m^2)")

/* Applies the joint options to model m (before its worlds are created): opt.joint_limits = limits, and damping,
 * friction and armature on each of the 12 joints of map j.  Returns 0, or -1 with err naming the key of a value
 * that is not finite and >= 0 (or, for limits, not 0 or 1). */
int env_anymal_joint_options(sim_model *m, const env_anymal_joints *j, double limits, double damping,
                             double friction, double armature, char *err, size_t errlen);

typedef enum { ENV_GEOM_OTHER = 0, ENV_GEOM_BASE, ENV_GEOM_LEG, ENV_GEOM_FOOT } env_geom_kind;

/* The ANYmal C model: the copy embedded at build time, or $HERD_MODEL_DIR/anymal_c.urdf when set.
 * NULL with err filled on failure.  The caller owns it (sim_model_destroy). */
sim_model *env_anymal_load(char *err, size_t errlen);

/* Fills the joint map of model m.  Returns 0, or -1 with err filled if a joint is missing. */
int env_anymal_joints_init(env_anymal_joints *j, const sim_model *m, char *err, size_t errlen);

/* What collision geometry g of m is: a foot (sphere on a *SHANK body; *leg set to 0..3 in the order
 * LF, RF, LH, RH), the base (on the root body), a leg (thigh or shank), or other.  leg may be NULL. */
env_geom_kind env_anymal_geom_kind(const sim_model *m, int g, int *leg);

/* Returns 0 if m has exactly 4 foot geometries, else -1 with err naming the count found. */
int env_anymal_count_feet(const sim_model *m, char *err, size_t errlen);

/* Whether a world's physics ran away: a generalized velocity component beyond ENV_ANYMAL_RUNAWAY_VEL (m/s or rad/s)
 * or a base height beyond ENV_ANYMAL_RUNAWAY_HEIGHT_M (m), or either not finite.  The tasks fail (and reset) such a
 * world at once and do not step it again: the collision's look-ahead (speed x dt) of a runaway state could span the
 * whole terrain and cost seconds. */
#define ENV_ANYMAL_RUNAWAY_VEL 1e3
#define ENV_ANYMAL_RUNAWAY_HEIGHT_M 1e3
int env_anymal_runaway(const sim_model *m, const sim_data *d);

/* Joint-space PD: tau = kp (target - q) - kd qdot, clipped to +-tau_max, written to d->tau of each
 * joint.  Adds each joint's tau^2 (N²·m²) to *tau_sq when tau_sq is not NULL. */
void env_anymal_pd(const env_anymal_joints *j, sim_data *d, const double target[ENV_ANYMAL_NJ], double kp, double kd,
                   double tau_max, double *tau_sq);

#endif
