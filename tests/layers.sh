#!/usr/bin/env bash
# The layer diagram of DESIGN.md, checked: which herd headers (and which system facilities) the C code of each
# folder may include.  Arrows point down only; the one thing protocol/ and clients/c take from envs/ is env_spec.h
# (and the data-only env_scene.h).  Every folder with C code has a rule, and a folder without one fails the check.
#   the library layers
#   sim/          sim_*.h; no threads, sockets, clocks or message packing
#   envs/         env*.h and sim's public headers (not its private ones: sim_spatial.h, *_impl.h, *_internal.h)
#   protocol/     proto*.h and env_spec.h; no ZeroMQ, no threads (pure encode/decode)
#   clients/c/    herd_client*.h, proto.h, env_spec.h
#   server/       srv_*.h, proto.h, env.h, env_spec.h (never sim/)
#   built on them, through public headers only (never *_internal.h, *_impl.h, sim_spatial.h, nor a source file)
#   peers/        mj_peer.h and sim_model.h (MuJoCo's rebuild of a herd model)
#   bench/        bench*.h, mj_peer.h, the public headers of sim/, envs/, protocol/, clients/c, the server's
#                 embedding API (srv_thread.h, srv_pool.h) and tests/helpers/rigid_contact.h (pure C)
#   fuzz/         fuzz_targets.h and the public headers of sim/, envs/, protocol/, clients/c
#   examples/     the public headers of sim/ and envs/ (the physics demo: no server, no sockets)
#   deploy/       none: the health probe is independent of the herd libraries
#   clients/python/, tests/multiserver/   C client programs: herd_client.h, proto.h, env_spec.h
#   tests/helpers/  rigid_contact.h, server_start.h, srv_thread.h, coulomb_ref.h (the brute-force Coulomb reference),
#                 stall_fixtures.h (the harvested stall problems' loader)
#   tests/        white-box tests of every module: any header of the layers, their helpers, fuzz_targets.h,
#                 bench/bench*.h (the benchmarks' own units: CPU pinning, accuracy measures) and mj_peer.h, by
#                 those names only (no relative path into another folder, no source file)
#   within a library layer (and bench/): no two modules include each other's headers (a.c -> b.h and b.c -> a.h)
# Prints one line per check and "N passed, M failed".  The last check is the self-test: in a temporary copy of the
# tree's C files, each back door below is planted in turn, and the check must catch every one (and pass the clean
# copy).  Usage: tests/layers.sh [--root DIR] [--no-self-test]   (DIR: the tree to check, default this one)
set -u
root="$(cd "$(dirname "$0")/.." && pwd)"
self_test=1
while [ $# -gt 0 ]; do
    case "$1" in
        --root) root=$2; shift 2 ;;
        --no-self-test) self_test=0; shift ;;
        *) echo "usage: tests/layers.sh [--root DIR] [--no-self-test]" >&2; exit 2 ;;
    esac
done
script="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
cd "$root" || exit 2
passed=0; failed=0

# The headers of each library layer, for the folders built on them: any of the layer's headers but its private ones
# (PRIVATE: *_internal.h, *_impl.h and sim_spatial.h, by the naming convention of the layers).
PRIVATE='([a-z_]+_internal|[a-z_]+_impl|sim_spatial)\.h'
SIM_PUB='sim_[a-z_]+\.h'
ENVS_PUB='env[a-z_]*\.h'
PROTO_PUB='proto\.h'
CLIENT_PUB='herd_client\.h'
SERVER_EMBED='srv_(thread|pool)\.h'

