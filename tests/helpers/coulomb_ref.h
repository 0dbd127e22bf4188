/* coulomb_ref.h — an independent reference for the Coulomb NCP, written for the tests: brute force over every
 * block's mode, each mode set solved in long double by Newton's method with a finite-difference Jacobian and the
 * slip directions as angles, each candidate checked against Coulomb's conditions in long double.  Nothing of sim/'s
 * solvers or metrics is used. */
#ifndef HERD_TESTS_COULOMB_REF_H
#define HERD_TESTS_COULOMB_REF_H

/* Looks for a Coulomb solution of (G, c, mu) (the problem of sim_solver.h: n blocks of 3 rows, mu < 0 a bounded row
 * of bound -mu, mu = 0 with zero tangent rows a joint limit) over all mode sets.  Returns 1 with lambda (3n) set to
 * the first solution found (its violation, coulomb_ref_violation, at most tol), 0 if none, -1 if n is too large
 * (n <= COULOMB_REF_MAX). */
#define COULOMB_REF_MAX 7
int coulomb_ref_solve(int n, const double *G, const double *c, const double *mu, double tol, double *lambda);

/* The largest violation of Coulomb's conditions by lambda, in long double: cone and sign (N·s), Signorini (the
 * smaller of v_n and lambda_n when both are positive; a negative v_n), a closed contact's friction law (stick: |v_T|;
 * slip: the part of v_T not anti-parallel to lambda_T, and |lambda_T| short of mu lambda_n when it slides), a
 * bounded row's box and complementarity.  Mixed units like sim/'s measure, but the maximum, not the sum. */
#define COULOMB_REF_VIOLATION_MAX 32 /* n at most; -1 beyond */
double coulomb_ref_violation(int n, const double *G, const double *c, const double *mu, const double *lambda);

#endif
