/* Dynamics against closed forms: a double pendulum's M, h and accelerations, free-floating
 * momentum/energy conservation, LTDL solves, Jacobians by finite differences, quaternion update. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sim_dynamics.h"
#include "sim_spatial.h"
#include "sim_urdf.h"

static unsigned long long rng_state = 88172645463325252ull;
static double urand(double lo, double hi)
{
    rng_state ^= rng_state << 13; rng_state ^= rng_state >> 7; rng_state ^= rng_state << 17;
    return lo + (hi - lo) * ((rng_state >> 11) * (1.0 / 9007199254740992.0));
}

/* Planar double pendulum about y: link k hangs along -z at q = 0, length l, COM at lc, inertia Iy. */
static const double L1 = 0.7, LC1 = 0.3, M1 = 2.0, I1 = 0.05, LC2 = 0.4, M2 = 1.5, I2 = 0.03, G = 9.81;

static sim_model *pendulum(void)
{
    sim_model *m = sim_model_new();
    m->nbody = 3;
    sim_body *b = m->body;
    strcpy(b[0].name, "world_link");
    b[0].parent = -1; b[0].joint_type = SIM_JOINT_ROOT_FIXED;
    b[0].rot[0] = b[0].rot[4] = b[0].rot[8] = 1;
    for (int i = 1; i <= 2; i++) {
        snprintf(b[i].name, sizeof b[i].name, "link%d", i);
        snprintf(b[i].joint_name, sizeof b[i].joint_name, "j%d", i);
        b[i].parent = i - 1;
        b[i].joint_type = SIM_JOINT_CONTINUOUS;
        b[i].rot[0] = b[i].rot[4] = b[i].rot[8] = 1;
        b[i].axis[1] = 1;
        b[i].lower = -INFINITY; b[i].upper = INFINITY;
    }
    b[2].pos[2] = -L1;
    b[1].mass = M1; b[1].com[2] = -LC1;
    b[2].mass = M2; b[2].com[2] = -LC2;
    /* Iy as given, other axes arbitrary (they do not enter planar motion) */
    b[1].inertia[0] = 0.04; b[1].inertia[4] = I1; b[1].inertia[8] = 0.02;
    b[2].inertia[0] = 0.02; b[2].inertia[4] = I2; b[2].inertia[8] = 0.01;
    char err[256];
    cr_assert_eq(sim_model_finalize(m, err, sizeof err), 0, "%s", err);
    return m;
}

Test(dynamics, double_pendulum_closed_form)
{
    sim_model *m = pendulum();
    sim_data *d = sim_data_new(m);
    cr_assert_eq(m->nv, 2);
    double worst = 0;
    for (int t = 0; t < 500; t++) {
        double q1 = urand(-3, 3), q2 = urand(-3, 3), w1 = urand(-5, 5), w2 = urand(-5, 5);
        d->q[0] = q1; d->q[1] = q2; d->u[0] = w1; d->u[1] = w2;
        d->tau[0] = urand(-10, 10); d->tau[1] = urand(-10, 10);
        sim_smooth(m, d);
        sim_full_m(m, d);
        sim_forward(m, d);
        double c2 = cos(q2), s2 = sin(q2);
        double M11 = I1 + I2 + M1 * LC1 * LC1 + M2 * (L1 * L1 + LC2 * LC2 + 2 * L1 * LC2 * c2);
        double M12 = I2 + M2 * (LC2 * LC2 + L1 * LC2 * c2);
        double M22 = I2 + M2 * LC2 * LC2;
        double hh = M2 * L1 * LC2 * s2;
        double h1 = -hh * (2 * w1 * w2 + w2 * w2) + M1 * G * LC1 * sin(q1) + M2 * G * (L1 * sin(q1) + LC2 * sin(q1 + q2));
        double h2 = hh * w1 * w1 + M2 * G * LC2 * sin(q1 + q2);
        double r1 = d->tau[0] - h1, r2 = d->tau[1] - h2, det = M11 * M22 - M12 * M12;
        double a1 = (M22 * r1 - M12 * r2) / det, a2 = (M11 * r2 - M12 * r1) / det;
        double e[] = {d->M[0] - M11, d->M[1] - M12, d->M[2] - M12, d->M[3] - M22,
                      d->h[0] - h1, d->h[1] - h2, (d->udot[0] - a1) / (1 + fabs(a1)), (d->udot[1] - a2) / (1 + fabs(a2))};
        for (size_t k = 0; k < sizeof e / sizeof e[0]; k++) worst = fmax(worst, fabs(e[k]));
    }
    cr_log_info("double pendulum: worst abs error %.3g", worst);
    cr_assert_lt(worst, 1e-11, "double pendulum deviates from closed form by %g", worst);
    sim_data_destroy(&d);
    sim_model_destroy(&m);
}

