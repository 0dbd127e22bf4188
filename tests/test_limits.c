/* test_limits.c — issue 13's reproductions, each of which failed against the server before the fix:
 * non-finite observations, the per-request work bound, quotas (worlds, sessions, requests in flight,
 * queued reply bytes), the memory ceiling, cancellation of a vanished client's work, the drain
 * deadline, and the contract drift items (idle clock, subset steps, echoed strings, frame limit,
 * error counts).  Servers run on threads (tcp://127.0.0.1:*) unless a test needs a process. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "env.h"

/* ---- 5. no non-finite value leaves the env ---- */

/* The reproduction, in-process: paper-random, 12 worlds, seed 3, {sim_dt 0.01, erp 1}, world 11
 * stepped alone with zero actions.  Steps 96 and 97 returned +-inf observations with physics_reset
 * false, the reset being reported only at step 98.  Now the world is reset at step 96, flagged. */
Test(nonfinite, paper_random_overflow_is_reset_in_the_same_step)
{
    char err[256];
    env_kv kv[2] = {{"sim_dt", 0.01}, {"erp", 1.0}};
    env_t *e = env_new("paper-random", 12, kv, 2, 3, ENV_AUTORESET_NEXT_STEP, err, sizeof err);
    cr_assert(e, "%s", err);
    const int od = env_get_spec(e)->obs_dim;
    float obs[12 * 64], o[64], act[12] = {0}, r;
    uint8_t te, tr, pr;
    env_reset(e, 0, 12, NULL, NULL, obs);
    int32_t id = 11;
    env_info info = {.physics_reset = &pr};
    int first_reset = 0;
    for (int s = 1; s <= 100; s++) {
        env_step(e, 0, 1, &id, act, o, &r, &te, &tr, &info);
        for (int k = 0; k < od; k++) cr_assert(isfinite(o[k]), "step %d: obs[%d] = %g", s, k, o[k]);
        cr_assert(isfinite(r));
        if (pr) {
            cr_assert(tr, "step %d: a physics reset is reported as truncated", s);
            if (!first_reset) first_reset = s;
        }
    }
    cr_assert_eq(first_reset, 96, "the world is reset in the step that overflowed (got step %d)", first_reset);
    env_destroy(&e);
}
