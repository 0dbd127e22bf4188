/* env_scenario_trot.c — the trot scenario's controller (see env_scenario.h).
 *
 * A scripted trot in task space, the way model-based quadruped controllers are usually built
 * (Raibert's foot placement for the swing legs, a quasi-static force distribution for the stance legs):
 *   - clock: a diagonal trot, LF+RH and RF+LH half a period apart, each leg half a period in stance
 *     and half in swing; the first ENV_TROT_STAND s all four feet stand, then the speed target ramps
 *     from 0 to ENV_TROT_SPEED over ENV_TROT_RAMP s;
 *   - swing legs: the foot follows a trajectory from its lift-off point to a landing point chosen by
 *     Raibert's rule (under the hip at mid-stance, plus sqrt(h/g) (v - v_des)), lifted by a half sine;
 *     Cartesian PD on the foot (world frame) mapped to joint torques by the leg's Jacobian transpose;
 *     the landing point's height is the terrain's there (sim_terrain_query), and the base height target
 *     is taken over the mean terrain height under the hips, so that the trot can go down stairs;
 *   - stance legs: the ground forces that give the base the wanted force and moment (PD on height,
 *     attitude and heading, PI on the horizontal velocity; gravity and the speed ramp as feed-forward)
 *     are distributed over the stance feet by least norm, kept inside a friction cone (0.6 mu) with a
 *     least push, and applied as tau = -J^T f.
 * The torques are written as the PD targets that produce them with the scenario's gains (target =
 * q + tau / kp), so the paper tasks' action offsets still add to the scripted targets, and the PD's
 * joint damping stays.  Units SI; world frame unless named. */
#include "env_scenario.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sim_collision.h"
#include "sim_dynamics.h"

enum { NLEG = 4 };

/* Gait and gains.  Period and height/speed targets are the scenario's definition; the gains were
 * tuned on ANYmal C at 1 ms (test_scenario.c checks the outcome: no fall in 20 s, speed within 10 %). */
static const double period = 0.3;             /* s, one full gait cycle */
static const double swing_height = 0.09;      /* m, apex of the foot above its straight path */
static const double kp_swing = 3500, kd_swing = 90;       /* N/m, N·s/m (swing foot) */
static const double kv_xy = 4.0, ki_xy = 4.0; /* 1/s, 1/s²: horizontal velocity PI (per unit mass) */
static const double vint_max = 0.5;           /* m, bound of the velocity error integral */
static const double kp_z = 150, kd_z = 20;    /* 1/s², 1/s: height (per unit mass) */
static const double kp_att[3] = {400, 600, 200}, kd_att[3] = {40, 60, 30};  /* N·m/rad, N·m·s/rad */
static const double friction_use = 0.6;       /* stance forces kept within this fraction of the feet's mu */
static const double fz_min = 5;               /* N, the least push of a stance foot */
static const double height_offset = 0.03;     /* m, base height target above the nominal pose's */

/* A tiny dense SPD solve (n <= 6) by Cholesky; A is overwritten. */
static void spd_solve(int n, double *A, double *b)
{
    for (int j = 0; j < n; j++) {
        double s = A[j * n + j];
        for (int k = 0; k < j; k++) s = fma(-A[j * n + k], A[j * n + k], s);
        double l = sqrt(s > 1e-12 ? s : 1e-12);
        A[j * n + j] = l;
        for (int i = j + 1; i < n; i++) {
            double t = A[i * n + j];
            for (int k = 0; k < j; k++) t = fma(-A[i * n + k], A[j * n + k], t);
            A[i * n + j] = t / l;
        }
    }
    for (int i = 0; i < n; i++) {
        double t = b[i];
        for (int k = 0; k < i; k++) t = fma(-A[i * n + k], b[k], t);
        b[i] = t / A[i * n + i];
    }
    for (int i = n - 1; i >= 0; i--) {
        double t = b[i];
        for (int k = i + 1; k < n; k++) t = fma(-A[k * n + i], b[k], t);
        b[i] = t / A[i * n + i];
    }
}

