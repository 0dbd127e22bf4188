/* herd-demo — loads ANYmal C, drops it from 0.6 m under a PD controller holding the nominal stance,
 * and prints what happens: base height and attitude, feet in contact, solver effort, speed.
 *   herd-demo [--model PATH] [--seconds S] [--dt S] [--solver bisection|pgs] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "env_scenario.h"
#include "sim_dynamics.h"
#include "sim_step.h"
#include "sim_urdf.h"

static const char *arg(int argc, char **argv, const char *name, const char *def)
{
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], name)) return argv[i + 1];
    return def;
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: herd-demo [--model PATH] [--seconds S] [--dt S] [--solver bisection|pgs]\n");
            return 0;
        }
    const char *path = arg(argc, argv, "--model", "envs/models/anymal_c.urdf");
    double seconds = atof(arg(argc, argv, "--seconds", "3")), dt = atof(arg(argc, argv, "--dt", "0.001"));
    const char *solver = arg(argc, argv, "--solver", "bisection");
    if (!(seconds > 0) || !(dt > 0) || dt > 0.05) {
        fprintf(stderr, "herd-demo: --seconds must be > 0 and --dt in (0, 0.05]\n");
        return 2;
    }
    char err[512];
    sim_model *m = sim_urdf_load_file(path, NULL, err, sizeof err);
    if (!m) {
        fprintf(stderr, "herd-demo: %s\n", err);
        return 1;
    }
    if (env_scenario_configure_model(m, ENV_SCN_STAND, err, sizeof err)) {
        fprintf(stderr, "herd-demo: %s\n", err);
        return 1;
    }
    m->opt.solver = strcmp(solver, "pgs") ? SIM_SOLVER_PAPER_BISECTION : SIM_SOLVER_PGS;
    printf("herd-demo: %s: %d bodies, %d dofs, %.2f kg, %d collision geometries\n", path, m->nbody, m->nv,
           m->total_mass, m->ngeom);
    sim_data *d = sim_data_new(m);
    env_scenario s;
    if (!d || env_scenario_init(&s, m, d, ENV_SCN_STAND, 1, err, sizeof err)) {
        fprintf(stderr, "herd-demo: %s\n", d ? err : "out of memory");
        return 1;
    }
    printf("dropping ANYmal C from %.2f m, PD (Kp %.0f, Kd %.0f) holding HFE ±0.4, KFE ∓0.8; dt %.4g s, %s solver\n",
           d->q[2], s.kp, s.kd, dt, m->opt.solver == SIM_SOLVER_PGS ? "PGS" : "bisection");
    printf("%6s %8s %8s %8s %6s %6s %9s %10s\n", "t [s]", "z [m]", "roll", "pitch", "feet", "iters", "pen [mm]", "KE [J]");
    long steps = (long)(seconds / dt + 0.5), every = (long)(0.25 / dt + 0.5);
    double pen = 0, iters = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = 1; i <= steps; i++) {
        env_scenario_control(&s, m, d, dt);
        if (sim_step(m, d, dt)) {
            fprintf(stderr, "herd-demo: simulation diverged at t = %.3f s\n", d->time);
            return 1;
        }
        pen = fmax(pen, d->stats.penetration);
        iters += d->stats.iterations;
        if (i % every == 0 || i == steps) {
            const double *q = d->q + 3;
            double roll = atan2(2 * (q[0] * q[1] + q[2] * q[3]), 1 - 2 * (q[1] * q[1] + q[2] * q[2]));
            double pitch = asin(fmax(-1, fmin(1, 2 * (q[0] * q[2] - q[3] * q[1]))));
            int feet = 0;
            for (int k = 0; k < d->ncon; k++) feet += d->lambda[3 * k + 2] > 0;
            printf("%6.2f %8.4f %8.4f %8.4f %6d %6d %9.3f %10.4f\n", d->time, d->q[2], roll, pitch, feet,
                   d->stats.iterations, 1e3 * d->stats.penetration, sim_energy_kinetic(m, d));
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double sec = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    printf("simulated %.2f s in %.3f s wall (%.0f x real time, %.2f us per step), mean %.2f solver sweeps, max penetration %.3f mm\n",
           seconds, sec, seconds / sec, 1e6 * sec / (double)steps, iters / (double)steps, 1e3 * pen);
    printf("standing: %s (base height %.3f m)\n", d->q[2] > 0.4 ? "yes" : "no", d->q[2]);
    sim_data_destroy(&d);
    sim_model_destroy(&m);
    return 0;
}
