/* Joint limits, joint friction, damping and armature in the step (sim_step.h), on ANYmal C.
 *
 * Each test that solves a contact problem runs every solver of sim's table (sim_solver_at), so that a solver that
 * mishandles the joint blocks (empty tangent rows, box rows) fails here by name.  The comparisons with MuJoCo are in
 * test_vs_mujoco.c; the task keys' errors are at the end. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "env.h"
#include "env_internal.h"
#include "helpers/coulomb_ref.h"
#include "sim_metrics.h"
#include "sim_solver.h"
#include "sim_dynamics.h"
#include "sim_step.h"
#include "sim_urdf.h"

#define MODEL_PATH "envs/models/anymal_c.urdf"
#define DT 0.005      /* the walk task's physics step (s) */
#define TOL_LIMIT 1e-3 /* rad: how far past (or short of) its limit a driven joint may sit */

static sim_model *load(int fixed_base)
{
    char err[512] = "";
    const sim_urdf_options o = {.fixed_base = fixed_base};
    sim_model *m = sim_urdf_load_file(MODEL_PATH, &o, err, sizeof err);
    cr_assert_not_null(m, "%s", err);
    if (fixed_base) m->terrain.height = -10; /* the base hangs at z = 0: its legs free of the ground */
    return m;
}

static int joint(const sim_model *m, const char *name)
{
    int b = sim_model_joint(m, name);
    cr_assert_gt(b, 0, "no joint %s", name);
    return b;
}

/* The standing pose (HFE +-0.4, KFE -+0.8) on every leg, base at height z (floating base). */
static void stand(const sim_model *m, sim_data *d, double z)
{
    static const char *legs[4] = {"LF", "RF", "LH", "RH"};
    sim_data_reset(m, d);
    if (m->floating) d->q[2] = z;
    for (int l = 0; l < 4; l++) {
        char n[16];
        const int front = l < 2;
        snprintf(n, sizeof n, "%s_HFE", legs[l]);
        d->q[m->body[joint(m, n)].qadr] = front ? 0.4 : -0.4;
        snprintf(n, sizeof n, "%s_KFE", legs[l]);
        d->q[m->body[joint(m, n)].qadr] = front ? -0.8 : 0.8;
    }
}

/* PD toward the standing pose on every joint but the listed HAA joints, which get constant torques. */
static void drive(const sim_model *m, sim_data *d, const double *q0, const int *haa, const double *tau, int nhaa)
{
    for (int b = 1; b < m->nbody; b++) {
        const int k = m->body[b].dof, a = m->body[b].qadr;
        d->tau[k] = 80 * (q0[a] - d->q[a]) - 2 * d->u[k];
    }
    for (int i = 0; i < nhaa; i++) d->tau[m->body[haa[i]].dof] = tau[i];
}

/* The scene of the HAA tests: the standing pose at base height 0.62 m (q0, the PD's target), the four HAA joints
 * and their torques: LF and LH into their upper limits (0.49), RF and RH into their lower (-0.49). */
static void haa_scene(const sim_model *m, sim_data *d, double *q0, int haa[4], double tau[4])
{
    stand(m, d, 0.62);
    memcpy(q0, d->q, sizeof(double) * (size_t)m->nq);
    static const char *const names[4] = {"LF_HAA", "RF_HAA", "LH_HAA", "RH_HAA"};
    for (int i = 0; i < 4; i++) haa[i] = joint(m, names[i]), tau[i] = i % 2 ? -80 : 80;
}

/* HAA joints driven by +-80 N·m into their limits: the limits hold within TOL_LIMIT at every step, and each joint
 * ends at its limit. */
