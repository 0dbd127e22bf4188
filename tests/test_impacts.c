/* test_impacts.c — set-valued simultaneous impacts (sim_impacts.h): reproducible for a seed, different seeds give
 * different valid outcomes (the rocking block of Halm & Posa's Fig. 1 lands at rest or rocks onto either
 * corner), every outcome satisfies the impact law's conditions (no penetration velocity, cones, no energy
 * added), Routh's analytic single-contact result, a single impact equals the deterministic solver, the
 * solver-table row reads the seed from the shared parameters, and sim_step hands the solver the pre-step contact
 * velocity J u (a box detects an impact when it lands, not while it rests pressed onto the ground). */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "helpers/rigid_contact.h"
#include "sim_impacts.h"
#include "sim_metrics.h"
#include "sim_solver.h"
#include "sim_solver_cond.h"
#include "sim_step.h"

/* The rocking block: a slender block (0.2 x 0.1 x 1.0 m, 1 kg) falling flat at 1 m/s onto its two bottom edges'
 * midpoints, mu = 0.5.  G (6 x 6), J (6 x 6), c, pre-impact u. */
typedef struct {
    rc_body b;
    double J[36], G[36], c[6], mu[2], u[6];
} block_t;

static void rocking_block(block_t *k)
{
    const double hx = 0.1, hy = 0.05, hz = 0.5, m = 1.0;
    k->b = (rc_body){m, {m / 3 * (hy * hy + hz * hz), m / 3 * (hx * hx + hz * hz), m / 3 * (hx * hx + hy * hy)}};
    const double r[2][3] = {{hx, 0, -hz}, {-hx, 0, -hz}};
    rc_body_contacts(&k->b, 2, r, NULL, k->J, k->G);
    const double u[6] = {0, 0, -1.0, 0, 0, 0};
    memcpy(k->u, u, sizeof u);
    rc_contact_velocity(2, k->J, k->u, k->c);
    k->mu[0] = k->mu[1] = 0.5;
}

/* The impact law's conditions for an outcome lambda of problem (G, c, mu). */
static void assert_valid_outcome(int n, const double *G, const double *c, const double *mu, const double *l,
                                 double v_tol, const char *what)
{
    double v[3 * SIM_SOLVER_MAX_CONTACTS];
    sim_contact_velocity(n, G, c, l, v);
    for (int i = 0; i < n; i++) {
        cr_assert(v[3 * i + 2] >= -v_tol, "%s: contact %d still closing (v_n %g)", what, i, v[3 * i + 2]);
        cr_assert(l[3 * i + 2] >= 0, "%s: contact %d pulls (lambda_n %g)", what, i, l[3 * i + 2]);
        cr_assert(hypot(l[3 * i], l[3 * i + 1]) <= mu[i] * l[3 * i + 2] * (1 + 1e-9) + 1e-15,
                  "%s: contact %d outside its cone", what, i);
    }
    const double e = rc_energy_change(n, G, c, l);
    cr_assert(e <= 1e-12, "%s: the impulses add %g J", what, e);
}

Test(impacts, same_seed_same_bits)
{
    block_t k;
    rocking_block(&k);
    for (uint64_t s = 1; s < 6; s++) {
        double l1[6] = {0}, l2[6] = {0};
        sim_impacts_stats s1, s2;
        cr_assert_eq(sim_impacts_solve(2, k.G, k.c, NULL, k.mu, l1, NULL, s, &s1), SIM_SOLVER_OK);
        cr_assert_eq(sim_impacts_solve(2, k.G, k.c, NULL, k.mu, l2, NULL, s, &s2), SIM_SOLVER_OK);
        cr_assert(s1.impact && s1.n_impacting == 2);
        cr_assert_eq(memcmp(l1, l2, sizeof l1), 0, "seed %llu is not reproducible", (unsigned long long)s);
        cr_assert_eq(s1.increments, s2.increments);
    }
}

