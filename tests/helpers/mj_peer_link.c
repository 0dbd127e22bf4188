/* mj_peer_link.c — compiles bench/mj_peer.c (the ANYmal model rebuilt in MuJoCo) into the test
 * binaries, so that tests and herd-bench share one implementation.  See bench/mj_peer.h. */
#include "../../bench/mj_peer.c"