ruled=" "
check() { # folder, allowed-herd-header regex (the whole quoted name), forbidden-system regex, "public" (no PRIVATE)
  local dir=$1 allow=$2 deny=$3 public=${4:-} bad="" f inc h
  ruled+="$dir "
  local files=("$dir"/*.[ch])
  [ -e "${files[0]}" ] || files=()
  if [ ${#files[@]} -gt 0 ]; then
    while IFS= read -r line; do   # file:#include "name"
      f=${line%%:*}; h=${line#*\"}; h=${h%\"*}
      if ! [[ $h =~ $allow ]] || { [ -n "$public" ] && [[ $h =~ ^$PRIVATE$ ]]; }; then bad+="  $f includes \"$h\""$'\n'; fi
    done < <(grep -HE '^[[:space:]]*#[[:space:]]*include[[:space:]]+"' "${files[@]}")
    if [ -n "$deny" ]; then
      while IFS= read -r line; do bad+="  ${line%%:*} includes ${line##*include }"$'\n'; done < <(grep -HoE "^[[:space:]]*#[[:space:]]*include[[:space:]]+<($deny)>" "${files[@]}")
    fi
  fi
  if [ -z "$bad" ]; then passed=$((passed + 1)); echo "ok - $dir"; else failed=$((failed + 1)); echo "not ok - $dir"; printf '%s' "$bad"; fi
}
check sim '^sim_[a-z_]+\.h$' 'pthread\.h|threads\.h|zmq\.h|msgpack\.h|time\.h|sys/time\.h|sys/socket\.h'
check envs '^(env[a-z_]*\.h|sim_(model|math|step|dynamics|collision|solver|metrics|urdf|batch)\.h)$' 'zmq\.h|msgpack\.h|sys/socket\.h'
check protocol '^(proto[a-z_]*\.h|env_(spec|scene)\.h)$' 'zmq\.h|pthread\.h'
check clients/c '^(herd_client[a-z_]*\.h|proto\.h|env_(spec|scene)\.h)$' ''
check server '^(srv_[a-z_]+\.h|proto\.h|env\.h|env_(spec|scene)\.h)$' ''
check peers '^(mj_peer\.h|sim_model\.h)$' 'zmq\.h|msgpack\.h|pthread\.h' public
check bench "^(bench[a-z_]*\\.h|mj_peer\\.h|$SIM_PUB|$ENVS_PUB|$PROTO_PUB|$CLIENT_PUB|env_spec\\.h|$SERVER_EMBED|tests/helpers/rigid_contact\\.h)\$" '' public
check fuzz "^(fuzz_targets\\.h|$SIM_PUB|$ENVS_PUB|$PROTO_PUB|$CLIENT_PUB)\$" '' public
check examples "^($SIM_PUB|$ENVS_PUB)\$" 'zmq\.h|msgpack\.h|pthread\.h' public
check deploy '^$' '' public
check clients/python '^(herd_client\.h|proto\.h|env_spec\.h)$' '' public
check tests/multiserver '^(herd_client\.h|proto\.h|env_spec\.h)$' '' public
check tests/helpers "^(rigid_contact\\.h|server_start\\.h|srv_thread\\.h|coulomb_ref\\.h|stall_fixtures\\.h)\$" '' public
check tests '^((sim|env|proto|srv|herd_client)[a-z_]*\.h|helpers/(rigid_contact|server_start|coulomb_ref|stall_fixtures)\.h|fuzz/fuzz_targets\.h|bench/bench[a-z_]*\.h|mj_peer\.h)$' ''

# every folder with C code has a rule above (a new folder must say what it may include)
unruled=""
while IFS= read -r d; do
    d=${d#./}
    [[ "$ruled" == *" $d "* ]] || unruled+="  $d has C code and no include rule"$'\n'
done < <(find . \( -path ./build -o -path ./.git -o -name node_modules \) -prune -o \( -name '*.c' -o -name '*.h' \) -print |
         xargs -r -n1 dirname | sort -u)
if [ -z "$unruled" ]; then passed=$((passed + 1)); echo "ok - every folder with C code has an include rule"
else failed=$((failed + 1)); echo "not ok - folders without an include rule"; printf '%s' "$unruled"; fi

# protocol's public header exposes no msgpack-c types (neither named nor through msgpack.h)
if grep -E '^[^/*]*\bmsgpack_[a-z]+|^[[:space:]]*#[[:space:]]*include[[:space:]]+<msgpack' protocol/proto.h >/dev/null; then
    failed=$((failed + 1)); echo "not ok - protocol/proto.h exposes msgpack types"
else passed=$((passed + 1)); echo "ok - protocol/proto.h is free of msgpack types"; fi
# no two modules of a layer lean on each other: a.c includes b.h while b.c or b.h includes a.h (shared parts belong
# in a module of their own or a data-only header such as sim_limits.h).  Data-only headers (env_spec.h,
# env_scene.h) are no module.
known_loops=" "
declare -A inc_of=()   # file -> its quoted includes, one per line
while IFS= read -r line; do
    f=${line%%:*}; h=${line#*\"}; h=${h%\"*}
    inc_of[$f]+="$h"$'\n'
done < <(grep -HE '^[[:space:]]*#[[:space:]]*include[[:space:]]+"' sim/*.[ch] envs/*.[ch] protocol/*.[ch] server/*.[ch] clients/c/*.[ch] bench/*.[ch] 2>/dev/null)
loops=""
for a in sim/*.c envs/*.c protocol/*.c server/*.c clients/c/*.c bench/*.c; do
    [ -e "$a" ] || continue
    ha=$(basename "${a%.c}").h
    case "$ha" in env_spec.h | env_scene.h) continue ;; esac
    while IFS= read -r hb; do
        case "$hb" in "" | "$ha" | env_spec.h | env_scene.h) continue ;; esac
        b=$(dirname "$a")/${hb%.h}.c
        [ -e "$b" ] || continue
        [[ $'\n'"${inc_of[$b]:-}${inc_of[${b%.c}.h]:-}" == *$'\n'"$ha"$'\n'* ]] || continue
        pair=$a:$b; [[ "$b" < "$a" ]] && pair=$b:$a
        [[ "$known_loops" == *" $pair "* ]] && continue
        loops+="  $a includes $hb, and $b or its header includes $ha"$'\n'
    done <<<"${inc_of[$a]:-}"
done
if [ -z "$loops" ]; then passed=$((passed + 1)); echo "ok - no two modules include each other's headers"
else failed=$((failed + 1)); echo "not ok - modules include each other's headers"; printf '%s' "$loops"; fi

# The self-test: each back door planted in a copy of the tree must make the check fail, naming the folder.
if [ "$self_test" -eq 1 ]; then
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/herd-layers.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
    mkdir -p "$tmp/base"
    find . \( -path ./build -o -path ./.git -o -name node_modules \) -prune -o \( -name '*.c' -o -name '*.h' \) -print0 |
        tar --null -T - -cf - | tar -xf - -C "$tmp/base"
    # folder | file planted | its text | the "not ok" line expected
    cases=(
        'bench|bench/zz_door.c|#include "env_internal.h"|not ok - bench'
        'fuzz|fuzz/zz_door.c|#include "herd_client_internal.h"|not ok - fuzz'
        'examples|examples/zz_door.c|#include "srv_internal.h"|not ok - examples'
        'bench, a private sim header|bench/zz_door.c|#include "sim_tree_impl.h"|not ok - bench'
        'tests/helpers|tests/helpers/zz_door.c|#include "../../bench/mj_peer.c"|not ok - tests/helpers'
        'tests|tests/test_zz_door.c|#include "../bench/bench_env.c"|not ok - tests'
        'envs|envs/zz_door.c|#include "sim_spatial.h"|not ok - envs'
        'server|server/zz_door.c|#include "sim_model.h"|not ok - server'
        'sim|sim/zz_door.c|#include "env.h"|not ok - sim'
        'clients/c|clients/c/zz_door.c|#include "srv_thread.h"|not ok - clients/c'
        'peers|peers/zz_door.c|#include "env_internal.h"|not ok - peers'
        'deploy|deploy/zz_door.c|#include "herd_client.h"|not ok - deploy'
        'new folder|tools/zz_door.c|int zz_door;|not ok - folders without an include rule'
        'mutual includes|bench/bench_zza.c + bench/bench_zzb.c|each includes the other'"'"'s header|not ok - modules include each other'
    )
    copy() { cp -a "$tmp/base" "$1"; }   # a fresh copy of the tree's C files
    one() { # case number: plants it in its own copy, checks it; writes what was missed to $tmp/r<i>
        local i=$1 what file text want out t=$tmp/c$1
        IFS='|' read -r what file text want <<<"${cases[$i]}"
        copy "$t"
        if [ "$what" = "mutual includes" ]; then
            printf '#include "bench_zzb.h"\n' > "$t/bench/bench_zza.c"; : > "$t/bench/bench_zza.h"
            printf '#include "bench_zza.h"\n' > "$t/bench/bench_zzb.c"; : > "$t/bench/bench_zzb.h"
        else
            mkdir -p "$t/$(dirname "$file")"
            printf '%s\n' "$text" > "$t/$file"
        fi
        if out=$(bash "$script" --root "$t" --no-self-test 2>&1) || ! grep -qF "$want" <<<"$out"; then
            echo "  not caught: $what ($file: $text)" > "$tmp/r$i"
        fi
        rm -rf "$t"
    }
    missed=""
    copy "$tmp/clean"
    out=$(bash "$script" --root "$tmp/clean" --no-self-test 2>&1) || missed+="  the clean copy fails:"$'\n'"$out"$'\n'
    for i in "${!cases[@]}"; do
        one "$i" &
        [ $((i % 4)) -eq 3 ] && wait
    done
    wait
    for i in "${!cases[@]}"; do [ -s "$tmp/r$i" ] && missed+="$(cat "$tmp/r$i")"$'\n'; done
    if [ -z "$missed" ]; then passed=$((passed + 1)); echo "ok - self-test: the ${#cases[@]} planted back doors are caught"
    else failed=$((failed + 1)); echo "not ok - self-test"; printf '%s' "$missed"; fi
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