Test(impacts, rocking_block_outcomes_differ_and_are_valid, .timeout = 60)
{
    block_t k;
    rocking_block(&k);
    const int nseeds = 40;
    double wy[40];
    int left = 0, right = 0, rest = 0;
    for (int s = 0; s < nseeds; s++) {
        double l[6] = {0};
        sim_impacts_stats st;
        cr_assert_eq(sim_impacts_solve(2, k.G, k.c, NULL, k.mu, l, NULL, sim_impacts_key(42, 0, 0, (uint64_t)s), &st),
                     SIM_SOLVER_OK);
        cr_assert(st.impact && st.converged && st.inner_failures == 0);
        assert_valid_outcome(2, k.G, k.c, k.mu, l, 1e-7, "rocking block");
        double u[6];
        memcpy(u, k.u, sizeof u);
        rc_body_apply(&k.b, 2, k.J, l, u);
        cr_assert(rc_body_kinetic(&k.b, u) <= rc_body_kinetic(&k.b, k.u));
        wy[s] = u[4];
        if (u[4] > 1e-3) right++;
        else if (u[4] < -1e-3) left++;
        else rest++;
    }
    /* the set-valued law: rocking onto either corner (and near rest when the rates are close) */
    cr_assert(left >= 5 && right >= 5, "rocking outcomes: %d one way, %d the other, %d at rest", left, right, rest);
    int distinct = 0;
    for (int s = 0; s < nseeds; s++) {
        int dup = 0;
        for (int t = 0; t < s; t++) dup |= fabs(wy[s] - wy[t]) < 1e-6;
        distinct += !dup;
    }
    cr_assert(distinct >= nseeds * 3 / 4, "only %d distinct outcomes of %d", distinct, nseeds);
}

Test(impacts, random_simultaneous_impacts_are_valid, .timeout = 120)
{
    rc_rng r = {11};
    for (int t = 0; t < 60; t++) {
        const int n = 2 + (int)(rc_next(&r) % 4);
        double G[15 * 15], c[15], mu[5];
        rc_random_problem(&r, n, 3 * n + 6, G, c);
        for (int i = 0; i < n; i++) {
            mu[i] = rc_uniform(&r, 0.2, 1.0);
            c[3 * i + 2] = -rc_uniform(&r, 0.2, 2.0); /* every contact impacting */
        }
        for (uint64_t s = 0; s < 4; s++) {
            double l[15] = {0};
            sim_impacts_stats st;
            cr_assert_eq(sim_impacts_solve(n, G, c, NULL, mu, l, NULL, s, &st), SIM_SOLVER_OK, "case %d seed %d", t, (int)s);
            cr_assert(st.impact && st.n_impacting == n && st.increments > 0);
            cr_assert(st.energy_change <= 1e-12);
            assert_valid_outcome(n, G, c, mu, l, 1e-7, "random impact");
        }
    }
}

Test(impacts, single_contact_follows_routh)
{
    /* a point mass hitting the ground at (vx, 0, -vz): Routh gives lambda_n = m vz and a tangential impulse
       -min(m vx, mu m vz) (sliding friction until the slip stops); forced through the increments */
    const double m = 2.0, mu = 0.5, vz = 1.0;
    const double G[9] = {1 / m, 0, 0, 0, 1 / m, 0, 0, 0, 1 / m};
    const double vxs[3] = {2.0, 0.3, 0.5};
    sim_impacts_params p;
    sim_impacts_default_params(&p);
    p.min_impacts = 1;
    for (int i = 0; i < 3; i++) {
        const double c[3] = {vxs[i], 0, -vz};
        double l[3] = {0, 0, 0};
        sim_impacts_stats st;
        cr_assert_eq(sim_impacts_solve(1, G, c, NULL, &mu, l, &p, 3, &st), SIM_SOLVER_OK);
        cr_assert(st.impact && st.increments >= 10, "the increments must run (%d)", st.increments);
        const double ln = m * vz, lx = -fmin(m * vxs[i], mu * m * vz);
        cr_assert(fabs(l[2] - ln) < 1e-8 && fabs(l[0] - lx) < 1e-8 && fabs(l[1]) < 1e-12,
                  "vx %g: (%g %g %g) vs Routh (%g 0 %g)", vxs[i], l[0], l[1], l[2], lx, ln);
    }
}

