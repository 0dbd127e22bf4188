# herd — GNU make build.  Everything goes to build/.
#   make            optimized build (-O3): the layer libraries, server, demo, bench, tests
#   make MUJOCO=no  the same without MuJoCo (auto: with it where libmujoco-dev is installed; yes: required)
#   make test-no-mujoco   the C suite from a build without MuJoCo (peer tests skipped and counted), without AVX-512
#   make test-valgrind    herd-server of that build under valgrind (server/tools/valgrind_check.sh)
#   make test       every test (C tests under Criterion; Python/Julia client tests where present)
#   make sanitize   the whole C test suite under ASan + UBSan (build/san/)
#   make test-bits  the golden per-step hashes from an x86-64-v2 build (the same bits as the default build)
#   make bench      the benchmarks (JSON lines)
#   make contact-models-report   every contact solver on the comparative paper's experiments (docs/contact-models/)
#   make bench-report   docs/benchmarks.md with plots (<= 15 minutes)
#   make solver-report  docs/solvers.md: each contact solver's model, fallback rate, Coulomb fraction and cost on
#                       anymal_c-walk and anymal_c-rough (a few minutes)
#   make docs-figures   the run-derived figures of README.md (and any *.md with figure markers) from the
#                       committed run outputs (docs/figures.py); make test checks that they agree
#   make run        the main job: herd-server on tcp://127.0.0.1:5555
#   make demo       the physics demo (ANYmal C dropped and standing under PD)
#   make deps       install the Debian packages (idempotent)
#   make fuzz       the libFuzzer targets (clang-14, ASan + UBSan: build/fuzz/); fuzz/README.md
#   make fuzz-short a short run of every fuzz target (what `make test` runs); FUZZ_SECONDS=45 per target

BUILD    ?= build
CC       ?= gcc
# Instruction set: the highest x86-64 level the build machine has: v4 (AVX-512 F, BW, CD, DQ, VL), v3 (AVX2 + FMA)
# or v2; override with make MARCH=...  Every build (optimized, sanitizer, fuzz) gets it, whatever OPT says.
# The bits of a result do not depend on it:
# - nothing is compiled with floating-point contraction (-ffp-contract=off, after OPT and CFLAGS so that they
#   cannot turn it back on), in every folder: sim/ is the physics, and envs/ computes the actions' torques, the
#   observations and the rewards from it, so a contraction in either would make the bytes a trainer receives
#   depend on the compiler's choices;
# - a fused multiply-add is written in the source where it is wanted (sim_fma in sim/sim_spatial.h, fma() in
#   envs/), and always rounds once: one instruction on v3, glibc's correctly rounded fma() on v2 (slower, same
#   bits);
# - no function is chosen by the CPU at load time.
# So v2, v3 and v4 builds, and the sanitizer build, give the same numbers (tests/test_golden_steps.c holds one
# set of hashes for all of them).
has_flags = $(shell f=/proc/cpuinfo; for x in $(1); do grep -qw $$x $$f 2>/dev/null || exit 0; done; echo yes)
ifndef MARCH
MARCH    := $(if $(call has_flags,avx512f avx512bw avx512cd avx512dq avx512vl avx2 fma),x86-64-v4,$(if $(call has_flags,avx2 fma),x86-64-v3,x86-64-v2))
endif
# The build that valgrind runs (test-valgrind) and, so that it is a tested build, the suite without MuJoCo
# (test-no-mujoco): MARCH without AVX-512, which valgrind's decoder lacks.  On a v4 machine that makes the C
# suite also run on a v3 build.
MARCH_NO_AVX512 := $(if $(filter x86-64-v4,$(MARCH)),x86-64-v3,$(MARCH))
OPT      ?= -O3 -fno-math-errno
CSTD     := -std=c11 -D_GNU_SOURCE
WARN     := -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter
XML_CFLAGS := $(shell pkg-config --cflags libxml-2.0 2>/dev/null || echo -I/usr/include/libxml2)
XML_LIBS   := $(shell pkg-config --libs libxml-2.0 2>/dev/null || echo -lxml2)
CFLAGS   ?= $(OPT) -g
ALL_CFLAGS := $(CSTD) $(WARN) -march=$(MARCH) $(CFLAGS) -ffp-contract=off $(XML_CFLAGS) -I. -Isim -Ienvs -Iprotocol -Iserver -Iclients/c $(EXTRA_CFLAGS)
LDLIBS   := $(XML_LIBS) -lzmq -lmsgpackc -lmicrohttpd -lpthread -lm $(EXTRA_LDLIBS)

