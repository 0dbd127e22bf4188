/* coulomb-stall-admm's direct Coulomb solve (sim/sim_solver_direct.c) on contact problems harvested where the default
 * solver's sweeps stall: in the real anymal_c-walk env (`herd-bench env --env anymal_c-walk --profile --harvest FILE`,
 * 256 worlds, random actions; tests/testdata/walk_stalls.txt holds the ones with at most 5 blocks: "n, G, c, mu, warm
 * start" each), and in anymal_c-rough (512 worlds, 60 env steps; tests/testdata/rough_stalls.txt: 24 with at most 5
 * blocks on which the direct solve with the cone formulation alone found no Coulomb solution).  The reference is
 * tests/helpers/coulomb_ref.c: brute force over every block's mode in long double, sharing no code with sim/. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "helpers/coulomb_ref.h"
#include "helpers/stall_fixtures.h"
#include "sim_metrics.h"
#include "sim_solver.h"

#define MAXN STALL_MAXN
typedef stall_problem problem;

static int load_file(const char *path, problem *ps, int cap) { return stall_fixtures_load(path, ps, cap); }

static int load(problem *ps, int cap) { return load_file("tests/testdata/walk_stalls.txt", ps, cap); }

static void walk_params(sim_solver_params *p)
{
    sim_solver_default_params(p);
    p->max_iter = 50;     /* the walk task's solver_max_iter */
    p->limit_rounds = 0;  /* the limits swept as blocks, as when the fixtures were harvested: with the limits
                             eliminated, the two that have limit rows do not stall (checked below) */
}

static int has_limit(const problem *q)
{
    const int N = 3 * q->n;
    for (int i = 0; i < q->n; i++)
        if (q->mu[i] >= 0 && q->mu[i] < SIM_MU_FRICTIONLESS && q->G[3 * i * N + 3 * i] == 0 &&
            q->G[(3 * i + 1) * N + 3 * i + 1] == 0)
            return 1;
    return 0;
}

/* The harvested stalls that have joint-limit rows, with the limits eliminated from the sweeps (the default): the
 * sweeps finish them without a fallback, and the answer is Coulomb by the reference's measure. */
Test(coulomb_direct, eliminated_limits_finish_the_limit_stalls)
{
    static problem ps[64];
    const int np = load(ps, 64);
    sim_solver_params p;
    walk_params(&p);
    p.limit_rounds = 4;
    int with = 0;
    for (int k = 0; k < np; k++) {
        const problem *q = &ps[k];
        if (!has_limit(q)) continue;
        with++;
        double l[3 * MAXN];
        memcpy(l, q->warm, sizeof l);
        sim_solver_stats st;
        sim_solve_coulomb_stall_admm(q->n, q->G, q->c, q->mu, l, &p, &st);
        cr_assert_eq(st.fallback, 0, "fixture %d: handed to a fallback", k);
        cr_assert_eq(st.answer, SIM_ANSWER_COULOMB, "fixture %d: answer %d", k, st.answer);
        const double viol = coulomb_ref_violation(q->n, q->G, q->c, q->mu, l);
        cr_assert_leq(viol, p.tol, "fixture %d: the reference measures %g", k, viol);
        cr_log_info("fixture %d (n %d, with limits): %d sweeps, Coulomb", k, q->n, st.iterations);
    }
    cr_assert_geq(with, 2);
}

/* Every harvested stall on which the reference finds a Coulomb solution is answered with one (flagged Coulomb, and
 * within tolerance by the reference's own check); an answer flagged Coulomb always is one; the problems still
 * stall (else the fixtures test nothing), and the reference solves at least half of them. */
Test(coulomb_direct, harvested_walk_stalls_end_coulomb, .timeout = 300)
{
    static problem ps[64];
    const int np = load(ps, 64);
    cr_assert_geq(np, 20);
    sim_solver_params p;
    walk_params(&p);
    int solvable = 0, found = 0, missed = 0;
    for (int k = 0; k < np; k++) {
        const problem *q = &ps[k];
        double l[3 * MAXN], lr[3 * MAXN];
        memcpy(l, q->warm, sizeof l);
        sim_solver_stats st;
        sim_solve_coulomb_stall_admm(q->n, q->G, q->c, q->mu, l, &p, &st);
        cr_assert_eq(st.fallback, 1, "fixture %d no longer stalls", k);
        const int ref = coulomb_ref_solve(q->n, q->G, q->c, q->mu, 1e-9, lr);
        cr_assert_geq(ref, 0);
        const double viol = coulomb_ref_violation(q->n, q->G, q->c, q->mu, l);
        if (st.answer == SIM_ANSWER_COULOMB) {
            cr_assert_lt(sim_contact_coulomb_error(q->n, q->G, q->c, q->mu, l), p.tol, "fixture %d", k);
            cr_assert_leq(viol, p.tol, "fixture %d: flagged Coulomb, the reference measures %g", k, viol);
            found++;
        } else {
            cr_assert_eq(st.answer, SIM_ANSWER_CCP, "fixture %d: answer %d", k, st.answer);
        }
        if (ref == 1) {
            solvable++;
            if (st.answer != SIM_ANSWER_COULOMB) {
                missed++;
                cr_log_info("fixture %d (n %d): the reference solves it (violation %g), the solver answers CCP", k,
                            q->n, coulomb_ref_violation(q->n, q->G, q->c, q->mu, lr));
            }
        }
    }
    cr_log_info("%d harvested stalls: the reference solves %d, the solver answers Coulomb on %d (%d missed)", np,
                solvable, found, missed);
    cr_assert_geq(solvable, np / 2);
    cr_assert_eq(missed, 0);
}