static void limit_holds(int fixed_base)
{
    for (int s = 0; s < sim_solver_count(); s++) {
        const sim_solver_desc *sd = sim_solver_at(s);
        if (!sd || !sd->solve) continue;
        sim_model *m = load(fixed_base);
        m->opt.solver = s;
        sim_data *d = sim_data_new(m);
        cr_assert_not_null(d);
        double q0[SIM_MAX_DOF + 1], tau[4];
        int haa[4];
        haa_scene(m, d, q0, haa, tau);
        double worst = 0;
        int active = 0;
        for (int t = 0; t < 600; t++) {
            drive(m, d, q0, haa, tau, 4);
            cr_assert_eq(sim_step(m, d, DT), 0, "%s: non-finite state at step %d", sd->name, t);
            active += d->stats.nlim_active > 0;
            for (int i = 0; i < 4; i++) {
                const sim_body *b = &m->body[haa[i]];
                const double q = d->q[b->qadr], past = tau[i] > 0 ? q - b->upper : b->lower - q;
                if (past > worst) worst = past;
            }
        }
        cr_log_info("%s base, %s: worst limit violation %.3g mrad", fixed_base ? "fixed" : "floating", sd->name,
                    worst * 1e3);
        cr_expect(worst <= TOL_LIMIT, "%s: HAA %.3g mrad past its limit", sd->name, worst * 1e3);
        cr_expect_gt(active, 0, "%s: no active limit", sd->name);
        for (int i = 0; i < 4; i++) {
            const sim_body *b = &m->body[haa[i]];
            const double lim = tau[i] > 0 ? b->upper : b->lower;
            cr_expect(fabs(d->q[b->qadr] - lim) <= TOL_LIMIT, "%s: %s at %.6f, limit %.6f", sd->name, b->joint_name,
                      d->q[b->qadr], lim);
        }
        sim_data_destroy(&d);
        sim_model_destroy(&m);
    }
}

Test(joint_limits, haa_driven_into_limit_fixed_base, .timeout = 120) { limit_holds(1); }
Test(joint_limits, haa_driven_into_limit_floating_base, .timeout = 120) { limit_holds(0); }

/* The sweeps solve the contacts with the closed limits eliminated (sim_solver.c), since per-block sweeps converge
 * slowly on a limit and the foot contact of its leg.  On the contact problems of the floating-base scene above (HAA
 * pressed into its limits, the feet on the ground), cold-started: the elimination's answer satisfies Coulomb's
 * conditions by the test's own reference (coulomb_ref_violation, long double) within the solver's tolerance, as the
 * per-block sweeps' answer does, and takes fewer sweeps in total. */
Test(joint_limits, eliminated_limits_meet_coulomb_in_fewer_sweeps, .timeout = 120)
{
    sim_model *m = load(0);
    sim_data *d = sim_data_new(m);
    cr_assert_not_null(d);
    double q0[SIM_MAX_DOF + 1], tau[4];
    int haa[4];
    haa_scene(m, d, q0, haa, tau);
    long sweeps[2] = {0, 0};
    int problems = 0, fewer = 0;
    for (int t = 0; t < 300; t++) {
        drive(m, d, q0, haa, tau, 4);
        cr_assert_eq(sim_step(m, d, DT), 0);
        const int n = d->ncon + d->nlim + d->nfric;
        if (d->nlim == 0 || d->ncon == 0 || n > COULOMB_REF_VIOLATION_MAX) continue;
        int its[2];
        for (int elim = 0; elim < 2; elim++) {
            sim_solver_params p;
            sim_solver_default_params(&p);
            p.max_iter = 2000;
            p.limit_rounds = elim ? 4 : 0;
            double l[3 * SIM_SOLVER_MAX_CONTACTS] = {0};
            sim_solver_stats st;
            const int r = sim_solve_coulomb_bisection(n, d->G, d->cfree, d->mu, l, &p, &st);
            cr_assert_eq(r, SIM_SOLVER_OK, "step %d (%d blocks, %d limits), elimination %d: not converged (error %g)",
                         t, n, d->nlim, elim, st.error);
            const double viol = coulomb_ref_violation(n, d->G, d->cfree, d->mu, l);
            cr_assert_leq(viol, p.tol, "step %d, elimination %d: the reference measures %g", t, elim, viol);
            its[elim] = st.iterations;
            sweeps[elim] += st.iterations;
        }
        fewer += its[1] < its[0];
        problems++;
    }
    cr_log_info("%d problems with limits and contacts: %ld sweeps with the limits eliminated, %ld as blocks; fewer on "
                "%d", problems, sweeps[1], sweeps[0], fewer);
    cr_assert_geq(problems, 100);
    cr_assert_lt(2 * sweeps[1], sweeps[0]);
    sim_data_destroy(&d);
    sim_model_destroy(&m);
}

/* With opt.joint_limits = 0 (and for a task, joint_limits 0) nothing holds the joint: the same drive passes the
 * limit; the test above can fail. */
