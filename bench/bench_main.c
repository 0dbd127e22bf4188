/* herd-bench — benchmarks printing one JSON object per line (stdout) and a human table (stderr).
 *   herd-bench dynamics | solver | contact1 | contact-models | env | server | actuator | all   [options]
 * Subcommands live in their own files; one that is not linked in is reported as such (the MuJoCo comparisons, in a
 * build without MuJoCo). */
#include "bench.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Weak references: a subcommand whose file is absent resolves to NULL. */
#pragma weak bench_dynamics
#pragma weak bench_solver
#pragma weak bench_contact1
#pragma weak bench_contact_models
#pragma weak bench_env
#pragma weak bench_server
#pragma weak bench_poses
#pragma weak bench_admm
#pragma weak bench_terrain
#pragma weak bench_stairs
#pragma weak bench_actuator

static const struct { const char *name; const char *what; const char *options; } cmds[] = {
    {"dynamics", "FK + CRBA + RNEA + LTDL on ANYmal C vs MuJoCo's same stages",
     "  --model PATH      URDF (default envs/models/anymal_c.urdf)\n"
     "  --iters N         updates per repeat (default 20000)\n"
     "  --repeats R       repeats; medians are reported (default 21)\n"},
    {"solver", "contact solvers on the paper's four scenarios (--scenario, --solver, --compare, --vs-mujoco)",
     "  --scenario S      trot | hang | drop | random (default trot)\n"
     "  --solver NAME     contact solver (default bisection)\n"
     "  --steps N         physics steps per repeat (default 20000)\n"
     "  --dt SECONDS      physics step (default 0.001)\n"
     "  --erp E           error reduction (default 0)\n"
     "  --repeats R       (default 5)\n"
     "  --compare         every solver on the same steps (Fig. 6 / Table II)\n"
     "  --no-warmstart    cold starts\n"
     "  --vs-mujoco       the standing PD scenario in herd and in MuJoCo (--mj-cone, --mj-floor, --mj-impratio,\n"
     "                    --tol, --no-mj-defaults-ref)\n"},
    {"admm", "ADMM's dense and tree factorizations of G + rho I on the walk task's problems and heavy-on-light",
     "  --steps N         walk physics steps harvested (default 20000)\n"
     "  --repeats R       (default 7)\n"
     "  --mode M          all | dense | tree | auto (default all; one mode for callgrind)\n"},
    {"contact1", "single-contact bisection solve",
     "  --source S        scenarios (harvested from the paper's scenarios) | random (default scenarios)\n"
     "  --samples N       problems (default 4096)\n"
     "  --coupling C      random problems: normal-tangential coupling (default 0.5)\n"
     "  --seed N          (default 1)\n"
     "  --repeats R       (default 15)\n"
     "  --core C          pin to this core (default 0)\n"},
    {"env", "batched environment stepping (--env, --worlds, --threads, --profile, --vs-mujoco)",
     "  --env NAME        a registered task (default anymal_c-walk)\n"
     "  --worlds N        worlds (default 4096; --profile 256; --vs-mujoco 32)\n"
     "  --threads T       worker threads; 0 runs 1 and 2 and reports the speedup (default 0)\n"
     "  --steps S         env steps per repeat (default 50; --profile 20)\n"
     "  --repeats R       (default 5)\n"
     "  --warmup W        untimed env steps after the reset (default 25)\n"
     "  --once            reset and warm up once, the repeats continue the trajectories (large --worlds)\n"
     "  --sweep N1,N2,..  throughput per thread for each world count, one process, repeats interleaved (on a\n"
     "                    terrain task world i stands on the column of i mod gcd(N1,N2,..): the same work at every N)\n"
     "  --solvers A,B,..  the same worlds and actions under each contact solver (names as in `herd-bench solver`),\n"
     "                    one process, repeats interleaved, ratios to the first solver (paired)\n"
     "  --actuators A,..  the same under each actuator model (pd, lstm, dc), and with lstm the network's share of\n"
     "                    its env step (the network timed alone in the same run; thread CPU time)\n"
     "  --pair KEY=V1,V2,..  the same under each value of one configuration key (e.g. joint_limits=0,1)\n"
     "  --envs A,B,..     the same actions under each task (same action size; e.g. anymal_c-walk,anymal_c-rough),\n"
     "                    one process, repeats interleaved, ratios to the first and its cost ratio\n"
     "  --config K=V,..   keys set in every configuration (--profile, --sweep, --solvers, --actuators, --pair, --envs;\n"
     "                    a key with named choices by name: actuator=pd)\n"
     "  --profile         per-stage time of a physics step on one thread (PD, dynamics, collision, Jacobians,\n"
     "                    Delassus, solve, finish, env overhead), the models the solves' answers satisfy and the\n"
     "                    lane efficiency of the solves batched over worlds in lock step\n"
     "  --solver NAME     with --profile: the task under this contact solver (default: the task's own)\n"
     "  --vs-mujoco       the same env steps in MuJoCo 2.2: its fastest configuration that stands under zero\n"
     "                    actions (a grid; --grid full|quick, --stand-seconds S), its fastest standing one whose\n"
     "                    median contact-impulse error is <= 1 %, and its defaults; every configuration's accuracy\n"
     "                    against its own engine's converged solve on the same states (herd's grid too)\n"},
    {"server", "served vs in-process throughput and latency over ZeroMQ, and one worker's slice stepped alone "
               "against the whole session; --memory: server memory per world",
     "  --env NAME        (default anymal_c-walk)\n"
     "  --worlds N        (default 4096)\n"
     "  --threads T       server worker threads (default 0 = all cores)\n"
     "  --transport T     tcp | ipc (default tcp)\n"
     "  --steps S         (default: sized to the worlds)\n"
     "  --batch B         worlds per step request (default: all)\n"
     "  --repeats R       (default 3)\n"
     "  --rtt-iters N     1-world round trips timed (default 1000)\n"
     "  --quantum N, --spin-us N   server settings (defaults 16, 250)\n"
     "  --memory          instead: herd-server's RSS per world (a fresh server per N, after make + reset + step)\n"
     "  --memory-worlds L comma-separated N (default 1,1024,4096,16384,65536); --server-bin PATH\n"},
    {"poses", "a viewer's poses reads vs stepping, per worker (--env, --worlds, --watched, --hz)",
     "  --env NAME        (default anymal_c-walk)\n"
     "  --worlds N        worlds of the session (default 4096)\n"
     "  --watched K       worlds whose poses are read (default 16)\n"
     "  --hz F            reads per second (default 30)\n"
     "  --repeats R       (default 7)\n"},
    {"terrain", "legged_gym's curriculum terrain: generation time and memory of the whole field",
     "  --rows N, --cols N levels and columns (default 10, 20)\n"
     "  --seed N          (default 1)\n"
     "  --repeats R       (default 9)\n"},
    {"stairs", "ANYmal C down three 21 cm steps on the cell terrain (a trot, drops, or a trained policy in the rough "
               "task): contacts on tops, walls and edges, penetration, fallbacks, and the collision's cost",
     "  --mode M          trot | settle | policy: the trot scenario from the platform, 25 drops down the steps under\n"
     "                    the stand PD, or a trained policy on the rough task's stairs_down tiles (default trot)\n"
     "  --policy FILE     policy: the actor as bench/export_actor.py writes it (its task and config are used)\n"
     "  --level L         policy: the frozen terrain level (default 9: 21.2 cm risers)\n"
     "  --worlds N        policy: worlds of the task, a quarter of them on stairs_down (default 80)\n"
     "  --seconds S       policy: simulated seconds (default 60); --pushes: keep the task's pushes\n"
     "  --steps N         physics steps of 1 ms (default 5000; settle 25000)\n"
     "  --solver NAME     contact solver (default: the model's)\n"
     "  --geoms G         all | feet-base: which geometries collide (default all)\n"
     "  --riser H         step height in m (default 0.21)\n"
     "  --repeats R       collision timing repeats (default 5)\n"},
    {"actuator", "the LSTM actuator network per joint and physics step: batch, per-world calls, libm baseline",
     "  --worlds N        worlds of 12 joints (default 4096)\n"
     "  --steps S         physics steps per repeat (default 4)\n"
     "  --repeats R       (default 15)\n"
     "  --core C          pin to this core (default 0)\n"},
    {"contact-models", "every solver on the comparative paper's experiments, Fig. 6 and Table II (--quick, --only)",
     NULL},   /* prints its own --help (its solver list comes from sim's table) */
};

