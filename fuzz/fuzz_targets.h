/* fuzz_targets.h — herd's fuzz targets as plain functions (see fuzz/README.md).
 *
 * Each target takes one input (bytes) and returns 0.  It exercises one decoder or loader on it and
 * checks properties the code promises (round trips, limits, bounds of what it hands back); a broken
 * property calls fuzz_fail, which aborts, so libFuzzer and the Criterion replay (tests/test_fuzz.c)
 * both see it as a crash.  Built two ways: with clang -fsanitize=fuzzer,address,undefined as libFuzzer
 * binaries (fuzz_<target>.c defines LLVMFuzzerTestOneInput unless HERD_FUZZ_NO_MAIN is defined), and
 * with the project's compiler into the regression test. */
#ifndef HERD_FUZZ_TARGETS_H
#define HERD_FUZZ_TARGETS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int herd_fuzz_request(const uint8_t *data, size_t size);   /* proto_decode_request + checks, re-encode */
int herd_fuzz_reply(const uint8_t *data, size_t size);     /* proto_decode_reply, getters, herd_reply_* */
int herd_fuzz_urdf(const uint8_t *data, size_t size);      /* sim_urdf_load_string, then one physics step */
int herd_fuzz_config(const uint8_t *data, size_t size);    /* env_new with fuzzed overrides, reset, step */

/* A broken property: prints where and aborts. */
#define fuzz_fail(...)                                                                                              \
    do {                                                                                                            \
        fprintf(stderr, "%s:%d: property failed: ", __FILE__, __LINE__);                                            \
        fprintf(stderr, __VA_ARGS__);                                                                               \
        fputc('\n', stderr);                                                                                        \
        abort();                                                                                                    \
    } while (0)
#define fuzz_check(cond, ...)                                                                                       \
    do {                                                                                                            \
        if (!(cond)) fuzz_fail(__VA_ARGS__);                                                                        \
    } while (0)

#endif