Test(joint_limits, model_option_turns_limits_off)
{
    sim_model *m = load(1);
    m->opt.joint_limits = 0;
    cr_assert_eq(sim_model_joint_blocks(m), 0);
    sim_data *d = sim_data_new(m);
    stand(m, d, 0);
    double q0[SIM_MAX_DOF + 1];
    memcpy(q0, d->q, sizeof(double) * (size_t)m->nq);
    const int haa = joint(m, "LF_HAA");
    const double tau = 80;
    for (int t = 0; t < 200; t++) {
        drive(m, d, q0, &haa, &tau, 1);
        sim_step(m, d, DT);
        cr_assert_eq(d->stats.nlim, 0);
    }
    cr_assert_gt(d->q[m->body[haa].qadr], m->body[haa].upper + 0.1);
    sim_data_destroy(&d);
    sim_model_destroy(&m);
}

/* Continuous joints, and joints without a finite range (lower >= upper, e.g. a zeroed body), get no limit row. */
Test(joint_limits, unlimited_joints_have_no_rows)
{
    static const char urdf[] =
        "<robot name=\"r\"><link name=\"a\"><inertial><mass value=\"1\"/><inertia ixx=\"1\" iyy=\"1\" izz=\"1\" "
        "ixy=\"0\" ixz=\"0\" iyz=\"0\"/></inertial></link>"
        "<link name=\"b\"><inertial><mass value=\"1\"/><inertia ixx=\"1\" iyy=\"1\" izz=\"1\" ixy=\"0\" ixz=\"0\" "
        "iyz=\"0\"/></inertial></link>"
        "<link name=\"c\"><inertial><mass value=\"1\"/><inertia ixx=\"1\" iyy=\"1\" izz=\"1\" ixy=\"0\" ixz=\"0\" "
        "iyz=\"0\"/></inertial></link>"
        "<joint name=\"j1\" type=\"continuous\"><parent link=\"a\"/><child link=\"b\"/><axis xyz=\"0 0 1\"/></joint>"
        "<joint name=\"j2\" type=\"revolute\"><parent link=\"b\"/><child link=\"c\"/><axis xyz=\"0 0 1\"/>"
        "<limit lower=\"-1\" upper=\"1\" effort=\"1\" velocity=\"1\"/></joint></robot>";
    char err[256];
    sim_model *m = sim_urdf_load_string(urdf, sizeof urdf - 1, "r", NULL, err, sizeof err);
    cr_assert_not_null(m, "%s", err);
    cr_assert_eq(sim_model_joint_limited(m, joint(m, "j1")), 0);
    cr_assert_eq(sim_model_joint_limited(m, joint(m, "j2")), 1);
    cr_assert_eq(sim_model_joint_blocks(m), 1);
    m->body[joint(m, "j2")].lower = m->body[joint(m, "j2")].upper = 0;
    cr_assert_eq(sim_model_joint_blocks(m), 0);
    sim_model_destroy(&m);
}

/* The limit rows a step considers follow the reach rule of sim_step.h, checked from the definition on states near
 * and past the limits: a limited joint gets a row for its nearer side when the gap there is below margin + dt times
 * the larger of its start and free speeds toward it (if positive), in joint order; the step's limit_violation is the
 * largest -gap.  Two models, so that both of the step's scans are checked: ANYmal C's 12 limited joints have
 * consecutive dofs (scanned four at a time), and with RF_HFE unlimited they do not (scanned one at a time). */