static int usable_cpus(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* Help of one subcommand (herd-bench SUB --help); 0 if it is unknown. */
static int sub_help(const char *name)
{
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        if (!strcmp(cmds[i].name, name) && cmds[i].options) {
            printf("usage: herd-bench %s [options]\n%s.\nJSON lines on stdout (medians over repeats, ratios to a baseline "
                   "measured in the same run), a table on stderr.\noptions:\n%s", cmds[i].name, cmds[i].what,
                   cmds[i].options);
            return 1;
        }
    return 0;
}

static bench_fn lookup(const char *name)
{
    if (!strcmp(name, "dynamics")) return bench_dynamics;
    if (!strcmp(name, "solver")) return bench_solver;
    if (!strcmp(name, "contact1")) return bench_contact1;
    if (!strcmp(name, "contact-models")) return bench_contact_models;
    if (!strcmp(name, "env")) return bench_env;
    if (!strcmp(name, "server")) return bench_server;
    if (!strcmp(name, "poses")) return bench_poses;
    if (!strcmp(name, "admm")) return bench_admm;
    if (!strcmp(name, "terrain")) return bench_terrain;
    if (!strcmp(name, "stairs")) return bench_stairs;
    if (!strcmp(name, "actuator")) return bench_actuator;
    return NULL;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: herd-bench <subcommand> [options]\n       herd-bench all\nsubcommands:\n");
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        fprintf(f, "  %-14s %s%s\n", cmds[i].name, cmds[i].what, lookup(cmds[i].name) ? "" : " (not built)");
    if (!HERD_MUJOCO)
        fprintf(f, "built without MuJoCo: no dynamics subcommand, no env or solver --vs-mujoco (make MUJOCO=auto with "
                   "libmujoco-dev installed builds them)\n");
}

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "all")) {
        int rc = 0;
        for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
            bench_fn fn = lookup(cmds[i].name);
            if (!fn) {
                fprintf(stderr, "herd-bench all: %s is not built%s\n", cmds[i].name, HERD_MUJOCO ? "" : " (built without MuJoCo)");
                continue;
            }
            char *sub[] = {(char *)cmds[i].name, NULL};
            rc |= fn(1, sub);
        }
        return rc;
    }
    if (bench_flag(argc - 1, argv + 1, "--help") || bench_flag(argc - 1, argv + 1, "-h")) {
        if (sub_help(argv[1])) return 0;
    }
    const char *threads = bench_arg(argc - 1, argv + 1, "--threads", NULL);
    if (threads && atoi(threads) > usable_cpus())
        fprintf(stderr, "herd-bench: warning: --threads %s exceeds the %d CPUs this process may use: threads will "
                        "share cores and per-thread figures will be too low\n", threads, usable_cpus());
    bench_fn fn = lookup(argv[1]);
    if (!fn) {
        fprintf(stderr, "herd-bench: unknown or unbuilt subcommand '%s'\n", argv[1]);
        usage(stderr);
        return 2;
    }
    return fn(argc - 1, argv + 1);
}