# MuJoCo is the peer herd is compared with (peers/mj_peer.c; tests/test_vs_mujoco.c, herd-bench's comparisons), never
# a dependency of herd itself.  MUJOCO=auto uses it where its headers and library are installed (libmujoco-dev),
# MUJOCO=yes requires it, MUJOCO=no leaves it out: the peer tests then skip (counted as skipped) and herd-bench lacks
# its MuJoCo comparisons (and says so).
MUJOCO   ?= auto
ifeq ($(MUJOCO),auto)
HAVE_MUJOCO := $(shell printf '\043include <mujoco/mujoco.h>\nint main(void) { return mj_version() < 0; }\n' | \
                 $(CC) -x c - -o /dev/null -lmujoco >/dev/null 2>&1 && echo yes || echo no)
else ifeq ($(MUJOCO),yes)
HAVE_MUJOCO := yes
else ifeq ($(MUJOCO),no)
HAVE_MUJOCO := no
else
$(error MUJOCO must be auto, yes or no, not '$(MUJOCO)')
endif
ifeq ($(HAVE_MUJOCO),yes)
MUJOCO_LIBS := -lmujoco
PEER_OBJ    := $(BUILD)/obj/peers/mj_peer.o
else
MUJOCO_LIBS :=
PEER_OBJ    :=
endif