Test(joint_limits, rows_within_reach_follow_the_reach_rule, .timeout = 60)
{
    for (int variant = 0; variant < 2; variant++) {
        sim_model *m = load(0);
        if (variant) {
            sim_body *b = &m->body[joint(m, "RF_HFE")];
            b->lower = -INFINITY, b->upper = INFINITY;
            char err[256];
            cr_assert_eq(sim_model_finalize(m, err, sizeof err), 0, "%s", err);
        }
        sim_data *d = sim_data_new(m);
        cr_assert_not_null(d);
        cr_assert_eq(d->njlim, variant ? 11 : 12);
        unsigned long long x = 88172645463325252ull;
        int rows = 0, upper = 0, lower = 0, viol_steps = 0;
        for (int t = 0; t < 400; t++) {
            stand(m, d, 0.7);
            double q0[SIM_MAX_DOF + 1], u0[SIM_MAX_DOF];
            for (int j = 0; j < d->njlim; j++) { /* each joint within 0.1 rad of a limit, on either side of it */
                const sim_body *b = &m->body[m->dof_body[d->jdof[j]]];
                double r[4];
                for (int a = 0; a < 4; a++) {
                    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                    r[a] = (double)(x >> 11) / 9007199254740992.0 - 0.5;
                }
                const double at = r[0] > 0 ? b->upper : b->lower;
                d->q[b->qadr] = at + 0.2 * r[1] * ((t % 4 == 0) ? 0.01 : 1.0);
                /* speeds and torques: the start and the free speeds differ, in size and in sign */
                d->u[b->dof] = 6 * r[2] * (t % 3 == 0 ? 0.0 : 1.0);
                d->tau[b->dof] = 160 * r[3];
            }
            memcpy(q0, d->q, sizeof(double) * (size_t)m->nq);
            memcpy(u0, d->u, sizeof(double) * (size_t)m->nv);
            cr_assert_eq(sim_step(m, d, DT), 0);
            int want[2 * SIM_MAX_DOF], nw = 0;
            double viol = 0;
            for (int j = 0; j < d->njlim; j++) {
                const int k = d->jdof[j];
                const sim_body *b = &m->body[m->dof_body[k]];
                const double gl = q0[b->qadr] - b->lower, gu = b->upper - q0[b->qadr];
                const int up = gu < gl;
                const double g = up ? gu : gl, s = up ? 1.0 : -1.0;
                const double toward = fmax(fmax(s * u0[k], s * d->ufree[k]), 0.0);
                if (-g > viol) viol = -g;
                if (g < m->opt.margin + DT * toward) want[nw++] = 3 * k + up;
            }
            cr_assert_eq(d->stats.nlim, nw, "variant %d, state %d: %d limit rows, the rule gives %d", variant, t,
                         d->stats.nlim, nw);
            for (int i = 0; i < nw; i++) {
                cr_assert_eq(d->jblk[i], want[i], "variant %d, state %d: row %d is %d, the rule gives %d", variant,
                             t, i, d->jblk[i], want[i]);
                upper += want[i] % 3 == 1, lower += want[i] % 3 == 0;
            }
            cr_assert_eq(d->stats.limit_violation, viol, "variant %d, state %d: violation %.17g, the rule gives %.17g",
                         variant, t, d->stats.limit_violation, viol);
            rows += nw, viol_steps += viol > 0;
        }
        cr_log_info("variant %d: %d limit rows (%d upper, %d lower), %d states past a limit", variant, rows, upper,
                    lower, viol_steps);
        cr_expect_gt(upper, 100);
        cr_expect_gt(lower, 100);
        cr_expect_gt(viol_steps, 100);
        cr_expect_lt(rows, 400 * d->njlim); /* some joints out of reach */
        sim_data_destroy(&d);
        sim_model_destroy(&m);
    }
}

/* 1/2 u^T M u with the packed M of d's last smooth stage (the step's start, until the next smooth stage). */
static double kinetic(const sim_model *m, const sim_data *d, const double *u)
{
    double y[SIM_MAX_DOF], e = 0;
    sim_mul_m(m, d, u, y);
    for (int k = 0; k < m->nv; k++) e += u[k] * y[k];
    return 0.5 * e;
}

/* A leg swinging into its limit (zero gravity, no drive).  At every step with a limit impulse, the impulse takes
 * energy out: 1/2 u+^T M u+ <= 1/2 ufree^T M ufree with the step's M (the impulse alone, apart from the integrator's
 * own drift); and at the impact step (the first with a limit impulse) the kinetic energy grows by no more than the
 * integrator's drift of the steps before it, without a limit (semi-implicit Euler does not conserve energy). */
