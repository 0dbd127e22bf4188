/* fuzz_urdf.c — the URDF loader (sim_urdf_load_string) on arbitrary documents.
 *
 * Input: the first byte holds the loader options (bit 0 fixed_base, bit 1 ignore_mesh_collisions,
 * bit 2 a friction of 0.3 instead of the default); the rest is the document.  A model the loader
 * accepts must be usable: it gets a world (sim_data_new), a reset and two physics steps, which must
 * neither crash nor trip a sanitizer (non-finite states are allowed: sim_step reports them).
 * Properties: a failure always comes with a message; an accepted model has sane sizes.
 */
#include "fuzz_targets.h"

#include <string.h>

#include "sim_model.h"
#include "sim_step.h"
#include "sim_urdf.h"

int herd_fuzz_urdf(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    sim_urdf_options opt = {.fixed_base = data[0] & 1, .ignore_mesh_collisions = data[0] >> 1 & 1,
                            .friction = data[0] & 4 ? 0.3 : 0};
    char err[256];
    memset(err, 'x', sizeof err);
    sim_model *m = sim_urdf_load_string((const char *)data + 1, size - 1, "fuzz.urdf", &opt, err, sizeof err);
    fuzz_check(memchr(err, 0, sizeof err) != NULL, "error message not terminated");
    if (!m) {
        fuzz_check(err[0] != 0, "loading failed without a message");
        return 0;
    }
    fuzz_check(m->nbody >= 1 && m->nv >= 0 && m->nq >= m->nv && m->ngeom >= 0, "model sizes nbody %d nq %d nv %d ngeom %d",
               m->nbody, m->nq, m->nv, m->ngeom);
    /* the physics on what the loader accepted (bounded: a document of a few kB has few bodies) */
    if (m->nbody <= 64 && m->ngeom <= 128) {
        sim_data *d = sim_data_new(m);
        if (d) {
            sim_data_reset(m, d);
            for (int k = 0; k < 2; k++)
                if (sim_step(m, d, 0.0025)) break;
            sim_data_destroy(&d);
        }
    }
    sim_model_destroy(&m);
    return 0;
}

#ifndef HERD_FUZZ_NO_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return herd_fuzz_urdf(data, size); }
#endif