/* Without the direct solve (direct_rounds = 0) the same stalls end as CCP answers far more often: what the direct
 * solve adds, and that the fixtures are hard for the sweeps and ADMM's relaxation. */
Test(coulomb_direct, without_it_the_stalls_end_ccp)
{
    static problem ps[64];
    const int np = load(ps, 64);
    sim_solver_params p;
    walk_params(&p);
    int coulomb[2] = {0, 0};
    for (int off = 0; off < 2; off++) {
        p.direct_rounds = off ? 0 : 8;
        for (int k = 0; k < np; k++) {
            double l[3 * MAXN];
            memcpy(l, ps[k].warm, sizeof l);
            sim_solver_stats st;
            sim_solve_coulomb_stall_admm(ps[k].n, ps[k].G, ps[k].c, ps[k].mu, l, &p, &st);
            coulomb[off] += st.answer == SIM_ANSWER_COULOMB;
            if (off) cr_assert_eq(st.direct, 0);
        }
    }
    cr_log_info("Coulomb answers: %d with the direct solve, %d without, of %d", coulomb[0], coulomb[1], np);
    cr_assert_geq(coulomb[0], coulomb[1] + np / 2);
}

/* The answer depends on the problem alone: the same problem solved twice, and from a copy placed elsewhere in
 * memory, gives the same bits (the step's determinism across thread splits rests on it). */
Test(coulomb_direct, bit_for_bit_repeatable)
{
    static problem ps[64], copy;
    const int np = load(ps, 64);
    sim_solver_params p;
    walk_params(&p);
    for (int k = 0; k < np; k++) {
        double a[3 * MAXN], b[3 * MAXN];
        memcpy(a, ps[k].warm, sizeof a);
        copy = ps[k];
        memcpy(b, copy.warm, sizeof b);
        sim_solver_stats sa, sb;
        sim_solve_coulomb_stall_admm(ps[k].n, ps[k].G, ps[k].c, ps[k].mu, a, &p, &sa);
        sim_solve_coulomb_stall_admm(copy.n, copy.G, copy.c, copy.mu, b, &p, &sb);
        cr_assert_eq(memcmp(a, b, sizeof(double) * 3 * (size_t)ps[k].n), 0, "fixture %d", k);
        cr_assert_eq(sa.answer, sb.answer);
        cr_assert_eq(sa.direct_iterations, sb.direct_iterations);
    }
}

/* The rough-terrain stalls, through the mode-set search alone (direct_newton_iter = 0; the fixtures were chosen as
 * the stalls it found hard): with all three formulations of a slipping block's friction law every one is answered
 * with a Coulomb solution, which the reference's own measure confirms (its violation within tol), and on most of
 * them the reference's brute force finds a Coulomb solution too (on the others its Newton from its own starts does
 * not converge, which proves nothing either way).  With the cone formulation alone (direct_forms = 1, what the
 * solver had before) at most a quarter are: the fixtures need the other two. */
Test(coulomb_direct, harvested_rough_stalls_end_coulomb, .timeout = 300)
{
    static problem ps[32];
    const int np = load_file("tests/testdata/rough_stalls.txt", ps, 32);
    cr_assert_eq(np, 24);
    sim_solver_params p;
    walk_params(&p); /* the rough task's solver settings are the walk's */
    p.direct_newton_iter = 0;
    int coulomb[2] = {0, 0}, ref_solves = 0;
    for (int forms = SIM_SOLVER_DIRECT_FORMS; forms >= 1; forms -= SIM_SOLVER_DIRECT_FORMS - 1) {
        p.direct_forms = forms;
        for (int k = 0; k < np; k++) {
            const problem *q = &ps[k];
            double l[3 * MAXN];
            memcpy(l, q->warm, sizeof l);
            sim_solver_stats st;
            sim_solve_coulomb_stall_admm(q->n, q->G, q->c, q->mu, l, &p, &st);
            cr_assert_eq(st.fallback, 1, "fixture %d no longer stalls", k);
            const int ok = st.answer == SIM_ANSWER_COULOMB;
            coulomb[forms == 1] += ok;
            if (ok) {
                const double viol = coulomb_ref_violation(q->n, q->G, q->c, q->mu, l);
                cr_assert_leq(viol, p.tol, "fixture %d (%d forms): flagged Coulomb, the reference measures %g", k, forms,
                              viol);
            }
            if (forms == SIM_SOLVER_DIRECT_FORMS) {
                cr_assert(ok, "fixture %d (n %d): answer %d, not Coulomb", k, q->n, st.answer);
                double lr[3 * MAXN];
                ref_solves += coulomb_ref_solve(q->n, q->G, q->c, q->mu, 1e-9, lr) == 1;
            }
        }
    }
    cr_log_info("%d harvested rough stalls: Coulomb answers %d with 3 formulations, %d with the cone form alone; the "
                "reference's brute force solves %d", np, coulomb[0], coulomb[1], ref_solves);
    cr_assert_eq(coulomb[0], np);
    cr_assert_leq(coulomb[1], np / 4);
    cr_assert_geq(ref_solves, np / 2);
}

