/* rigid_contact.h — test helpers for contact solvers: a deterministic RNG, and contact problems (G, c) built
 * from mechanics (one free rigid body with point contacts, or random Jacobians and mass matrices), so tests
 * can check solvers against analytic motion.  Frames: world axes for the body; contact frame rows (t_x, t_y, n). */
#ifndef HERD_TEST_RIGID_CONTACT_H
#define HERD_TEST_RIGID_CONTACT_H

#include <stdint.h>

typedef struct { uint64_t s; } rc_rng;
uint64_t rc_next(rc_rng *r);
double rc_uniform(rc_rng *r, double lo, double hi);
double rc_normal(rc_rng *r);

/* A free rigid body: mass (kg) and principal inertia (kg m^2) about its centre of mass, axes = world axes.
 * Generalized velocity u = (v, omega), world frame. */
typedef struct { double m; double inertia[3]; } rc_body;

/* Contact Jacobian J (3n x 6, row-major) of points r[i] (m, from the centre of mass, world frame), each with
 * contact frame R[i] (rows t_x, t_y, n; NULL: world axes for every contact), and G = J M^-1 J^T (3n x 3n). */
void rc_body_contacts(const rc_body *b, int n, const double (*r)[3], const double (*R)[9], double *J, double *G);
/* c = J u (3n). */
void rc_contact_velocity(int n, const double *J, const double u[6], double *c);
/* u += M^-1 J^T lambda. */
void rc_body_apply(const rc_body *b, int n, const double *J, const double *lambda, double u[6]);
/* Kinetic energy 1/2 u^T M u (J). */
double rc_body_kinetic(const rc_body *b, const double u[6]);

/* A random rotation (rows an orthonormal right-handed frame). */
void rc_random_frame(rc_rng *r, double R[9]);

/* A random multi-contact Delassus matrix G = J M^-1 J^T (3n x 3n) with J random (3n x nv, nv <= 48) and M a
 * random SPD matrix, scaled so that the mean diagonal is ~ 1/kg; a random closing free velocity c. */
void rc_random_problem(rc_rng *r, int n, int nv, double *G, double *c);

/* Two cubes (half side 5 cm) stacked on the ground, the lower 1 g, the upper mass_ratio times heavier: 8 corner
 * contacts (0-3 ground-light, 4-7 light-heavy, world-axis frames), 12 dofs (light then heavy, (v, omega) each),
 * the first step's problem at dt 1 ms from rest under gravity: J (24 x 12), the diagonal M^-1 (12),
 * G = J M^-1 J^T (24 x 24), c = J u_free (24), mu = 0.5.  Hyperstatic: G is singular. */
void rc_heavy_on_light(double mass_ratio, double *J, double *minv, double *G, double *c, double *mu);

/* E(lambda) = c.lambda + 1/2 lambda.G lambda: the kinetic energy the impulses add (J). */
double rc_energy_change(int n, const double *G, const double *c, const double *lambda);

#endif
