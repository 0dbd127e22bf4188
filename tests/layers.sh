#!/usr/bin/env bash
# The layer diagram of DESIGN.md, checked: which herd headers (and which system facilities) each layer may
# include.  Arrows point down only; the one thing protocol/ and clients/c take from envs/ is env_spec.h.
#   sim/        sim_*.h; no threads, sockets, clocks or message packing
#   envs/       env*.h and sim's public headers (not sim_spatial.h, sim's private spatial algebra)
#   protocol/   proto*.h and env_spec.h; no ZeroMQ, no threads (pure encode/decode)
#   clients/c/  herd_client*.h, proto.h, env_spec.h
#   server/     srv_*.h, proto.h, env.h, env_spec.h (never sim/)
#   (env_scene.h is data only like env_spec.h: the scene the `model` op encodes)
#   within a layer: no two modules include each other's headers (a.c -> b.h and b.c -> a.h)
# Prints one line per violation and "N passed, M failed" (one check per layer, plus the two below).
set -u
cd "$(dirname "$0")/.."
passed=0; failed=0
check() { # layer dir, allowed-herd-header regex, forbidden-system regex
  local dir=$1 allow=$2 deny=$3 bad=""
  for f in "$dir"/*.[ch]; do
    [ -e "$f" ] || continue
    while IFS= read -r inc; do
      h=${inc#*\"}; h=${h%\"*}
      [[ $h =~ $allow ]] || bad+="  $f includes \"$h\""$'\n'
    done < <(grep -E '^[[:space:]]*#[[:space:]]*include[[:space:]]+"' "$f")
    if [ -n "$deny" ]; then
      while IFS= read -r inc; do bad+="  $f includes $inc"$'\n'; done < <(grep -oE "^[[:space:]]*#[[:space:]]*include[[:space:]]+<($deny)>" "$f" | sed 's/.*include *//')
    fi
  done
  if [ -z "$bad" ]; then passed=$((passed + 1)); echo "ok - $dir"; else failed=$((failed + 1)); echo "not ok - $dir"; printf '%s' "$bad"; fi
}
check sim '^sim_[a-z_]+\.h$' 'pthread\.h|threads\.h|zmq\.h|msgpack\.h|time\.h|sys/time\.h|sys/socket\.h'
check envs '^(env[a-z_]*\.h|sim_(model|math|step|dynamics|collision|solver|metrics|urdf|batch)\.h)$' 'zmq\.h|msgpack\.h|sys/socket\.h'
check protocol '^(proto[a-z_]*\.h|env_(spec|scene)\.h)$' 'zmq\.h|pthread\.h'
check clients/c '^(herd_client[a-z_]*\.h|proto\.h|env_(spec|scene)\.h)$' ''
check server '^(srv_[a-z_]+\.h|proto\.h|env\.h|env_(spec|scene)\.h)$' ''
# protocol's public header exposes no msgpack-c types (neither named nor through msgpack.h)
if grep -E '^[^/*]*\bmsgpack_[a-z]+|^[[:space:]]*#[[:space:]]*include[[:space:]]+<msgpack' protocol/proto.h >/dev/null; then
    failed=$((failed + 1)); echo "not ok - protocol/proto.h exposes msgpack types"
else passed=$((passed + 1)); echo "ok - protocol/proto.h is free of msgpack types"; fi
# no two modules of a layer lean on each other: a.c includes b.h while b.c or b.h includes a.h (shared parts belong
# in a module of their own or a data-only header such as sim_limits.h).  Data-only headers (env_spec.h,
# env_scene.h) are no module.
known_loops=" "
incs() { grep -ohE '^[[:space:]]*#[[:space:]]*include[[:space:]]+"[^"]+"' "$@" 2>/dev/null | sed -E 's/.*"([^"]+)"/\1/' | sort -u; }
loops=""
for a in sim/*.c envs/*.c protocol/*.c server/*.c clients/c/*.c; do
    ha=$(basename "${a%.c}").h
    case "$ha" in env_spec.h | env_scene.h) continue ;; esac
    while IFS= read -r hb; do
        case "$hb" in "$ha" | env_spec.h | env_scene.h) continue ;; esac
        b=$(dirname "$a")/${hb%.h}.c
        [ -e "$b" ] || continue
        incs "$b" "${b%.c}.h" | grep -qxF "$ha" || continue
        pair=$a:$b; [[ "$b" < "$a" ]] && pair=$b:$a
        [[ "$known_loops" == *" $pair "* ]] && continue
        loops+="  $a includes $hb, and $b or its header includes $ha"$'\n'
    done < <(incs "$a")
done
if [ -z "$loops" ]; then passed=$((passed + 1)); echo "ok - no two modules include each other's headers"
else failed=$((failed + 1)); echo "not ok - modules include each other's headers"; printf '%s' "$loops"; fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
