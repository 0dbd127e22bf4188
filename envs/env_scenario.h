/* env_scenario.h — the four ANYmal scenarios of Hwangbo, Lee & Hutter (2018, Sec. V-A), plus a
 * standing one, as deterministic controllers around sim_step.  Used by the solver benchmark and by
 * the scenario tasks.  All at the caller's dt (the paper uses 1 ms).
 *
 *   trot    scripted diagonal trot (LF+RH / RF+LH) in joint space, 0.5 s period, with a feedback on
 *           the stride amplitude toward 1.5 m/s forward; feet and base collide; reset if the base
 *           touches the ground or tilts over 60°.
 *   hang    released at rest from 1 m, unactuated, only the feet collide: the body falls through the
 *           plane and swings below the feet, which stay on the ground.  No resets.
 *   drop    released from 1 m with 1 m/s tangential velocity, PD holding the nominal pose, feet and
 *           base collide; reset once the robot has been still (KE < 0.5 J) for 0.5 s.
 *   random  released from 0.7 m; PD targets drawn around the nominal pose with 1 rad² variance
 *           (std 1 rad, clipped to the joint limits), redrawn every 50 ms; reset every 5 s.
 *   stand   PD holding the nominal pose from 0.6 m; no resets (the MuJoCo comparison scenario).
 * PD: Kp 80 N·m/rad, Kd 2 N·m·s/rad, torques clipped at 80 N·m (legged_gym's ANYmal C gains).
 */
#ifndef HERD_ENV_SCENARIO_H
#define HERD_ENV_SCENARIO_H

#include <stdint.h>

#include "sim_model.h"

typedef enum { SCN_TROT = 0, SCN_HANG, SCN_DROP, SCN_RANDOM, SCN_STAND, SCN_COUNT } scn_kind;

typedef struct {
    int kind;
    int qadr[12], dof[12];      /* joints in the order LF, RF, LH, RH x HAA, HFE, KFE */
    double lower[12], upper[12];
    double nominal[12];
    double target[12];
    double kp, kd, tau_max;
    double t_episode, t_target, t_still;
    double amp;                 /* trot stride amplitude (rad), adapted */
    double offset[12];          /* added to the PD targets (the scenario tasks' actions); 0 by default */
    uint64_t rng;
    long resets;
} scn_state;

/* Name <-> kind ("trot", "hang", "drop", "random", "stand"); -1 if unknown. */
int scn_kind_from_name(const char *name);
const char *scn_name(int kind);

/* Configures a model for the scenario (which geometries collide).  Returns 0, or -1 with err filled
 * (e.g. the model lacks ANYmal's joints). */
int scn_configure_model(sim_model *m, int kind, char *err, size_t errlen);
/* Prepares the controller state (joint map) and resets the world. */
int scn_init(const sim_model *m, sim_data *d, scn_state *s, int kind, uint64_t seed, char *err, size_t errlen);
/* Resets the world to the scenario's initial state. */
void scn_reset(const sim_model *m, sim_data *d, scn_state *s);
/* Sets d->tau for the next step (and resets the world when the scenario says so). */
void scn_control(const sim_model *m, sim_data *d, scn_state *s, double dt);

#endif
