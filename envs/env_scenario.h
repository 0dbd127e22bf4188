/* env_scenario.h — the four ANYmal scenarios of Hwangbo, Lee & Hutter (2018, Sec. V-A), plus a
 * standing one, as deterministic controllers around sim_step.  Used by the solver benchmarks, the
 * tests and the paper-* tasks (env_paper.c).  All at the caller's dt (the paper uses 1 ms).
 *
 *   trot    a trot at 1.5 m/s (env_scenario_trot.c): diagonal pairs (LF+RH / RF+LH), 0.3 s period,
 *           swing feet placed by Raibert's rule and tracked by Cartesian PD, stance feet pushing the
 *           ground forces that hold height, attitude, heading and speed (gravity feed-forward); it
 *           stands for 0.3 s, then ramps the speed target over 1 s; feet and base collide; reset if
 *           the base falls below 0.25 m or tilts over 60° (it does not, test_scenario.c).
 *   hang    released at rest from 1 m, unactuated, only the feet collide: the body falls through the
 *           plane and swings below the feet, which stay on the ground.  No resets.
 *   drop    released from 1 m with 1 m/s tangential velocity, PD holding the nominal pose, feet and
 *           base collide; reset once the robot has been still (base KE < 0.5 J) for 0.5 s, or at 10 s.
 *   random  released from 0.7 m; PD targets drawn around the nominal pose with 1 rad² variance
 *           (std 1 rad, clipped to the joint limits), redrawn every 50 ms; reset every 5 s.
 *   stand   PD holding the nominal pose from 0.6 m; no resets (the MuJoCo comparison scenario).
 * PD: env_anymal_model.h's gains (Kp 80 N·m/rad, Kd 2 N·m·s/rad, torques clipped at 80 N·m).
 *
 * An env_scenario is a plain value owned by the caller (no allocation, nothing to destroy).
 */
#ifndef HERD_ENV_SCENARIO_H
#define HERD_ENV_SCENARIO_H

#include <stddef.h>
#include <stdint.h>

#include "env_anymal_model.h"
#include "env_rng.h"
#include "sim_model.h"
#include "sim_step.h"

typedef enum { ENV_SCN_TROT = 0, ENV_SCN_HANG, ENV_SCN_DROP, ENV_SCN_RANDOM, ENV_SCN_STAND, ENV_SCN_COUNT } env_scenario_kind;

/* The trot controller's constants and state (env_scenario_trot.c). */
#define ENV_TROT_SPEED 1.5      /* m/s, forward speed target */
#define ENV_TROT_STAND 0.3      /* s standing on four feet after a reset */
#define ENV_TROT_RAMP 1.0       /* s to ramp the speed target from 0 */
typedef struct {
    int foot_body[4];               /* LF RF LH RH: the body carrying the foot sphere */
    double foot_local[4][3];        /* the sphere's centre in that body's frame (m) */
    double foot_radius;             /* m */
    double mu;                      /* the feet's friction coefficient */
    double nominal[4][3];           /* feet in the base frame at the nominal pose (m) */
    double height;                  /* base height target (m) */
    double liftoff[4][3];           /* where each swinging foot left the ground (world, m) */
    int swinging[4];
    double vint[2];                 /* integral of the horizontal velocity error (m) */
} env_trot;

typedef struct {
    int kind;
    env_anymal_joints joints;
    double target[ENV_ANYMAL_NJ];   /* the scripted PD targets (rad) */
    double kp, kd, tau_max;
    double t_episode, t_target, t_still;   /* s */
    env_trot trot;                  /* the trot controller's state */
    double offset[ENV_ANYMAL_NJ];   /* added to the PD targets (the paper tasks' actions); 0 by default */
    env_rng rng;                    /* the random scenario's target draws */
    long resets;                    /* resets since env_scenario_init */
    sim_stage done;                 /* the last step stage env_scenario_control left current for the state it was
                                       given (KINEMATICS after the trot controller, else NONE): sim_step_stages' done */
} env_scenario;

/* Name <-> kind ("trot", "hang", "drop", "random", "stand"); -1 / "?" if unknown. */
int env_scenario_kind_from_name(const char *name);
const char *env_scenario_name(int kind);

/* Configures a model for the scenario (which geometries collide: the feet and the base box; hang: the
 * feet only).  Returns 0, or -1 with err filled (unknown kind, or not 4 feet). */
int env_scenario_configure_model(sim_model *m, int kind, char *err, size_t errlen);
/* Prepares the controller (joint map, gains, random stream keyed by seed) and resets the world.
 * Returns 0, or -1 with err filled (the model lacks ANYmal's joints). */
int env_scenario_init(env_scenario *s, const sim_model *m, sim_data *d, int kind, uint64_t seed, char *err,
                      size_t errlen);
/* Resets the world to the scenario's initial state (nominal pose at the scenario's height, at rest). */
void env_scenario_reset(env_scenario *s, const sim_model *m, sim_data *d);
/* Advances the scenario's clock by dt and sets d->tau for the next step (resetting the world first
 * when the scenario says so). */
void env_scenario_control(env_scenario *s, const sim_model *m, sim_data *d, double dt);

/* The trot controller (env_scenario_trot.c; called by the functions above).  init finds the feet
 * (0, or -1 with err filled); reset records the nominal foot offsets after a reset; control sets
 * s->target for the next step (the PD targets that produce its torques). */
int env_scenario_trot_init(env_scenario *s, const sim_model *m, char *err, size_t errlen);
void env_scenario_trot_reset(env_scenario *s, const sim_model *m, sim_data *d);
void env_scenario_trot_control(env_scenario *s, const sim_model *m, sim_data *d, double dt);

#endif