Test(impacts, single_impact_equals_deterministic_result)
{
    /* one contact impacting, the others resting (closing slower than v_impact) or separating: the base solver */
    rc_rng r = {3};
    for (int t = 0; t < 40; t++) {
        double G[144], c[12], mu[4] = {0.6, 0.8, 0.5, 0.9};
        rc_random_problem(&r, 4, 18, G, c);
        c[2] = -1.0;
        c[5] = -0.01;
        c[8] = 0.2;
        c[11] = -0.04;
        double l1[12] = {0}, l2[12] = {0};
        sim_impacts_stats st;
        const int rc1 = sim_impacts_solve(4, G, c, NULL, mu, l1, NULL, 1234, &st);
        const int rc2 = sim_solve_cond(4, G, c, mu, l2, NULL, NULL);
        cr_assert_eq(rc1, rc2);
        cr_assert(!st.impact && st.n_impacting == 1 && st.increments == 0);
        cr_assert_eq(memcmp(l1, l2, sizeof l1), 0, "case %d: not the deterministic result", t);
        double l3[12] = {0};
        sim_impacts_solve(4, G, c, NULL, mu, l3, NULL, 999, &st); /* and independent of the seed */
        cr_assert_eq(memcmp(l1, l3, sizeof l1), 0);
    }
}

Test(impacts, pre_step_velocity_decides_what_impacts)
{
    /* the free velocity closes both contacts fast, but before the step only one was closing (the other is
       pushed by this step's forces): one impact, so the deterministic result; and the other way round */
    block_t k;
    rocking_block(&k);
    const double vpre1[6] = {0, 0, -1.0, 0, 0, 0.0};
    double l1[6] = {0}, l2[6] = {0};
    sim_impacts_stats st;
    cr_assert_eq(sim_impacts_solve(2, k.G, k.c, vpre1, k.mu, l1, NULL, 5, &st), SIM_SOLVER_OK);
    cr_assert(!st.impact && st.n_impacting == 1);
    sim_solve_cond(2, k.G, k.c, k.mu, l2, NULL, NULL);
    cr_assert_eq(memcmp(l1, l2, sizeof l1), 0);
    const double vpre2[6] = {0, 0, -0.3, 0, 0, -0.2};
    double l3[6] = {0};
    cr_assert_eq(sim_impacts_solve(2, k.G, k.c, vpre2, k.mu, l3, NULL, 5, &st), SIM_SOLVER_OK);
    cr_assert(st.impact && st.n_impacting == 2);
    assert_valid_outcome(2, k.G, k.c, k.mu, l3, 1e-7, "v_pre impact");
    const double bad[6] = {0, 0, NAN, 0, 0, 0};
    cr_assert_eq(sim_impacts_solve(2, k.G, k.c, bad, k.mu, l3, NULL, 5, &st), SIM_SOLVER_EINVAL);
}

Test(impacts, equal_rates_limit_is_symmetric)
{
    /* for the symmetric block the outcome is symmetric exactly when both contacts accrue at the same rate:
       the outcome's asymmetry grows with the rate difference */
    block_t k;
    rocking_block(&k);
    double best = INFINITY, worst = 0, r_best = 0, r_worst = 1;
    for (uint64_t s = 0; s < 40; s++) {
        double l[6] = {0};
        sim_impacts_stats st;
        sim_impacts_solve(2, k.G, k.c, NULL, k.mu, l, NULL, s, &st);
        const double ratio = fmin(st.rates[0], st.rates[1]); /* the larger is 1 */
        const double asym = fabs(l[2] - l[5]);
        if (ratio > r_best) r_best = ratio, best = asym;
        if (ratio < r_worst) r_worst = ratio, worst = asym;
    }
    cr_assert(r_best > 0.9 && r_worst < 0.3, "rates %g %g", r_best, r_worst);
    cr_assert(best < 0.2 * worst, "asymmetry %g at rates ratio %g, %g at %g", best, r_best, worst, r_worst);
}

Test(impacts, keys_separate_streams)
{
    const uint64_t k0 = sim_impacts_key(1, 0, 0, 0);
    cr_assert_eq(k0, sim_impacts_key(1, 0, 0, 0));
    cr_assert_neq(k0, sim_impacts_key(2, 0, 0, 0));
    cr_assert_neq(k0, sim_impacts_key(1, 1, 0, 0));
    cr_assert_neq(k0, sim_impacts_key(1, 0, 1, 0));
    cr_assert_neq(k0, sim_impacts_key(1, 0, 0, 1));
    cr_assert_neq(sim_impacts_key(1, 1, 0, 0), sim_impacts_key(1, 0, 1, 0));
}