Test(joint_limits, limit_impact_adds_no_energy, .timeout = 120)
{
    for (int s = 0; s < sim_solver_count(); s++) {
        const sim_solver_desc *sd = sim_solver_at(s);
        if (!sd || !sd->solve) continue;
        for (int fixed = 0; fixed < 2; fixed++) {
            sim_model *m = load(fixed);
            m->opt.solver = s;
            m->opt.sp.tol = 1e-10; /* energy at the solver's tolerance: lambda tol (N·s · m/s) */
            m->opt.sp.max_iter = 2000;
            m->gravity[2] = 0;
            sim_data *d = sim_data_new(m);
            stand(m, d, 2.0);
            const int haa = joint(m, "LF_HAA"), kfe = joint(m, "LF_KFE");
            d->u[m->body[haa].dof] = 6, d->u[m->body[kfe].dof] = 3;
            int impacts = 0, was = 0;
            double drift = 0; /* the largest growth of the kinetic energy over a step without a limit impulse */
            const char *base = fixed ? "fixed" : "floating";
            for (int t = 0; t < 200; t++) {
                sim_smooth(m, d);
                const double before = sim_energy_kinetic(m, d);
                sim_step(m, d, DT);
                const int now = d->stats.nlim_active > 0;
                if (now) {
                    const double ef = kinetic(m, d, d->ufree), eu = kinetic(m, d, d->u);
                    cr_expect(eu <= ef * (1 + 1e-12) + 1e-15, "%s, %s base, step %d: the limit impulse adds %.3g J",
                              sd->name, base, t, eu - ef);
                }
                sim_smooth(m, d);
                const double after = sim_energy_kinetic(m, d);
                if (!now && after - before > drift) drift = after - before;
                if (now && !was) {
                    impacts++;
                    cr_expect(after <= before + drift, "%s, %s base, impact at step %d: kinetic energy %.12g -> %.12g"
                              " (drift %.3g J)", sd->name, base, t, before, after, drift);
                }
                was = now;
            }
            cr_expect_gt(impacts, 0, "%s: the leg never reached its limit", sd->name);
            sim_data_destroy(&d);
            sim_model_destroy(&m);
        }
    }
}

/* Coulomb joint friction f (a box row, |lambda| <= f dt): from rest a torque below f moves nothing; a torque tau
 * above it moves the joint as tau - f would without friction. */
Test(joint_limits, joint_friction_sticks_and_slips)
{
    for (int s = 0; s < sim_solver_count(); s++) {
        const sim_solver_desc *sd = sim_solver_at(s);
        if (!sd || !sd->solve) continue;
        sim_model *m = load(1);
        m->opt.solver = s;
        m->opt.sp.tol = 1e-12;
        m->opt.sp.max_iter = 1000;
        m->gravity[2] = 0;
        const int kfe = joint(m, "LF_KFE");
        const int k = m->body[kfe].dof;
        m->body[kfe].friction = 5;
        cr_assert_eq(sim_model_joint_blocks(m), 13); /* 12 limited joints (all out of reach here), 1 friction row */
        sim_data *d = sim_data_new(m), *ref = sim_data_new(m);
        stand(m, d, 0);
        d->tau[k] = 4;
        sim_step(m, d, DT);
        cr_expect_eq(d->stats.nfriction, 1, "%s", sd->name);
        for (int j = 0; j < m->nv; j++) cr_expect(fabs(d->u[j]) < 1e-9, "%s: sticking, u[%d] = %g", sd->name, j, d->u[j]);
        /* slipping: one step from rest with 8 N·m against 5 N·m of friction = 3 N·m without friction */
        stand(m, d, 0);
        d->tau[k] = 8;
        sim_step(m, d, DT);
        m->body[kfe].friction = 0;
        stand(m, ref, 0);
        ref->tau[k] = 3;
        sim_step(m, ref, DT);
        for (int j = 0; j < m->nv; j++)
            cr_expect(fabs(d->u[j] - ref->u[j]) <= 1e-9 * (1 + fabs(ref->u[j])), "%s: slipping, u[%d] = %.12g vs %.12g",
                      sd->name, j, d->u[j], ref->u[j]);
        cr_expect_gt(fabs(ref->u[k]), 0.01);
        sim_data_destroy(&ref);
        sim_data_destroy(&d);
        sim_model_destroy(&m);
    }
}

/* Damping is implicit: a damping beyond explicit Euler's stability bound (dt c / M_kk > 2) decays the joint's
 * velocity monotonically without a sign change, as (M + dt c) u+ = M u does. */
Test(joint_limits, damping_is_implicit)
{
    sim_model *m = load(1);
    m->gravity[2] = 0;
    const int kfe = joint(m, "LF_KFE");
    const int k = m->body[kfe].dof;
    m->body[kfe].damping = 10;
    sim_data *d = sim_data_new(m);
    stand(m, d, 0);
    sim_smooth(m, d);
    cr_assert_gt(DT * 10 / d->Mp[m->dof_adr[k]], 2, "explicit Euler would be stable: not a test of implicitness");
    d->u[k] = 5;
    double prev = 5;
    for (int t = 0; t < 5; t++) {
        sim_step(m, d, DT);
        cr_assert(d->u[k] > 0 && d->u[k] < 0.5 * prev, "step %d: u = %g after %g", t, d->u[k], prev);
        prev = d->u[k];
    }
    sim_data_destroy(&d);
    sim_model_destroy(&m);
}

