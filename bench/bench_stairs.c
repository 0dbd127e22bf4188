/* herd-bench stairs — ANYmal C going down three 21 cm steps on herd's cell terrain (SIM_TERRAIN_CELLS), and the
 * collision's cost against the plane's in the same run.
 *
 *   herd-bench stairs [--mode trot|settle] [--steps N] [--solver NAME] [--geoms all|feet-base] [--riser 0.21]
 *                     [--repeats 5]
 *   herd-bench stairs --mode policy --policy ACTOR.txt ...   (a trained policy in the rough task: bench_stairs_policy.c)
 *
 * The terrain (0.1 m cells): a platform 3 risers high for x < 1.0 m, then three treads of 0.3 m (legged_gym's
 * stairs: int(0.31 / 0.1) = 3 cells), each a riser lower, then flat ground at z = 0 up to x = 9 m; 4 m wide.  dt
 * 1 ms.  By default every collision geometry of herd's ANYmal collides (feet spheres, shank cylinders, thigh boxes,
 * base box), so that shanks and thighs meet the stair noses.
 *   trot    (default) the robot starts on the platform, base at x = 0, under the trot scenario's controller
 *           (env_scenario.h: 1.5 m/s after a 0.3 s stand and a 1 s ramp; its swing feet land at the terrain's
 *           height and its base height target is over the mean terrain under the hips; blind otherwise), called
 *           directly with the scenario's PD, because the scenario's own fall guard (base below 0.25 m or tilted over
 *           60 degrees) is absolute: here it is taken over the mean terrain under the hips.  A fall restarts the robot
 *           on the platform and is counted, as is each descent (the base past x = 2.2 m, every hip beyond the last
 *           riser).
 *   settle  a controlled drop down the steps: the stand scenario's PD (nominal pose), released level at rest with
 *           its lowest foot 5 mm above the highest ground under it, at base x = -0.2, -0.1, ..., 2.2 m in turn (25
 *           places, 1 s each: feet land on treads, noses and against risers); a drop that ends tilted over 60
 *           degrees counts as a fall; penetration is taken over the second half of each drop (at rest).
 *
 * Reported (JSON line, then a table on stderr): per step the contacts on tops, walls and edges (sim_contact_face),
 * by geometry (feet, shanks and thighs, base), their maximum, the deepest penetration (sim_step_stats), solver
 * fallbacks, descents and falls; and the cost of one sim_collide on the states of the run:
 * each 10th state's geometry is collided 20 times per repeat on the cells and on a plane at the lowest ground under
 * a foot (the same model otherwise, so that the plane has contacts too), cells and plane alternating, thread CPU
 * time; medians over --repeats of the per-call mean, and their ratio. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "env_anymal_model.h"
#include "env_scenario.h"
#include "sim_collision.h"
#include "sim_dynamics.h"
#include "sim_step.h"
#include "sim_urdf.h"

#define ST_MODEL_PATH "envs/models/anymal_c.urdf"
#define ST_NX 121           /* cells along x: -2.95 .. 9.05 */
#define ST_NY 41            /* along y: -2 .. 2 */
#define ST_X0 (-2.95)
#define ST_Y0 (-2.0)
#define ST_DX 0.1
#define ST_MAXSTATES 2048
#define ST_SETTLE_STEPS 1000 /* settle: steps per drop */
#define ST_DROP_X0 (-0.2)    /* settle: base x of the first drop (m), then every ST_DROP_DX over ST_DROP_N places */
#define ST_DROP_DX 0.1
#define ST_DROP_N 25
#define ST_DROP 0.005        /* settle: the lowest foot's height above its tread at release (m) */

/* Raises or lowers the base of d (level, at its pose) so that its lowest foot sphere is ST_DROP above the highest
 * terrain under it. */
static void drop_place(const sim_model *m, sim_data *d)
{
    sim_kinematics(m, d);
    double clear = INFINITY;
    for (int g = 0; g < m->ngeom; g++) {
        const sim_geom *G = &m->geom[g];
        if (G->type != SIM_GEOM_SPHERE) continue;
        const double *R = d->xrot + 9 * G->body, *x = d->xpos + 3 * G->body;
        double c[3], h, n[3];
        for (int i = 0; i < 3; i++) c[i] = x[i] + R[3 * i] * G->pos[0] + R[3 * i + 1] * G->pos[1] + R[3 * i + 2] * G->pos[2];
        /* the highest ground the sphere overlaps horizontally (its centre and four rim points) */
        double top = -INFINITY;
        for (int k = 0; k < 5; k++) {
            const double ox = k == 1 ? G->size[0] : k == 2 ? -G->size[0] : 0, oy = k == 3 ? G->size[0] : k == 4 ? -G->size[0] : 0;
            sim_terrain_query(&m->terrain, c[0] + ox, c[1] + oy, &h, n);
            if (h > top) top = h;
        }
        if (c[2] - G->size[0] - top < clear) clear = c[2] - G->size[0] - top;
    }
    if (clear < INFINITY) d->q[2] -= clear - ST_DROP;
}