Test(impacts, table_row_reads_the_seed)
{
    const sim_solver_desc *d = sim_solver_find("impacts");
    cr_assert_not_null(d);
    cr_assert_eq(d->solve, sim_solve_impacts);
    block_t k;
    rocking_block(&k);
    sim_solver_params sp;
    sim_solver_default_params(&sp);
    /* reproducible for (seed, problem); different seeds and different problems draw different rates */
    double first[4][6];
    for (unsigned long long s = 1; s < 5; s++) {
        sp.seed = s;
        double l1[6] = {0}, l2[6] = {0};
        sim_solver_stats st;
        cr_assert_eq(sim_solve(SIM_SOLVER_IMPACTS, 2, k.G, k.c, k.mu, l1, &sp, &st), SIM_SOLVER_OK);
        cr_assert_eq(sim_solve(SIM_SOLVER_IMPACTS, 2, k.G, k.c, k.mu, l2, &sp, NULL), SIM_SOLVER_OK);
        cr_assert_eq(memcmp(l1, l2, sizeof l1), 0);
        cr_assert(st.converged && st.iterations > 0);
        assert_valid_outcome(2, k.G, k.c, k.mu, l1, 1e-7, "table row");
        memcpy(first[s - 1], l1, sizeof l1);
    }
    int differ = 0;
    for (int a = 1; a < 4; a++) differ += memcmp(first[0], first[a], sizeof first[0]) != 0;
    cr_assert(differ >= 2, "seeds should change the outcome");
    sp.seed = 1;
    double c2[6], l3[6] = {0};
    memcpy(c2, k.c, sizeof c2);
    c2[2] *= 1.001, c2[5] *= 1.001; /* another step of the same fall */
    cr_assert_eq(sim_solve(SIM_SOLVER_IMPACTS, 2, k.G, c2, k.mu, l3, &sp, NULL), SIM_SOLVER_OK);
    cr_assert(fabs(l3[2] / first[0][2] - 1.001) > 1e-3, "another problem should draw other rates");
}

/* st->impact is 1 only for a step the set-valued law resolved; every other solver of the table clears it (the
 * stats struct may come in with garbage: sim_step and the benches count impact steps from it). */
Test(impacts, other_solvers_clear_the_impact_flag)
{
    block_t k;
    rocking_block(&k);
    for (int s = 0; s < sim_solver_count(); s++) {
        if (!sim_solver_at(s)->solve) continue;
        sim_solver_stats st;
        memset(&st, 0x5a, sizeof st);
        double l[6] = {0};
        sim_solve(s, 2, k.G, k.c, k.mu, l, NULL, &st);
        cr_assert_eq(st.impact, s == SIM_SOLVER_IMPACTS, "%s: impact = %d", sim_solver_at(s)->name, st.impact);
    }
}

Test(impacts, bad_input)
{
    block_t k;
    rocking_block(&k);
    double l[6] = {1, 2, 3, 4, 5, 6};
    double c[6];
    memcpy(c, k.c, sizeof c);
    c[1] = NAN;
    cr_assert_eq(sim_impacts_solve(2, k.G, c, NULL, k.mu, l, NULL, 0, NULL), SIM_SOLVER_EINVAL);
    cr_assert(l[0] == 1 && l[5] == 6);
    sim_impacts_params p;
    sim_impacts_default_params(&p);
    p.step_frac = 0;
    cr_assert_eq(sim_impacts_solve(2, k.G, k.c, NULL, k.mu, l, &p, 0, NULL), SIM_SOLVER_EINVAL);
    sim_impacts_stats st;
    cr_assert_eq(sim_impacts_solve(0, NULL, NULL, NULL, NULL, NULL, NULL, 0, &st), SIM_SOLVER_OK);
}

/* ---- through sim_step: the pre-step contact velocity ------------------------------------------------------ */