# The layers (DESIGN.md), each its own archive; a program links the archives of the layers it uses, highest first,
# so that a reference from a layer to one above it does not link (and layer-link below checks every layer alone).
SIM_OBJ      := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard sim/*.c))
ENVS_OBJ     := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard envs/*.c)) $(BUILD)/obj/gen/model_anymal_c.o
PROTOCOL_OBJ := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard protocol/*.c))
CLIENT_OBJ   := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard clients/c/*.c))
SERVER_OBJ   := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard server/srv_*.c))
LIB_SIM      := $(BUILD)/libherd_sim.a
LIB_ENVS     := $(BUILD)/libherd_envs.a
LIB_PROTOCOL := $(BUILD)/libherd_protocol.a
LIB_CLIENT   := $(BUILD)/libherd_client.a
LIB_SERVER   := $(BUILD)/libherd_server.a
LAYER_LIBS   := $(LIB_SIM) $(LIB_ENVS) $(LIB_PROTOCOL) $(LIB_CLIENT) $(LIB_SERVER)
# What each kind of program links, in layer order
PHYSICS_LIBS := $(LIB_ENVS) $(LIB_SIM)
CLIENT_LIBS  := $(LIB_CLIENT) $(LIB_PROTOCOL)
SERVER_LIBS  := $(LIB_SERVER) $(LIB_PROTOCOL) $(LIB_ENVS) $(LIB_SIM)
ALL_LIBS     := $(LIB_SERVER) $(LIB_CLIENT) $(LIB_PROTOCOL) $(LIB_ENVS) $(LIB_SIM)

TEST_SRC := $(wildcard tests/test_*.c)
TEST_BIN := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
# herd-bench's MuJoCo comparisons; without MuJoCo the rest of herd-bench is built and names what it lacks
BENCH_MUJOCO_SRC := bench/bench_accuracy_mj.c bench/bench_dynamics.c bench/bench_env_mujoco.c bench/bench_solver_mujoco.c
BENCH_SRC:= $(if $(PEER_OBJ),$(wildcard bench/*.c),$(filter-out $(BENCH_MUJOCO_SRC),$(wildcard bench/*.c)))
BENCH_OBJ:= $(BENCH_SRC:%.c=$(BUILD)/obj/%.o)
TESTHELP := $(wildcard tests/helpers/*.c)
TESTHELP_OBJ := $(TESTHELP:%.c=$(BUILD)/obj/%.o)
MAIN_BINS := $(patsubst %/main_%.c,$(BUILD)/herd-%,$(wildcard server/main_*.c))
MAIN_BINS := $(foreach f,$(wildcard server/main_*.c),$(BUILD)/herd-$(patsubst server/main_%.c,%,$(f)))

.SECONDARY:
.PHONY: all test test-c test-py test-jl sanitize bench run demo deps clean
all: $(LAYER_LIBS) layer-link $(MAIN_BINS) $(BUILD)/herd-demo $(BUILD)/herd-bench $(BUILD)/herd-ping $(TEST_BIN)

deps:
	@deploy/install-deps.sh

# Rebuild everything when the compiler flags change.
FLAGS_STAMP := $(BUILD)/.flags
$(shell mkdir -p $(BUILD) && echo '$(CC) $(ALL_CFLAGS) $(LDLIBS)' | cmp -s - $(FLAGS_STAMP) || echo '$(CC) $(ALL_CFLAGS) $(LDLIBS)' > $(FLAGS_STAMP))

$(BUILD)/obj/%.o: %.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c $< -o $@

# Whether this build has MuJoCo: the peer's users are compiled with HERD_MUJOCO 0 or 1 (and again when it changes).
MUJOCO_STAMP := $(BUILD)/.mujoco
$(shell mkdir -p $(BUILD) && echo '$(HAVE_MUJOCO)' | cmp -s - $(MUJOCO_STAMP) || echo '$(HAVE_MUJOCO)' > $(MUJOCO_STAMP))
PEER_USERS := $(BENCH_OBJ) $(BUILD)/obj/tests/test_vs_mujoco.o $(BUILD)/obj/tests/test_bench_accuracy.o $(BUILD)/obj/peers/mj_peer.o
$(PEER_USERS): ALL_CFLAGS += -Ipeers -DHERD_MUJOCO=$(if $(PEER_OBJ),1,0)
$(PEER_USERS): $(MUJOCO_STAMP)

# sim/'s vectors of four doubles (sim_batch.c's lanes, sim_spatial.h's helpers, which test_dynamics checks) pass
# between static functions only: that their passing convention differs with and without AVX (GCC's -Wpsabi, in
# builds without AVX) concerns no interface.
$(BUILD)/obj/sim/%.o $(BUILD)/obj/tests/test_dynamics.o: ALL_CFLAGS += -Wno-psabi

# The ANYmal C model is embedded in the library (no model files needed at run time; HERD_MODEL_DIR
# overrides it with a directory holding anymal_c.urdf).
$(BUILD)/gen/model_anymal_c.c: envs/models/anymal_c.urdf
	@mkdir -p $(dir $@)
	@{ echo '/* generated from $< by the Makefile */'; \
	   echo 'const char herd_model_anymal_c_urdf[] = {'; \
	   od -An -v -tx1 $< | sed -E 's/ *([0-9a-f]{2})/0x\1,/g'; \
	   echo '0x00};'; \
	   echo "const unsigned long herd_model_anymal_c_urdf_len = $$(wc -c < $<);"; } > $@