int bench_stairs_policy(int argc, char **argv); /* bench_stairs_policy.c */

int bench_stairs(int argc, char **argv)
{
    const char *mode = bench_arg(argc, argv, "--mode", "trot");
    if (!strcmp(mode, "policy")) return bench_stairs_policy(argc, argv);
    const int settle = !strcmp(mode, "settle");
    const long steps = atol(bench_arg(argc, argv, "--steps", settle ? "25000" : "5000"));
    const char *solver = bench_arg(argc, argv, "--solver", NULL);
    const char *geoms = bench_arg(argc, argv, "--geoms", "all");
    const double riser = atof(bench_arg(argc, argv, "--riser", "0.21"));
    const int R = atoi(bench_arg(argc, argv, "--repeats", "5"));
    const double dt = 1e-3;
    if ((!settle && strcmp(mode, "trot")) || steps < 1 || R < 1 || !(riser >= 0 && riser < 0.5) || (strcmp(geoms, "all") && strcmp(geoms, "feet-base"))) {
        fprintf(stderr, "herd-bench stairs: bad --mode (trot, settle, policy)/--steps/--repeats/--riser (0 .. 0.5)/--geoms (all, feet-base)\n");
        return 2;
    }
    char err[512] = "";
    sim_model *m = sim_urdf_load_file(ST_MODEL_PATH, NULL, err, sizeof err);
    if (!m) { fprintf(stderr, "herd-bench stairs: %s\n", err); return 1; }
    if (env_scenario_configure_model(m, ENV_SCN_TROT, err, sizeof err)) {
        fprintf(stderr, "herd-bench stairs: %s\n", err);
        sim_model_destroy(&m);
        return 1;
    }
    if (!strcmp(geoms, "all"))
        for (int g = 0; g < m->ngeom; g++) m->geom[g].nocollide = 0;
    if (solver) {
        const int si = sim_solver_index(solver);
        if (si < 0 || !sim_solver_find(solver)) {
            fprintf(stderr, "herd-bench stairs: unknown solver '%s'\n", solver);
            sim_model_destroy(&m);
            return 2;
        }
        m->opt.solver = si;
    }
    /* the stairs: platform 3 risers up for x < 1.0, treads [1.0, 1.3) and [1.3, 1.6) and [1.6, ...) a riser lower
       each; cell ix spans [-3.0 + 0.1 ix, -2.9 + 0.1 ix) */
    static float hts[ST_NX * ST_NY];
    for (int iy = 0; iy < ST_NY; iy++)
        for (int ix = 0; ix < ST_NX; ix++) {
            const int k = ix < 40 ? 3 : ix < 43 ? 2 : ix < 46 ? 1 : 0;
            hts[iy * ST_NX + ix] = (float)(k * riser);
        }
    if (sim_terrain_cells(&m->terrain, ST_NX, ST_NY, ST_X0, ST_Y0, ST_DX, ST_DX, hts, NULL, err, sizeof err)) {
        fprintf(stderr, "herd-bench stairs: %s\n", err);
        sim_model_destroy(&m);
        return 1;
    }
    sim_model *mp = malloc(sizeof *mp); /* the same model on the plane z = 0, for the collision's baseline */
    sim_data *d = sim_data_new(m), *dp = NULL;
    double *states = malloc(sizeof(double) * (size_t)(m->nq + m->nv) * ST_MAXSTATES);
    double *plane_h = malloc(sizeof(double) * ST_MAXSTATES);
    if (!mp || !d || !states || !plane_h) {
        fprintf(stderr, "herd-bench stairs: out of memory\n");
        free(mp), free(states), free(plane_h), sim_data_destroy(&d), sim_model_destroy(&m);
        return 1;
    }
    memcpy(mp, m, sizeof *m);
    mp->terrain = sim_terrain_plane(0);
    dp = sim_data_new(mp);
    env_scenario s;
    if (!dp || env_scenario_init(&s, m, d, ENV_SCN_TROT, 1, err, sizeof err)) {
        fprintf(stderr, "herd-bench stairs: %s\n", dp ? err : "out of memory");
        free(mp), free(states), free(plane_h), sim_data_destroy(&d), sim_data_destroy(&dp), sim_model_destroy(&m);
        return 1;
    }
    /* trot: start on the platform, the scenario's pose raised by its height; settle: the stand scenario's PD */
    env_scenario stand;
    if (settle && env_scenario_init(&stand, m, d, ENV_SCN_STAND, 1, err, sizeof err)) {
        fprintf(stderr, "herd-bench stairs: %s\n", err);
        free(mp), free(states), free(plane_h), sim_data_destroy(&d), sim_data_destroy(&dp), sim_model_destroy(&m);
        return 1;
    }
    if (!settle) d->q[2] += 3 * riser;
    long drops = 0;
    long classes[SIM_FACE_COUNT] = {0}, fallbacks = 0, ncon_max = 0, nstates = 0, falls = 0, descents = 0;
    int down = 0; /* this episode's descent is counted */
    long geom_hits[3] = {0}; /* contacts of feet / shanks and thighs / base */
    double pen_max = 0;
    for (long i = 0; i < steps; i++) {
        if (settle) {
            /* each ST_SETTLE_STEPS a drop at the next x: level, the lowest foot ST_DROP above its tread */
            if (i % ST_SETTLE_STEPS == 0) {
                if (i > 0 && 1 - 2 * (d->q[4] * d->q[4] + d->q[5] * d->q[5]) < 0.5) falls++;
                env_scenario_reset(&stand, m, d);
                d->q[0] = ST_DROP_X0 + ST_DROP_DX * (double)(drops++ % ST_DROP_N);
                drop_place(m, d);
            }
            env_scenario_control(&stand, m, d, dt);
        } else {
        /* the scenario's fall guard (base below 0.25 m or tilted over 60 degrees), over the mean terrain under the
           hips: a fall restarts the robot on the platform */
        sim_kinematics(m, d);
        double hmean = 0;
        const double yaw = atan2(d->xrot[3], d->xrot[0]), cy = cos(yaw), sy = sin(yaw);
        for (int l = 0; l < 4; l++) {
            double h, n[3];
            sim_terrain_query(&m->terrain, d->q[0] + cy * s.trot.nominal[l][0] - sy * s.trot.nominal[l][1],
                              d->q[1] + sy * s.trot.nominal[l][0] + cy * s.trot.nominal[l][1], &h, n);
            hmean += 0.25 * h;
        }
        const double zz = 1 - 2 * (d->q[4] * d->q[4] + d->q[5] * d->q[5]);
        if (d->q[2] - hmean < 0.25 || zz < 0.5) {
            falls++;
            down = 0;
            env_scenario_reset(&s, m, d);
            d->q[2] += 3 * riser;
            continue;
        }
        s.t_episode += dt;
        env_scenario_trot_control(&s, m, d, dt);
        env_anymal_pd(&s.joints, d, s.target, s.kp, s.kd, s.tau_max, NULL);
        }
        if (sim_step(m, d, dt)) {
            fprintf(stderr, "herd-bench stairs: sim_step failed at step %ld\n", i);
            break;
        }
        if (!settle && !down && d->q[0] > 2.2) down = 1, descents++;
        fallbacks += d->stats.fallback;
        if (d->ncon > ncon_max) ncon_max = d->ncon;
        if (d->stats.penetration > pen_max && (!settle || i % ST_SETTLE_STEPS >= ST_SETTLE_STEPS / 2))
            pen_max = d->stats.penetration;
        for (int c = 0; c < d->ncon; c++) {
            classes[sim_contact_face(&m->terrain, d->con[c].feature)]++;
            const sim_geom *G = &m->geom[d->con[c].geom];
            geom_hits[G->type == SIM_GEOM_SPHERE ? 0 : !strncmp(G->name, "base", 4) ? 2 : 1]++;
        }
        if (i % 10 == 0 && nstates < ST_MAXSTATES) {
            /* the plane baseline's height: the lowest ground under a foot, so that the plane has contacts too */
            double hlow = INFINITY;
            for (int g = 0; g < m->ngeom; g++) {
                const sim_geom *G = &m->geom[g];
                if (G->type != SIM_GEOM_SPHERE) continue;
                const double *Rg = d->xrot + 9 * G->body, *xg = d->xpos + 3 * G->body;
                double h, n[3];
                sim_terrain_query(&m->terrain, xg[0] + Rg[0] * G->pos[0] + Rg[1] * G->pos[1] + Rg[2] * G->pos[2],
                                  xg[1] + Rg[3] * G->pos[0] + Rg[4] * G->pos[1] + Rg[5] * G->pos[2], &h, n);
                if (h < hlow) hlow = h;
            }
            plane_h[nstates] = hlow < INFINITY ? hlow : 0;
            memcpy(states + (size_t)(m->nq + m->nv) * nstates, d->q, sizeof(double) * (size_t)m->nq);
            memcpy(states + (size_t)(m->nq + m->nv) * nstates + m->nq, d->u, sizeof(double) * (size_t)m->nv);
            nstates++;
        }
    }
    if (settle && 1 - 2 * (d->q[4] * d->q[4] + d->q[5] * d->q[5]) < 0.5) falls++; /* the last drop */
    /* collision cost: the recorded states on the cells and on the plane, alternating per repeat */
    double *tc = malloc(sizeof(double) * R), *tp = malloc(sizeof(double) * R);
    sim_contact con[128];
    long ncells = 0, nplane = 0;
    for (int r = 0; r < R && tc && tp; r++)
        for (int which = 0; which < 2; which++) {
            const sim_model *mm = which ? mp : m;
            sim_data *dd = which ? dp : d;
            uint64_t t = 0;
            long nsum = 0;
            for (long k = 0; k < nstates; k++) {
                memcpy(dd->q, states + (size_t)(m->nq + m->nv) * k, sizeof(double) * (size_t)m->nq);
                memcpy(dd->u, states + (size_t)(m->nq + m->nv) * k + m->nq, sizeof(double) * (size_t)m->nv);
                mp->terrain.height = plane_h[k];
                sim_kinematics(mm, dd);
                sim_velocity(mm, dd);
                const uint64_t t0 = bench_thread_cpu_ns();
                for (int rep = 0; rep < 20; rep++) nsum += sim_collide(mm, dd, mm->opt.margin, dt, con, 128);
                t += bench_thread_cpu_ns() - t0;
            }
            (which ? tp : tc)[r] = nstates ? (double)t / (20.0 * nstates) : 0;
            if (r == 0) *(which ? &nplane : &ncells) = nsum;
        }
    const double ns_cells = tc ? bench_median(tc, R) : NAN, ns_plane = tp ? bench_median(tp, R) : NAN;
    const double dist = d->q[0];
    printf("{\"bench\":\"stairs\",\"mode\":\"%s\",\"drops\":%ld,\"riser_m\":%g,\"tread_m\":0.3,\"steps\":%ld,\"dt\":%g,\"geoms\":\"%s\",\"solver\":\"%s\","
           "\"contacts_per_step\":{\"top\":%.3f,\"wall\":%.3f,\"edge\":%.3f},\"contacts_max\":%ld,"
           "\"contacts_per_step_by_geom\":{\"feet\":%.3f,\"legs\":%.3f,\"base\":%.3f},"
           "\"penetration_max_m\":%.3e,\"fallbacks\":%ld,\"descents\":%ld,\"falls\":%ld,\"base_x_final_m\":%.3f,\"base_z_final_m\":%.3f,"
           "\"collide_ns\":{\"cells\":%.1f,\"plane\":%.1f,\"ratio\":%.2f},\"collide_states\":%ld,"
           "\"collide_contacts_per_call\":{\"cells\":%.2f,\"plane\":%.2f},\"repeats\":%d,\"cpu\":\"%s\"}\n",
           mode, drops, riser, steps, dt, geoms, sim_solver_at(m->opt.solver) ? sim_solver_at(m->opt.solver)->name : "?",
           classes[0] / (double)steps, classes[1] / (double)steps, classes[2] / (double)steps, ncon_max,
           geom_hits[0] / (double)steps, geom_hits[1] / (double)steps, geom_hits[2] / (double)steps, pen_max, fallbacks,
           descents, falls, dist, d->q[2], ns_cells, ns_plane, ns_cells / ns_plane, nstates,
           nstates ? ncells / (20.0 * nstates) : 0, nstates ? nplane / (20.0 * nstates) : 0, R, bench_cpu());
    fprintf(stderr,
            "stairs (%s%s): ANYmal C on 3 x %.0f cm steps, %ld steps of %g ms, geoms %s, solver %s\n"
            "  contacts per step: top %.2f, wall %.2f, edge %.2f (max %ld in one step); feet %.2f, legs %.2f, base %.2f\n"
            "  max penetration %.2f mm, solver fallbacks %ld, descents %ld, falls %ld, base at x %.2f m, z %.3f m\n"
            "  sim_collide on the run's states: cells %.0f ns, plane %.0f ns (ratio %.2f)\n",
            mode, settle ? ", drops of 1 s at 25 places" : "", riser * 100, steps, dt * 1e3, geoms, sim_solver_at(m->opt.solver) ? sim_solver_at(m->opt.solver)->name : "?",
            classes[0] / (double)steps, classes[1] / (double)steps, classes[2] / (double)steps, ncon_max,
            geom_hits[0] / (double)steps, geom_hits[1] / (double)steps, geom_hits[2] / (double)steps, pen_max * 1e3,
            fallbacks, descents, falls, dist, d->q[2], ns_cells, ns_plane, ns_cells / ns_plane);
    free(tc), free(tp), free(states), free(plane_h), free(mp);
    sim_data_destroy(&d), sim_data_destroy(&dp), sim_model_destroy(&m);
    return 0;
}