/* A free box (half sizes 0.2 x 0.15 x 0.1 m, 5 kg, mu 0.8) resting on the plane, solved by "impacts" with seed. */
static sim_model *impacts_box(unsigned long long seed)
{
    sim_model *m = sim_model_new();
    const double hs[3] = {0.2, 0.15, 0.1}, mass = 5.0;
    m->nbody = 1;
    sim_body *b = &m->body[0];
    strcpy(b->name, "box");
    b->parent = -1;
    b->joint_type = SIM_JOINT_FREE;
    b->rot[0] = b->rot[4] = b->rot[8] = 1;
    b->mass = mass;
    b->inertia[0] = mass * 4 * (hs[1] * hs[1] + hs[2] * hs[2]) / 12;
    b->inertia[4] = mass * 4 * (hs[0] * hs[0] + hs[2] * hs[2]) / 12;
    b->inertia[8] = mass * 4 * (hs[0] * hs[0] + hs[1] * hs[1]) / 12;
    m->ngeom = 1;
    sim_geom *g = &m->geom[0];
    strcpy(g->name, "box");
    g->type = SIM_GEOM_BOX;
    g->rot[0] = g->rot[4] = g->rot[8] = 1;
    memcpy(g->size, hs, sizeof hs);
    g->friction = 0.8;
    char err[256];
    cr_assert_eq(sim_model_finalize(m, err, sizeof err), 0, "%s", err);
    m->opt.solver = SIM_SOLVER_IMPACTS;
    m->opt.sp.seed = seed;
    return m;
}

/* The box dropped flat from 5 cm (lands at ~1 m/s), then resting, at dt 5 ms (the walk task's physics step) while
 * a downward force equal to its weight presses it onto the ground (as stance actuation presses a foot): the free
 * contact velocity c_n = -2 g dt = -0.098 m/s of a resting corner is then faster than v_impact (0.05 m/s), its
 * pre-step velocity J u is 0.  So impacts must be detected on landing alone: a solver judging by c (no v_pre)
 * would resolve every resting step as an impact.  With gap-aware contacts the landing can take two steps: the
 * one in which the box reaches the ground (its impulse only keeps it from passing the plane) and the next, which
 * stops it (removes ~1 m/s: always an impact).  The sampled outcome of a flat landing may leave the box rocking; a
 * corner that then comes down faster than v_impact lands again, an impact by the model's definition.  So every
 * impact step must have a contact arriving faster than v_impact (v_pre), and none may come once the box rests. */
Test(impacts, sim_step_detects_the_landing_only)
{
    sim_model *m = impacts_box(7);
    sim_data *d = sim_data_new(m);
    const double dt = 5e-3, hz = 0.1;
    d->q[2] = hz + 0.05;
    sim_impacts_params ip;
    sim_impacts_default_params(&ip);
    int impacts = 0, first = -1, last = -1, stop = -1, contact_steps = 0;
    unsigned char impact_at[400] = {0};
    for (int i = 0; i < 400; i++) { /* 2 s */
        d->tau[2] = -5.0 * 9.81;
        sim_step_stages(m, d, dt, SIM_STAGE_NONE, SIM_STAGE_CONTACTS);
        int nc = d->ncon;
        double arrival = 0; /* the fastest approach of a contact at the start of the step, m/s */
        const double *vpre = sim_step_pre_velocity(m, d);
        for (int k = 0; k < nc; k++) arrival = fmax(arrival, -vpre[3 * k + 2]);
        sim_step_stages(m, d, dt, SIM_STAGE_CONTACTS, SIM_STAGE_SOLVE);
        cr_assert_eq(sim_step_stages(m, d, dt, SIM_STAGE_SOLVE, SIM_STAGE_INTEGRATE), 0);
        /* the step that stops the falling box */
        if (stop < 0 && nc > 0 && fabs(d->u[2]) < 0.5) stop = i;
        contact_steps += nc > 0;
        if (d->stats.impact) {
            impacts++;
            impact_at[i] = 1;
            if (first < 0) first = i;
            last = i;
            cr_assert_geq(d->stats.ncon, 2);
            cr_assert(d->stats.converged, "impact at step %d did not terminate", i);
            cr_assert_gt(arrival, ip.v_impact, "impact at step %d without a contact arriving faster than v_impact "
                         "(%g m/s)", i, arrival);
        }
    }
    cr_log_info("box drop: stopped at step %d, impacts at steps %d..%d, %d impact steps of %d contact steps, rest "
                "z %.6f m, v_z %.2e m/s", stop, first, last, impacts, contact_steps, d->q[2], d->u[2]);
    cr_assert_geq(stop, 0, "the box never landed");
    cr_assert_geq(impacts, 1, "no impact detected on landing");
    cr_assert(first == stop - 1 || first == stop, "first impact at step %d, the landing is steps %d-%d", first,
              stop - 1, stop);
    cr_assert(impact_at[stop], "the step that stops the box (%d) should be an impact", stop);
    cr_assert_lt(last, stop + 20, "impacts at steps %d..%d: the box should rest within 0.1 s of landing (step %d)",
                 first, last, stop);
    cr_assert_gt(contact_steps, 300);
    cr_assert_lt(fabs(d->u[2]), 1e-3, "the box does not rest: v_z %g", d->u[2]);
    sim_data_destroy(&d);
    sim_model_destroy(&m);
}