/* The pendulum simulated with a small step follows the closed-form ODE integrated by RK4. */
static void pend_rhs(const double *x, double *dx)
{
    double q1 = x[0], q2 = x[1], w1 = x[2], w2 = x[3];
    double c2 = cos(q2), s2 = sin(q2);
    double M11 = I1 + I2 + M1 * LC1 * LC1 + M2 * (L1 * L1 + LC2 * LC2 + 2 * L1 * LC2 * c2);
    double M12 = I2 + M2 * (LC2 * LC2 + L1 * LC2 * c2), M22 = I2 + M2 * LC2 * LC2;
    double hh = M2 * L1 * LC2 * s2;
    double h1 = -hh * (2 * w1 * w2 + w2 * w2) + M1 * G * LC1 * sin(q1) + M2 * G * (L1 * sin(q1) + LC2 * sin(q1 + q2));
    double h2 = hh * w1 * w1 + M2 * G * LC2 * sin(q1 + q2);
    double det = M11 * M22 - M12 * M12;
    dx[0] = w1; dx[1] = w2;
    dx[2] = (M22 * -h1 - M12 * -h2) / det;
    dx[3] = (M11 * -h2 - M12 * -h1) / det;
}

Test(dynamics, double_pendulum_trajectory)
{
    sim_model *m = pendulum();
    sim_data *d = sim_data_new(m);
    double x[4] = {1.0, -0.5, 0.0, 0.0};
    d->q[0] = x[0]; d->q[1] = x[1];
    const double dt = 1e-5, T = 1.0;
    int n = (int)(T / dt + 0.5);
    for (int i = 0; i < n; i++) {
        sim_smooth(m, d);
        sim_forward(m, d);
        sim_integrate(m, d, dt);
        double k1[4], k2[4], k3[4], k4[4], t[4];
        pend_rhs(x, k1);
        for (int j = 0; j < 4; j++) t[j] = x[j] + 0.5 * dt * k1[j];
        pend_rhs(t, k2);
        for (int j = 0; j < 4; j++) t[j] = x[j] + 0.5 * dt * k2[j];
        pend_rhs(t, k3);
        for (int j = 0; j < 4; j++) t[j] = x[j] + dt * k3[j];
        pend_rhs(t, k4);
        for (int j = 0; j < 4; j++) x[j] += dt / 6 * (k1[j] + 2 * k2[j] + 2 * k3[j] + k4[j]);
    }
    double err = fmax(fabs(d->q[0] - x[0]), fabs(d->q[1] - x[1]));
    cr_log_info("pendulum after %.1f s: q = (%.6f, %.6f), RK4 (%.6f, %.6f)", T, d->q[0], d->q[1], x[0], x[1]);
    cr_assert_lt(err, 2e-3, "trajectory error %g rad (first-order integrator, dt %g)", err, dt);
    cr_assert_float_eq(d->time, T, 1e-9);
    sim_data_destroy(&d);
    sim_model_destroy(&m);
}

static sim_model *anymal(void)
{
    char err[512];
    sim_model *m = sim_urdf_load_file("envs/models/anymal_c.urdf", NULL, err, sizeof err);
    cr_assert_not_null(m, "loading ANYmal C: %s", err);
    return m;
}

static void random_state(const sim_model *m, sim_data *d, double vscale)
{
    double qn = 0;
    for (int k = 0; k < 3; k++) d->q[k] = urand(-1, 1);
    for (int k = 3; k < 7; k++) { d->q[k] = urand(-1, 1); qn += d->q[k] * d->q[k]; }
    for (int k = 3; k < 7; k++) d->q[k] /= sqrt(qn);
    for (int k = 7; k < m->nq; k++) d->q[k] = urand(-1.5, 1.5);
    for (int k = 0; k < m->nv; k++) d->u[k] = urand(-vscale, vscale);
}