/* The foot sphere's centre (world) and the leg's 3x3 Jacobian (rows x y z, columns HAA HFE KFE) of it,
 * plus its world velocity. */
static void foot_state(const env_scenario *s, const sim_model *m, const sim_data *d, int l, double p[3], double J[9],
                       double v[3])
{
    double jp[3 * SIM_MAX_DOF];
    int cols[SIM_MAX_DOF];
    const env_trot *t = &s->trot;
    sim_point_world(m, d, t->foot_body[l], t->foot_local[l], p);
    /* the Jacobian's nonzero columns only (the root path), and the foot velocity in the same pass */
    sim_jacobian_sparse_vel(m, d, t->foot_body[l], p, jp, cols, v);
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++) J[3 * r + c] = jp[r * m->nv + s->joints.dof[3 * l + c]];
}

int env_scenario_trot_init(env_scenario *s, const sim_model *m, char *err, size_t errlen)
{
    env_trot *t = &s->trot;
    memset(t, 0, sizeof *t);
    int found = 0;
    for (int g = 0; g < m->ngeom; g++) {
        int leg;
        if (env_anymal_geom_kind(m, g, &leg) != ENV_GEOM_FOOT || leg < 0) continue;
        t->foot_body[leg] = m->geom[g].body;
        memcpy(t->foot_local[leg], m->geom[g].pos, sizeof t->foot_local[leg]);
        t->foot_radius = m->geom[g].size[0];
        t->mu = m->geom[g].friction;
        found |= 1 << leg;
    }
    if (found != 15) {
        snprintf(err, errlen, "trot: the model lacks a foot sphere on one of LF, RF, LH, RH");
        return -1;
    }
    return 0;
}

/* After a reset (nominal pose, base level at the origin): the feet's nominal offsets from the base in
 * the base frame, and the standing height that puts them on the ground. */
void env_scenario_trot_reset(env_scenario *s, const sim_model *m, sim_data *d)
{
    env_trot *t = &s->trot;
    sim_kinematics(m, d);
    double zsum = 0;
    for (int l = 0; l < NLEG; l++) {
        double p[3];
        sim_point_world(m, d, t->foot_body[l], t->foot_local[l], p);
        for (int k = 0; k < 3; k++) t->nominal[l][k] = p[k] - d->q[k];   /* level base: world = base axes */
        zsum += t->nominal[l][2];
        memcpy(t->liftoff[l], p, sizeof p);
        t->swinging[l] = 0;
    }
    t->vint[0] = t->vint[1] = 0;
    t->height = t->foot_radius - zsum / NLEG + height_offset;   /* slightly crouched */
}

/* Height of the model's terrain under (x, y) (sim_terrain_query): the plane's height on flat ground. */
static double ground(const sim_model *m, double x, double y)
{
    double h, n[3];
    sim_terrain_query(&m->terrain, x, y, &h, n);
    return h;
}

/* Leg l's gait phase in [0, 1): stance in [0, 0.5), swing in [0.5, 1). */
static double leg_phase(double t_gait, int l)
{
    double ph = t_gait / period + ((l == 1 || l == 2) ? 0.5 : 0.0);
    return ph - floor(ph);
}