$(BUILD)/obj/gen/model_anymal_c.o: $(BUILD)/gen/model_anymal_c.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(LIB_SIM): $(SIM_OBJ)
$(LIB_ENVS): $(ENVS_OBJ)
$(LIB_PROTOCOL): $(PROTOCOL_OBJ)
$(LIB_CLIENT): $(CLIENT_OBJ)
$(LIB_SERVER): $(SERVER_OBJ)
# (rebuilt too when a layer gains or loses a source file, so that no archive keeps a member whose source is gone)
LAYER_STAMP := $(BUILD)/.layer-objects
$(shell echo '$(SIM_OBJ) $(ENVS_OBJ) $(PROTOCOL_OBJ) $(CLIENT_OBJ) $(SERVER_OBJ)' | cmp -s - $(LAYER_STAMP) || \
        echo '$(SIM_OBJ) $(ENVS_OBJ) $(PROTOCOL_OBJ) $(CLIENT_OBJ) $(SERVER_OBJ)' > $(LAYER_STAMP))
$(LAYER_LIBS): $(LAYER_STAMP)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $(filter %.o,$^)

# layer-link: each layer's archive linked whole with only the layers below it and the system libraries it may use
# (sim: libxml2 and libm; protocol: msgpack-c; clients/c: ZeroMQ; server: ZeroMQ, libmicrohttpd, pthreads), so a
# call upward or sideways, or to a library the layer must not use, is an undefined reference.
$(BUILD)/gen/layer_main.c:
	@mkdir -p $(dir $@)
	@echo 'int main(void) { return 0; }' > $@
$(BUILD)/obj/gen/layer_main.o: $(BUILD)/gen/layer_main.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@
LAYER_LINK = $(CC) $(ALL_CFLAGS) -o $@ $(BUILD)/obj/gen/layer_main.o -Wl,--whole-archive $< -Wl,--no-whole-archive
$(BUILD)/layer-link/sim: $(LIB_SIM) $(BUILD)/obj/gen/layer_main.o
	@mkdir -p $(dir $@)
	$(LAYER_LINK) $(XML_LIBS) -lm $(EXTRA_LDLIBS)
$(BUILD)/layer-link/envs: $(LIB_ENVS) $(LIB_SIM) $(BUILD)/obj/gen/layer_main.o
	@mkdir -p $(dir $@)
	$(LAYER_LINK) $(LIB_SIM) $(XML_LIBS) -lm $(EXTRA_LDLIBS)
$(BUILD)/layer-link/protocol: $(LIB_PROTOCOL) $(BUILD)/obj/gen/layer_main.o
	@mkdir -p $(dir $@)
	$(LAYER_LINK) -lmsgpackc -lm $(EXTRA_LDLIBS)
$(BUILD)/layer-link/client: $(LIB_CLIENT) $(LIB_PROTOCOL) $(BUILD)/obj/gen/layer_main.o
	@mkdir -p $(dir $@)
	$(LAYER_LINK) $(LIB_PROTOCOL) -lzmq -lmsgpackc -lm $(EXTRA_LDLIBS)
$(BUILD)/layer-link/server: $(LIB_SERVER) $(LIB_PROTOCOL) $(LIB_ENVS) $(LIB_SIM) $(BUILD)/obj/gen/layer_main.o
	@mkdir -p $(dir $@)
	$(LAYER_LINK) $(LIB_PROTOCOL) $(LIB_ENVS) $(LIB_SIM) $(LDLIBS)
.PHONY: layer-link
layer-link: $(addprefix $(BUILD)/layer-link/,sim envs protocol client server)

$(BUILD)/herd-%: $(BUILD)/obj/server/main_%.o $(SERVER_LIBS)
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDLIBS)

# The physics demo (examples/demo.c): sim/ and envs/ only, no server.
$(BUILD)/herd-demo: $(BUILD)/obj/examples/demo.o $(PHYSICS_LIBS)
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(XML_LIBS) -lm $(EXTRA_LDLIBS)

# herd-bench admm times the heavy-on-light stack the tests check (tests/helpers/rigid_contact.c: pure C, no test framework).
$(BUILD)/herd-bench: $(BENCH_OBJ) $(BUILD)/obj/tests/helpers/rigid_contact.o $(PEER_OBJ) $(ALL_LIBS)
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDLIBS) $(MUJOCO_LIBS)