Test(dynamics, ltdl_solve_matches_mass_matrix)
{
    sim_model *m = anymal();
    sim_data *d = sim_data_new(m);
    double worst = 0;
    for (int t = 0; t < 200; t++) {
        random_state(m, d, 2);
        sim_smooth(m, d);
        sim_full_m(m, d);
        double x[64], b[64], y[64];
        for (int k = 0; k < m->nv; k++) b[k] = x[k] = urand(-1, 1);
        sim_solve_m(m, d, x);         /* x = M^-1 b */
        sim_mul_m(m, d, x, y);        /* y = M x ?= b */
        /* dense product too */
        for (int i = 0; i < m->nv; i++) {
            double s = 0;
            for (int j = 0; j < m->nv; j++) s += d->M[i * m->nv + j] * x[j];
            worst = fmax(worst, fmax(fabs(y[i] - b[i]), fabs(s - b[i])));
        }
        /* symmetric positive definite: D > 0 */
        for (int k = 0; k < m->nv; k++) cr_assert_gt(d->LD[m->dof_adr[k]], 0);
    }
    cr_assert_lt(worst, 1e-10, "M M^-1 b differs from b by %g", worst);
    sim_data_destroy(&d);
    sim_model_destroy(&m);
}

/* The point Jacobian equals the finite-difference derivative of the point's position. */
Test(dynamics, jacobian_finite_difference)
{
    sim_model *m = anymal();
    sim_data *d = sim_data_new(m), *e = sim_data_new(m);
    double J[3 * 64], Jr[3 * 64];
    double worst = 0;
    for (int t = 0; t < 20; t++) {
        random_state(m, d, 1);
        sim_kinematics(m, d);
        for (int b = 0; b < m->nbody; b++) {
            double local[3] = {urand(-0.1, 0.1), urand(-0.1, 0.1), urand(-0.1, 0.1)}, p[3];
            sim_point_world(m, d, b, local, p);
            sim_jacobian(m, d, b, p, J, Jr);
            for (int k = 0; k < m->nv; k++) {
                const double hstep = 1e-7;
                memcpy(e->q, d->q, sizeof(double) * m->nq);
                memset(e->u, 0, sizeof(double) * m->nv);
                e->u[k] = 1;
                sim_integrate_pos(m, e, hstep);
                sim_kinematics(m, e);
                double p2[3];
                sim_point_world(m, e, b, local, p2);
                for (int j = 0; j < 3; j++) worst = fmax(worst, fabs((p2[j] - p[j]) / hstep - J[j * m->nv + k]));
            }
        }
    }
    cr_assert_lt(worst, 1e-5, "Jacobian vs finite difference: %g", worst);
    sim_data_destroy(&d);
    sim_data_destroy(&e);
    sim_model_destroy(&m);
}

/* Without gravity the free-floating robot conserves spatial momentum and kinetic energy. */
Test(dynamics, free_floating_conservation, .timeout = 120)
{
    sim_model *m = anymal();
    m->gravity[2] = 0;
    sim_data *d = sim_data_new(m);
    random_state(m, d, 1.0);
    sim_smooth(m, d);
    double p0[6], p1[6];
    sim_momentum(m, d, p0);
    double e0 = sim_energy_kinetic(m, d);
    const double dt = 1e-4;
    double emax = 0, pmax = 0;
    for (int i = 0; i < 100000; i++) { /* 10 s */
        sim_forward(m, d);
        sim_integrate(m, d, dt);
        sim_smooth(m, d);
        if (i % 100 == 99) {
            sim_momentum(m, d, p1);
            double e1 = sim_energy_kinetic(m, d);
            emax = fmax(emax, fabs(e1 - e0) / e0);
            for (int j = 0; j < 6; j++) pmax = fmax(pmax, fabs(p1[j] - p0[j]) / (1 + fabs(p0[j])));
        }
    }
    cr_log_info("free floating 10 s: relative energy drift %.3g, momentum drift %.3g", emax, pmax);
    cr_assert_lt(emax, 1e-3, "kinetic energy drift %g", emax);
    cr_assert_lt(pmax, 1e-4, "momentum drift %g", pmax);
    double qn = 0;
    for (int k = 3; k < 7; k++) qn += d->q[k] * d->q[k];
    cr_assert_float_eq(qn, 1.0, 1e-12);
    sim_data_destroy(&d);
    sim_model_destroy(&m);
}