/* Armature adds to M's diagonal at the joint's dof, and to nothing else. */
Test(joint_limits, armature_on_the_diagonal)
{
    sim_model *m = load(0);
    sim_data *a = sim_data_new(m), *b = sim_data_new(m);
    stand(m, a, 0.6);
    stand(m, b, 0.6);
    sim_smooth(m, a);
    const int kfe = joint(m, "RH_KFE");
    m->body[kfe].armature = 0.25;
    sim_smooth(m, b);
    for (int k = 0; k < m->nM; k++) {
        const double want = a->Mp[k] + (k == m->dof_adr[m->body[kfe].dof] ? 0.25 : 0);
        cr_assert_eq(b->Mp[k], want, "Mp[%d]", k);
    }
    sim_data_destroy(&b);
    sim_data_destroy(&a);
    sim_model_destroy(&m);
}

/* ---------------------------------------------------------------- task keys */

static const char *const joint_tasks[] = {"anymal_c-walk", "anymal_c-stand", "paper-trot"};

/* The keys reach the model: limits on or off, damping, friction and armature on the 12 joints. */
Test(joint_limits, task_keys_reach_the_model)
{
    for (size_t t = 0; t < sizeof joint_tasks / sizeof joint_tasks[0]; t++) {
        char err[512] = "";
        env_kv kv[] = {{"joint_limits", 0}, {"joint_damping", 1.5}, {"joint_friction", 0.25}, {"joint_armature", 0.125}};
        env_t *e = env_new(joint_tasks[t], 1, kv, 4, 0, ENV_AUTORESET_NEXT_STEP, err, sizeof err);
        cr_assert_not_null(e, "%s: %s", joint_tasks[t], err);
        const sim_model *m = env_model(e);
        cr_assert_eq(m->opt.joint_limits, 0);
        int n = 0;
        for (int b = 1; b < m->nbody; b++) {
            const sim_body *bb = &m->body[b];
            if (bb->damping == 1.5 && bb->friction == 0.25 && bb->armature == 0.125) n++;
        }
        cr_assert_eq(n, 12, "%s: %d joints configured", joint_tasks[t], n);
        cr_assert_eq(sim_model_joint_blocks(m), 12);
        env_destroy(&e);
    }
}

/* Out-of-range values are refused with a message naming the key. */
Test(joint_limits, bad_values_name_the_key)
{
    static const struct { const char *key; double v; } bad[] = {
        {"joint_limits", 2}, {"joint_limits", 0.5}, {"joint_damping", -1}, {"joint_friction", -0.1},
        {"joint_friction", 1e6}, {"joint_armature", -1}, {"joint_armature", NAN}};
    for (size_t t = 0; t < sizeof joint_tasks / sizeof joint_tasks[0]; t++)
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            char err[512] = "";
            env_kv kv[] = {{bad[i].key, bad[i].v}};
            env_t *e = env_new(joint_tasks[t], 1, kv, 1, 0, ENV_AUTORESET_NEXT_STEP, err, sizeof err);
            cr_expect_null(e, "%s accepted %s = %g", joint_tasks[t], bad[i].key, bad[i].v);
            cr_expect(strstr(err, bad[i].key) != NULL, "%s, %s = %g: message '%s'", joint_tasks[t], bad[i].key,
                      bad[i].v, err);
            env_destroy(&e);
        }
}

/* Defaults: limits on in every task (joint_limits 0 gives legged_gym's limit-free description); the dynamics keys 0. */
Test(joint_limits, task_defaults)
{
    for (int t = 0; t < env_registry_count(); t++) {
        const env_spec *s = env_registry_spec(t);
        const env_config_key *lim = NULL;
        for (int i = 0; i < s->nconfig; i++) {
            if (!strcmp(s->config[i].key, "joint_limits")) lim = &s->config[i];
            if (!strncmp(s->config[i].key, "joint_", 6) && strcmp(s->config[i].key, "joint_limits"))
                cr_expect_eq(s->config[i].def, 0, "%s: %s", s->name, s->config[i].key);
        }
        cr_assert_not_null(lim, "%s has no joint_limits key", s->name);
        cr_expect_eq(lim->def, 1, "%s", s->name);
    }
}