/* Abandoning a nearly solved mode set whose iterate is far from Coulomb (direct_abandon, the default) against running
 * every Newton solve to its end (direct_abandon = 0), in the mode-set search alone (direct_newton_iter = 0: with the
 * semismooth Newton first, few of these stalls reach the search), on every harvested stall (walk and rough): no
 * fixture answered
 * with a Coulomb solution without it loses it (each answer confirmed by the reference's measure), and the direct
 * solve spends markedly fewer Newton iterations. */
Test(coulomb_direct, abandoning_far_mode_sets_saves_iterations, .timeout = 300)
{
    static problem ps[96];
    int np = load(ps, 64);
    np += load_file("tests/testdata/rough_stalls.txt", ps + np, 96 - np);
    sim_solver_params p;
    walk_params(&p);
    p.direct_newton_iter = 0;
    cr_assert_gt(p.direct_abandon, 0);
    long its[2] = {0, 0};
    int coulomb[2] = {0, 0};
    for (int k = 0; k < np; k++) {
        const problem *q = &ps[k];
        int ok[2];
        for (int off = 0; off < 2; off++) {
            sim_solver_params r = p;
            if (off) r.direct_abandon = 0;
            double l[3 * MAXN];
            memcpy(l, q->warm, sizeof l);
            sim_solver_stats st;
            sim_solve_coulomb_stall_admm(q->n, q->G, q->c, q->mu, l, &r, &st);
            cr_assert_eq(st.fallback, 1, "fixture %d no longer stalls", k);
            ok[off] = st.answer == SIM_ANSWER_COULOMB;
            if (ok[off]) {
                const double viol = coulomb_ref_violation(q->n, q->G, q->c, q->mu, l);
                cr_assert_leq(viol, p.tol, "fixture %d (abandon %g): the reference measures %g", k, r.direct_abandon,
                              viol);
            }
            coulomb[off] += ok[off];
            its[off] += st.direct_iterations;
        }
        cr_assert(ok[0] || !ok[1], "fixture %d (n %d): Coulomb only when every Newton run goes to its end", k, q->n);
    }
    cr_log_info("%d harvested stalls: Newton iterations %ld abandoning, %ld without; Coulomb answers %d and %d", np,
                its[0], its[1], coulomb[0], coulomb[1]);
    cr_assert_geq(coulomb[0], coulomb[1]);
    cr_assert_lt(its[0], its[1] * 9 / 10, "abandoning saved too little: %ld against %ld", its[0], its[1]);
}

/* Before ADMM the mode-set search tries the cone formulation alone; the unit and scaled ones come after ADMM, once
 * its CCP answer's modes have had their cone-form attempt.  On the rough-terrain stalls (which the cone form alone
 * mostly cannot solve from the sweeps' modes), with the semismooth Newton off (direct_newton_iter = 0): every answer
 * found before ADMM is bit for bit the one the cone form alone (direct_forms = 1) gives, and most answers come after
 * ADMM, every one of them Coulomb. */
Test(coulomb_direct, other_formulations_only_after_admm, .timeout = 300)
{
    static problem ps[32];
    const int np = load_file("tests/testdata/rough_stalls.txt", ps, 32);
    sim_solver_params p, cone;
    walk_params(&p);
    p.direct_newton_iter = 0;
    cone = p;
    cone.direct_forms = 1;
    int before = 0, after = 0;
    for (int k = 0; k < np; k++) {
        const problem *q = &ps[k];
        double l[3 * MAXN], lc[3 * MAXN];
        memcpy(l, q->warm, sizeof l);
        memcpy(lc, q->warm, sizeof lc);
        sim_solver_stats st, sc;
        sim_solve_coulomb_stall_admm(q->n, q->G, q->c, q->mu, l, &p, &st);
        sim_solve_coulomb_stall_admm(q->n, q->G, q->c, q->mu, lc, &cone, &sc);
        cr_assert_eq(st.answer, SIM_ANSWER_COULOMB, "fixture %d", k);
        if (st.direct && st.fallback_iterations == 0) {
            before++;
            cr_assert_eq(sc.fallback_iterations, 0, "fixture %d: solved before ADMM, but not by the cone form", k);
            cr_assert_eq(memcmp(l, lc, sizeof(double) * 3 * (size_t)q->n), 0, "fixture %d", k);
        } else {
            after++;
        }
    }
    cr_log_info("%d rough stalls: %d answered before ADMM, %d after", np, before, after);
    cr_assert_geq(after, np / 2);
}