/* The box dropped onto one edge (rolled 30 degrees about x): the edge's two corners close in the same step.  The
 * outcome is sampled from the seed: the same seed gives the same bits, different seeds different outcomes, each
 * one without penetration velocity and without energy added. */
static void edge_landing(unsigned long long seed, double out[13], int *impact_contacts)
{
    sim_model *m = impacts_box(seed);
    sim_data *d = sim_data_new(m);
    const double dt = 1e-3, a = 30 * M_PI / 180, hy = 0.15, hz = 0.1;
    d->q[3] = cos(a / 2), d->q[4] = sin(a / 2), d->q[5] = d->q[6] = 0;
    /* lowest edge: the corners (+-hx, -hy, -hz) rolled about x, at z = -(hy sin a + hz cos a) */
    d->q[2] = hy * sin(a) + hz * cos(a) + 0.05;
    *impact_contacts = 0;
    int after = -1;
    for (int i = 0; i < 300 && after < 1; i++) {
        cr_assert_eq(sim_step(m, d, dt), 0);
        if (after >= 0) after++;
        if (d->stats.impact && after < 0) { /* the first impact: the edge's two corners */
            after = 0;
            *impact_contacts = d->ncon;
            const double e = rc_energy_change(d->ncon, d->G, d->cfree, d->lambda);
            cr_assert(e <= 1e-12, "the impact adds %g J", e);
            double v[3 * SIM_SOLVER_MAX_CONTACTS];
            sim_contact_velocity(d->ncon, d->G, d->cfree, d->lambda, v);
            for (int k = 0; k < d->ncon; k++) cr_assert(v[3 * k + 2] >= -1e-6, "contact %d closing: %g", k, v[3 * k + 2]);
        }
    }
    memcpy(out, d->q, 7 * sizeof(double)); /* the state after the landing (the impact step and the next) */
    memcpy(out + 7, d->u, 6 * sizeof(double));
    sim_data_destroy(&d);
    sim_model_destroy(&m);
}

Test(impacts, sim_step_edge_landing_sampled_per_seed)
{
    double o[5][13], again[13];
    for (int s = 0; s < 5; s++) {
        int nc;
        edge_landing((unsigned long long)s + 1, o[s], &nc);
        cr_assert_eq(nc, 2, "seed %d: the landing impact has %d contacts, the edge two", s + 1, nc);
        edge_landing((unsigned long long)s + 1, again, &nc);
        cr_assert_eq(memcmp(o[s], again, sizeof again), 0, "seed %d is not reproducible", s + 1);
    }
    /* the rates decide which corner takes more of the impulse: the box's yaw rate after it differs by seed */
    int differ = 0;
    for (int s = 1; s < 5; s++) differ += fabs(o[s][12] - o[0][12]) > 1e-3 || fabs(o[s][11] - o[0][11]) > 1e-3;
    cr_log_info("edge landing: omega_y, omega_z after it (rad/s) %.4f %.4f | %.4f %.4f | %.4f %.4f | %.4f %.4f | %.4f %.4f",
                o[0][11], o[0][12], o[1][11], o[1][12], o[2][11], o[2][12], o[3][11], o[3][12], o[4][11], o[4][12]);
    cr_assert_geq(differ, 3, "seeds should sample different outcomes (%d of 4 differ)", differ);
}