void env_scenario_trot_control(env_scenario *s, const sim_model *m, sim_data *d, double dt)
{
    env_trot *t = &s->trot;
    const double g = -m->gravity[2], M = m->total_mass;
    sim_kinematics(m, d);
    const double *R = d->xrot;     /* base orientation (columns = base axes) */
    double com[3] = {0, 0, 0};
    for (int b = 0; b < m->nbody; b++)
        for (int k = 0; k < 3; k++) com[k] += m->body[b].mass * d->xcom[3 * b + k];
    for (int k = 0; k < 3; k++) com[k] /= M;
    double w_world[3];
    for (int r = 0; r < 3; r++) w_world[r] = R[3 * r] * d->u[3] + R[3 * r + 1] * d->u[4] + R[3 * r + 2] * d->u[5];
    const double *v = d->u;        /* base origin velocity, world */

    /* speed target and gait clock */
    double t_gait = s->t_episode - ENV_TROT_STAND;
    double ramp = t_gait <= 0 ? 0 : t_gait >= ENV_TROT_RAMP ? 1 : t_gait / ENV_TROT_RAMP;
    double vdes[3] = {ENV_TROT_SPEED * ramp, 0, 0};
    double adx = (t_gait > 0 && t_gait < ENV_TROT_RAMP) ? ENV_TROT_SPEED / ENV_TROT_RAMP : 0;
    /* heading: yaw of the base x axis */
    double yaw = atan2(R[3], R[0]), cy = cos(yaw), sy = sin(yaw);

    /* the wanted net force and moment on the base (world) */
    double F[3], T[3];
    for (int k = 0; k < 2; k++) {
        t->vint[k] += dt * (vdes[k] - v[k]);
        if (t->vint[k] > vint_max) t->vint[k] = vint_max;
        if (t->vint[k] < -vint_max) t->vint[k] = -vint_max;
    }
    F[0] = M * (kv_xy * (vdes[0] - v[0]) + ki_xy * t->vint[0] + adx);
    F[1] = M * (kv_xy * (vdes[1] - v[1]) + ki_xy * t->vint[1]);
    /* the ground: the base height target is over the mean terrain height under the hips (0 on the plane z = 0) */
    double hground = 0;
    for (int l = 0; l < NLEG; l++)
        hground += 0.25 * ground(m, d->q[0] + cy * t->nominal[l][0] - sy * t->nominal[l][1],
                                 d->q[1] + sy * t->nominal[l][0] + cy * t->nominal[l][1]);
    F[2] = M * (g + kp_z * (t->height + hground - d->q[2]) - kd_z * v[2]);
    /* attitude error toward level with yaw 0: e = 1/2 sum_i (R e_i) x e_i */
    double e[3] = {0.5 * (R[5] - R[7]), 0.5 * (R[6] - R[2]), 0.5 * (R[1] - R[3])};
    for (int k = 0; k < 3; k++) T[k] = kp_att[k] * e[k] - kd_att[k] * w_world[k];

    double p[NLEG][3], J[NLEG][9], vf[NLEG][3], tau[NLEG][3];
    int stance[NLEG], ns = 0;
    for (int l = 0; l < NLEG; l++) {
        foot_state(s, m, d, l, p[l], J[l], vf[l]);
        double ph = t_gait <= 0 ? 0 : leg_phase(t_gait, l);
        stance[l] = ph < 0.5;
        ns += stance[l];
        if (stance[l]) {
            t->swinging[l] = 0;
            continue;
        }
        if (!t->swinging[l]) {     /* lift-off: remember where the foot left the ground */
            memcpy(t->liftoff[l], p[l], sizeof p[l]);
            t->swinging[l] = 1;
        }
        /* Raibert: land so that the hip is over the foot at mid-stance, corrected by the speed error */
        double sw = (ph - 0.5) * 2;                   /* swing progress 0..1 */
        double t_left = (1 - sw) * 0.5 * period, t_stance = 0.5 * period;
        double hip[3] = {d->q[0] + cy * t->nominal[l][0] - sy * t->nominal[l][1],
                         d->q[1] + sy * t->nominal[l][0] + cy * t->nominal[l][1], 0};
        double land[2];
        for (int k = 0; k < 2; k++) {
            double off = v[k] * 0.5 * t_stance + sqrt(t->height / g) * (v[k] - vdes[k]);
            if (off > 0.25) off = 0.25;
            if (off < -0.25) off = -0.25;
            land[k] = hip[k] + v[k] * t_left + off;
        }
        double sm = 0.5 * (1 - cos(M_PI * sw)), dsm = 0.5 * M_PI * sin(M_PI * sw) / (0.5 * period);
        double z0 = t->liftoff[l][2], z1 = t->foot_radius - 0.01 + ground(m, land[0], land[1]);
        double pd_[3], vd[3];
        for (int k = 0; k < 2; k++) {
            pd_[k] = t->liftoff[l][k] + (land[k] - t->liftoff[l][k]) * sm;
            vd[k] = (land[k] - t->liftoff[l][k]) * dsm;
        }
        pd_[2] = z0 + (z1 - z0) * sw + swing_height * sin(M_PI * sw);
        vd[2] = ((z1 - z0) + swing_height * M_PI * cos(M_PI * sw)) / (0.5 * period);
        double f[3];
        for (int k = 0; k < 3; k++) f[k] = kp_swing * (pd_[k] - p[l][k]) + kd_swing * (vd[k] - vf[l][k]);
        for (int c = 0; c < 3; c++) tau[l][c] = fma(J[l][6 + c], f[2], fma(J[l][3 + c], f[1], J[l][c] * f[0]));
    }

    /* stance forces: least-norm f with sum f = F and sum (p - com) x f = T, regularized (a diagonal pair
     * cannot make a moment about the line through its feet) */
    if (ns > 0) {
        double A[36] = {0}, b[6] = {F[0], F[1], F[2], T[0], T[1], T[2]};
        double Ai[NLEG][18];    /* 6 x 3 block of each stance foot: [I; [r]x] */
        for (int l = 0; l < NLEG; l++) {
            if (!stance[l]) continue;
            double r[3] = {p[l][0] - com[0], p[l][1] - com[1], p[l][2] - com[2]};
            double blk[18] = {1, 0, 0, 0, 1, 0, 0, 0, 1, 0, -r[2], r[1], r[2], 0, -r[0], -r[1], r[0], 0};
            memcpy(Ai[l], blk, sizeof blk);
            /* blk blk^T = [[I, X^T], [X, X X^T]] with X = [r]x (rows 3..5 of blk), X X^T = |r|^2 I - r r^T */
            const double *X = blk + 9, rr = r[0] * r[0] + r[1] * r[1] + r[2] * r[2];
            for (int i = 0; i < 3; i++) {
                A[7 * i] += 1;
                for (int j = 0; j < 3; j++) {
                    A[6 * i + 3 + j] += X[3 * j + i];
                    A[6 * (3 + j) + i] += X[3 * j + i];
                    A[6 * (3 + i) + 3 + j] += (i == j ? rr : 0) - r[i] * r[j];
                }
            }
        }
        for (int i = 0; i < 6; i++) A[7 * i] += 1e-3;
        spd_solve(6, A, b);
        const double mu = t->mu * friction_use;
        for (int l = 0; l < NLEG; l++) {
            if (!stance[l]) continue;
            double f[3] = {0, 0, 0};
            for (int k = 0; k < 3; k++)
                for (int i = 0; i < 6; i++) f[k] = fma(Ai[l][3 * i + k], b[i], f[k]);
            if (f[2] < fz_min) f[2] = fz_min;
            double ft = hypot(f[0], f[1]);
            if (ft > mu * f[2]) {
                f[0] *= mu * f[2] / ft;
                f[1] *= mu * f[2] / ft;
            }
            for (int c = 0; c < 3; c++) tau[l][c] = -fma(J[l][6 + c], f[2], fma(J[l][3 + c], f[1], J[l][c] * f[0]));
        }
    }

    const env_anymal_joints *j = &s->joints;
    for (int l = 0; l < NLEG; l++)
        for (int c = 0; c < 3; c++) {
            int i = 3 * l + c;
            s->target[i] = d->q[j->qadr[i]] + tau[l][c] / s->kp;
        }
}