# The fuzz targets as plain functions (no libFuzzer main), replayed on their corpora by tests/test_fuzz.
FUZZ_SRC := $(wildcard fuzz/fuzz_*.c)
FUZZ_OBJ := $(FUZZ_SRC:%.c=$(BUILD)/obj/%.o)
$(BUILD)/obj/fuzz/%.o: fuzz/%.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -DHERD_FUZZ_NO_MAIN -MMD -MP -c $< -o $@
$(BUILD)/tests/test_fuzz: $(BUILD)/obj/tests/test_fuzz.o $(FUZZ_OBJ) $(TESTHELP_OBJ) $(ALL_LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $^ -lcriterion $(LDLIBS)

# Only the peer tests link MuJoCo (without it they are built to skip, each with a message).
$(BUILD)/tests/test_vs_mujoco: $(BUILD)/obj/tests/test_vs_mujoco.o $(PEER_OBJ) $(TESTHELP_OBJ) $(ALL_LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $^ -lcriterion $(LDLIBS) $(MUJOCO_LIBS)

# test_bench_accuracy checks herd-bench env --vs-mujoco's accuracy measure (bench/bench_accuracy*.c), MuJoCo's part
# where MuJoCo is.
$(BUILD)/tests/test_bench_accuracy: $(BUILD)/obj/tests/test_bench_accuracy.o $(BUILD)/obj/bench/bench_accuracy.o \
		$(BUILD)/obj/bench/bench_util.o $(if $(PEER_OBJ),$(BUILD)/obj/bench/bench_accuracy_mj.o) $(PEER_OBJ) \
		$(TESTHELP_OBJ) $(ALL_LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $^ -lcriterion $(LDLIBS) $(MUJOCO_LIBS)

# test_bench_pin checks herd-bench's pinning helper (bench/bench_util.c) on its own, test_bench_lockstep its lane
# efficiency of lock-step batches.
$(BUILD)/tests/test_bench_pin: $(BUILD)/obj/bench/bench_util.o
$(BUILD)/tests/test_bench_lockstep: $(BUILD)/obj/bench/bench_util.o

$(BUILD)/tests/%: $(BUILD)/obj/tests/%.o $(TESTHELP_OBJ) $(ALL_LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $^ -lcriterion $(LDLIBS)

# Each test binary runs from the repository root (tests load envs/models/...).
test-c: $(TEST_BIN)
	@tests/run-c-tests.sh $(TEST_BIN)

# The Python suite needs only the server (PYTHONPATH and the adapter libraries: tests/run-py-tests.sh).
test-py: $(BUILD)/herd-server
	@if [ -d clients/python/tests ]; then HERD_SERVER_BIN=$(abspath $(BUILD))/herd-server tests/run-py-tests.sh; fi

test-jl:
	@if [ -d clients/julia/test ]; then tests/run-jl-tests.sh; fi

# The browser viewer (viewer/): three.js into viewer/node_modules from its lock (deploy/install-deps.sh --viewer;
# herd.view does it on first use; never `make run`, which needs no npm: without npm or its registry only the viewer is off);
# its tests in headless Chromium (Selenium, chromium-driver) against a real server.
# viewer-meshes: viewer/assets/anymal_c.glb, the robot's visual meshes on herd's link frames, converted and
# decimated from ANYbotics' COLLADA files (MESH_REF=DIR holding anymal_c_meshes/ and anymal_c/anymal.urdf).
# docs-pictures: the README's pictures (docs/viewer_live_walk.png, replay_walk.{mp4,gif,png},
# viewer_replay_walk.png, replay_drop.{mp4,gif}, viewer_replay_drop.png, viewer_replay_rough.png,
# replay_rough.png) with the robot as it looks; the
# walking ones need PyTorch; the replay HTML, which inlines three.js and the meshes, stays in build/docs/.
.PHONY: viewer-deps viewer-meshes test-viewer docs-pictures docs-viewer docs-walk
viewer-deps:
	@deploy/install-deps.sh --viewer
viewer-meshes:
	@if [ -z "$(MESH_REF)" ]; then echo "viewer-meshes: set MESH_REF=DIR (anymal_c_meshes/ and anymal_c/anymal.urdf in it)"; exit 2; fi
	PYTHONPATH=clients/python /usr/bin/python3 -m herd.meshes $(MESH_REF)/anymal_c_meshes $(MESH_REF)/anymal_c/anymal.urdf \
	    envs/models/anymal_c.urdf viewer/assets/anymal_c.glb
	install -m 644 $(MESH_REF)/anymal_c_meshes/LICENSE viewer/assets/LICENSE.anymal_c
test-viewer: $(BUILD)/herd-server
	@HERD_SERVER_BIN=$(abspath $(BUILD))/herd-server tests/viewer/run.sh
docs-pictures: $(BUILD)/herd-server
	HERD_SERVER_BIN=$(abspath $(BUILD))/herd-server PYTHONPATH=clients/python /usr/bin/python3 tests/viewer/make_docs.py docs
docs-viewer docs-walk: docs-pictures

test: deps-check
	@$(MAKE) --no-print-directory all
	@tests/run-all.sh

# The same runner while LOAD CPU-bound busy loops run beside it (tests/run-loaded.sh; default 2, LOAD=4 for four).
LOAD ?= 2
.PHONY: test-loaded
test-loaded: deps-check
	@$(MAKE) --no-print-directory all
	@LOAD=$(LOAD) tests/run-loaded.sh

deps-check:
	@deploy/install-deps.sh --check >/dev/null 2>&1 || deploy/install-deps.sh

# The build without MuJoCo and without AVX-512 ($(BUILD)/nomj), which test-no-mujoco and test-valgrind share.
NOMJ_MAKE := $(MAKE) --no-print-directory BUILD=$(BUILD)/nomj MUJOCO=no MARCH=$(MARCH_NO_AVX512)

.PHONY: test-no-mujoco
# The C suite from that build: the peer tests skip, counted as skipped.
test-no-mujoco:
	@$(NOMJ_MAKE) all
	@tests/run-c-tests.sh $(BUILD)/nomj/tests/test_*

# herd-server of that build under valgrind (no MuJoCo in the server; no AVX-512 for valgrind's decoder).
.PHONY: test-valgrind
test-valgrind:
	@$(NOMJ_MAKE) $(BUILD)/nomj/herd-server
	@server/tools/valgrind_check.sh $(BUILD)/nomj/herd-server

# The golden per-step hashes from an x86-64-v2 build ($(BUILD)/v2): the bits must not depend on the instruction set.
.PHONY: test-bits
test-bits:
	@$(MAKE) --no-print-directory BUILD=$(BUILD)/v2 MARCH=x86-64-v2 $(BUILD)/v2/tests/test_golden_steps
	@tests/run-c-tests.sh $(BUILD)/v2/tests/test_golden_steps

sanitize:
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp \
	$(MAKE) --no-print-directory BUILD=build/san OPT="-O1 -fno-omit-frame-pointer" \
	  EXTRA_CFLAGS="-fsanitize=address,undefined -fno-sanitize-recover=all" \
	  EXTRA_LDLIBS="-fsanitize=address,undefined" test-c

# Health probe (image HEALTHCHECK, Kubernetes probes, Slurm script): libzmq + msgpack-c only.
$(BUILD)/herd-ping: deploy/herd_ping.c $(FLAGS_STAMP)
	$(CC) $(CSTD) $(WARN) $(CFLAGS) -o $@ $< -lzmq -lmsgpackc

# ---- fuzzing (fuzz/README.md) ----
# libFuzzer binaries build/fuzz/fuzz_<target>, the library instrumented with clang's coverage, ASan and UBSan.
FUZZ_TARGETS := request reply urdf config
FUZZ_CC      ?= clang-14
FUZZ_SECONDS ?= 45
.PHONY: fuzz fuzz-bins fuzz-short
fuzz:
	@$(MAKE) --no-print-directory BUILD=build/fuzz CC=$(FUZZ_CC) OPT="-O1 -g -fno-omit-frame-pointer" \
	  EXTRA_CFLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -Wno-unused-function" \
	  EXTRA_LDLIBS="-fsanitize=fuzzer,address,undefined" fuzz-bins
fuzz-bins: $(FUZZ_TARGETS:%=$(BUILD)/fuzz_%)
$(BUILD)/fuzz_%: fuzz/fuzz_%.c fuzz/fuzz_targets.h $(ALL_LIBS)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(ALL_LIBS) $(LDLIBS)
fuzz-short: fuzz
	@fuzz/run.sh --short --time $(FUZZ_SECONDS)

.PHONY: test-container test-multiserver image
test-multiserver: $(BUILD)/herd-server $(CLIENT_LIBS)
	@tests/multiserver/run.sh
test-container: $(BUILD)/herd-server $(CLIENT_LIBS)
	@tests/container/run.sh
# The image, tagged herd:<version> (herd-server --version) and herd:<git sha>, with OCI labels.
VERSION  := $(shell sed -n 's/^\#define HERD_VERSION "\(.*\)"/\1/p' server/*.h | head -n1)
REVISION := $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
IMAGE    ?= herd
IMAGE_ARGS = --build-arg VERSION=$(VERSION) --build-arg REVISION=$(REVISION) \
             --build-arg CREATED=$$(date -u +%Y-%m-%dT%H:%M:%SZ) -t $(IMAGE):$(VERSION) -t $(IMAGE):$(REVISION)
image:
	@if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then docker build $(IMAGE_ARGS) .; \
	 else buildah bud --pull=false --isolation chroot --network host --format docker $(IMAGE_ARGS) .; fi
	@echo "image: $(IMAGE):$(VERSION) and $(IMAGE):$(REVISION)"

.PHONY: bench-py
# Python client vs C client against one herd-server, same run (JSON line: "bench":"python_client")
$(BUILD)/herd-bench-c-client: clients/python/bench_c_client.c $(CLIENT_LIBS)
	$(CC) $(ALL_CFLAGS) -o $@ $^ -lzmq -lmsgpackc -lm $(EXTRA_LDLIBS)

bench-py: $(BUILD)/herd-server $(BUILD)/herd-bench-c-client
	/usr/bin/python3 clients/python/bench.py

bench: all
	$(BUILD)/herd-bench all
	@$(MAKE) --no-print-directory bench-py

# The contact-model experiments for every solver (herd-bench contact-models): JSON lines, the human table,
# figures and the summary table in docs/contact-models/ (a few minutes on 2 cores).
.PHONY: contact-models-report
contact-models-report: $(BUILD)/herd-bench
	$(BUILD)/herd-bench contact-models > $(BUILD)/contact-models.jsonl 2> $(BUILD)/contact-models.txt
	mv $(BUILD)/contact-models.jsonl docs/contact-models/results.jsonl
	mv $(BUILD)/contact-models.txt docs/contact-models/results.txt
	/usr/bin/python3 docs/contact-models/plot.py docs/contact-models/results.jsonl docs/contact-models
	@$(MAKE) --no-print-directory docs-figures
.PHONY: bench-report
# The benchmark report: docs/benchmarks.md + docs/benchmarks/*.png (bench/report/run.py, bounded by --budget 900 s)
bench-report: $(BUILD)/herd-bench $(BUILD)/herd-server $(BUILD)/herd-bench-c-client
	/usr/bin/python3 bench/report/run.py --build $(BUILD) $(REPORT_ARGS)
	@$(MAKE) --no-print-directory docs-figures

# The contact-solver page: docs/solvers.md and docs/solvers/results.jsonl (docs/solvers/report.py; SOLVER_REPORT_ARGS
# e.g. --worlds 64 --steps 20 --repeats 5, the defaults)
.PHONY: solver-report
solver-report: $(BUILD)/herd-bench
	/usr/bin/python3 docs/solvers/report.py --build $(BUILD) $(SOLVER_REPORT_ARGS)
	@$(MAKE) --no-print-directory docs-figures

# The figures of README.md that come from runs (evaluations, training times, speeds, memory), written between their
# markers from the files the runs committed: examples/*_eval.json, examples/ppo_stand_log.csv,
# docs/contact-models/results.jsonl and docs/benchmarks/results.jsonl (docs/figures.py --list), and docs/benchmarks.md again from that file
# (bench/report/run.py --replay).  Runs no benchmark or training; `docs/figures.py --check` is a stage of make test.
.PHONY: docs-figures
docs-figures:
	/usr/bin/python3 docs/figures.py

# The main job: the server on loopback with every registered env (ANYmal C walk by default in clients).
# Settings come from HERD_* variables (HERD_BIND, HERD_THREADS, ...: herd-server --help), in the environment or
# on the command line (make run HERD_THREADS=2); the binary's own default endpoint is tcp://127.0.0.1:5555.
run: deps-check
	@$(MAKE) --no-print-directory $(BUILD)/herd-server
	$(BUILD)/herd-server

demo: deps-check
	@$(MAKE) --no-print-directory $(BUILD)/herd-demo
	$(BUILD)/herd-demo

# ---- the ANYdrive actuator network (envs/env_actuator_net.h) ----
# Its weights, envs/models/anydrive_v3_lstm.txt (converted from legged_gym's TorchScript archive), are embedded in
# envs/'s library as the URDF is.  Its source is compiled without contraction: the multiply-adds it fuses are the ones it
# writes (env_actuator_net.h).  actuator-net-data rewrites the data file from the archive; actuator-net-check checks that the committed
# data file and the C test's reference sequences (tests/testdata/actuator_net_ref.txt) are what the archive gives;
# actuator-net-ref records those sequences again.  All three need PyTorch and ACTUATOR_PT=path/to/anydrive_v3_lstm.pt.
$(BUILD)/gen/model_anydrive_v3_lstm.c: envs/models/anydrive_v3_lstm.txt
	@mkdir -p $(dir $@)
	@{ echo '/* generated from $< by the Makefile */'; \
	   echo 'const char herd_model_anydrive_v3_lstm_txt[] = {'; \
	   od -An -v -tx1 $< | sed -E 's/ *([0-9a-f]{2})/0x\1,/g'; \
	   echo '0x00};'; \
	   echo "const unsigned long herd_model_anydrive_v3_lstm_txt_len = $$(wc -c < $<);"; } > $@
$(BUILD)/obj/gen/model_anydrive_v3_lstm.o: $(BUILD)/gen/model_anydrive_v3_lstm.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@
$(LIB_ENVS): $(BUILD)/obj/gen/model_anydrive_v3_lstm.o
.PHONY: actuator-net-data actuator-net-check actuator-net-ref actuator-net-pt
actuator-net-pt:
	@test -n "$(ACTUATOR_PT)" || { echo "set ACTUATOR_PT=path/to/anydrive_v3_lstm.pt (legged_gym resources/actuator_nets)"; exit 2; }
actuator-net-data: actuator-net-pt
	/usr/bin/python3 envs/models/tools/convert_actuator_net.py $(ACTUATOR_PT)
actuator-net-ref: actuator-net-pt
	/usr/bin/python3 tests/testdata/actuator_net_ref.py $(ACTUATOR_PT)
actuator-net-check: actuator-net-pt
	/usr/bin/python3 envs/models/tools/convert_actuator_net.py $(ACTUATOR_PT) --check
	/usr/bin/python3 tests/testdata/actuator_net_ref.py $(ACTUATOR_PT) --check

clean:
	rm -rf build

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