/* With gravity and no contact, the COM falls with g and total energy is conserved. */
Test(dynamics, free_fall)
{
    sim_model *m = anymal();
    sim_data *d = sim_data_new(m);
    random_state(m, d, 0.5);
    sim_smooth(m, d);
    double c0[3] = {0}, c1[3] = {0}, pm0[6], pm1[6];
    sim_momentum(m, d, pm0);
    const double dt = 1e-4, T = 0.5;
    int n = (int)(T / dt + 0.5);
    double E0 = sim_energy_kinetic(m, d) + sim_energy_potential(m, d);
    for (int i = 0; i < n; i++) {
        sim_forward(m, d);
        sim_integrate(m, d, dt);
        sim_smooth(m, d);
    }
    sim_momentum(m, d, pm1);
    /* linear momentum changes by M g T exactly (gravity is the only external force) */
    double mt = m->total_mass;
    /* semi-implicit Euler conserves momentum to O(dt): 1e-4 s steps leave ~1e-4 relative drift */
    cr_assert_float_eq(pm1[5] - pm0[5], -9.81 * mt * T, 1e-3 * mt);
    cr_assert_float_eq(pm1[3], pm0[3], 1e-3 * mt);
    cr_assert_float_eq(pm1[4], pm0[4], 1e-3 * mt);
    double E1 = sim_energy_kinetic(m, d) + sim_energy_potential(m, d);
    cr_assert_lt(fabs(E1 - E0) / (fabs(E0) + 1), 1e-3, "energy drift %g -> %g", E0, E1);
    (void)c0; (void)c1;
    sim_data_destroy(&d);
    sim_model_destroy(&m);
}

/* The quaternion update rotates by exactly |w| dt about the body axis and stays unit. */
Test(dynamics, quaternion_update)
{
    sim_model *m = anymal();
    sim_data *d = sim_data_new(m);
    d->u[3 + 2] = 2.0; /* 2 rad/s about body z */
    for (int i = 0; i < 1000; i++) sim_integrate_pos(m, d, 1e-3);
    /* rotation of 2 rad about z: q = (cos 1, 0, 0, sin 1) */
    cr_assert_float_eq(d->q[3], cos(1.0), 1e-12);
    cr_assert_float_eq(d->q[6], sin(1.0), 1e-12);
    /* body-frame rates: after a 90 deg yaw, body x rate rotates the world about world y */
    sim_data_reset(m, d);
    d->q[3] = cos(M_PI / 4); d->q[6] = sin(M_PI / 4);
    d->u[3] = 0.1;
    sim_integrate_pos(m, d, 1.0);
    sim_kinematics(m, d);
    /* body x is world y, so the roll is a rotation of 0.1 rad about world y: the base x axis stays
     * (0, 1, 0), body y = (-1, 0, 0) -> (-cos a, 0, sin a), body z -> (sin a, 0, cos a) */
    cr_assert_float_eq(d->xrot[0], 0.0, 1e-12);
    cr_assert_float_eq(d->xrot[3], 1.0, 1e-12);
    cr_assert_float_eq(d->xrot[1], -cos(0.1), 1e-12);
    cr_assert_float_eq(d->xrot[7], sin(0.1), 1e-12);
    cr_assert_float_eq(d->xrot[2], sin(0.1), 1e-12);
    cr_assert_float_eq(d->xrot[8], cos(0.1), 1e-12);
    sim_data_destroy(&d);
    sim_model_destroy(&m);
}

Test(dynamics, data_is_one_allocation_and_reset)
{
    sim_model *m = anymal();
    sim_data *d = sim_data_new(m);
    cr_assert_not_null(d);
    /* all arrays point inside [d, d + nbytes) */
    const char *lo = (const char *)d, *hi = lo + d->nbytes;
    const double *ptrs[] = {d->q, d->u, d->tau, d->xpos, d->xrot, d->M, d->LD, d->h, d->scratch};
    for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++)
        cr_assert((const char *)ptrs[i] >= lo && (const char *)ptrs[i] < hi);
    cr_assert_float_eq(d->q[3], 1.0, 0);
    sim_data_destroy(&d);
    cr_assert_null(d);
    sim_model_destroy(&m);
}

/* The multiply-adds sim/ writes out round once on every target (the bits follow the source, not -march): with
 * a = 1 + 2^-52, b = 1 - 2^-52, a b = 1 - 2^-104 exactly, so a b - 1 is -2^-104 fused and 0 with a rounded
 * product.  The same for every element of the vector forms. */
Test(dynamics, multiply_adds_round_once_on_every_target)
{
    volatile double av = 1.0 + 0x1p-52, bv = 1.0 - 0x1p-52; /* not folded at compile time */
    const double a = av, b = bv;
    cr_assert_eq(sim_fma(a, b, -1.0), -0x1p-104);
    cr_assert_eq(sim_fma(-a, b, 1.0), 0x1p-104);
    const sim_v4d_ va = sim_splat4(a), vb = {b, b, b, b}, one = sim_splat4(1.0);
    const sim_v4d_ f = sim_fma4(va, vb, -one), g = sim_fnma4(va, vb, one);
    for (int l = 0; l < 4; l++) {
        cr_assert_eq(f[l], -0x1p-104, "sim_fma4 lane %d", l);
        cr_assert_eq(g[l], 0x1p-104, "sim_fnma4 lane %d", l);
    }
}
