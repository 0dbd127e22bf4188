# herd-server container image.
#
#   docker build -t herd .                       # or: buildah bud --format docker --isolation chroot -t herd .
#   mkdir keys && docker run --rm -u $(id -u) -v $PWD/keys:/keys herd --keygen /keys/herd   # key pairs, once
#   docker run --rm -p 5555:5555 -v $PWD/keys/herd:/etc/herd/keys:ro \
#       -e HERD_CURVE_SECRET_KEY_FILE=/etc/herd/keys/server.key -e HERD_AUTHORIZED_KEYS=/etc/herd/keys/authorized_keys \
#       herd                                     # serves tcp://0.0.0.0:5555 inside (CURVE), port 5555 outside
#   docker run --rm -p 5555:5555 -e HERD_INSECURE=1 herd    # plain mode: only on a network you trust
#
# Authentication: the image binds 0.0.0.0, and herd-server refuses a non-loopback address without CURVE
# keys unless HERD_INSECURE=1 (PROTOCOL.md section 1).  `herd-server --keygen DIR` writes server.key /
# server.pub, client.key / client.pub and authorized_keys (the client's public key); mount the directory
# (readable by uid 10001) and point HERD_CURVE_SECRET_KEY_FILE and HERD_AUTHORIZED_KEYS at it.  Clients
# need server.pub and client.key (Python: HERD_CURVE_SERVER_KEY=keys/server.pub
# HERD_CURVE_CLIENT_SECRET_KEY=keys/client.key; C: the same variables with the Z85 keys).  The
# HEALTHCHECK's herd-ping reads the same HERD_CURVE_SECRET_KEY_FILE and connects with the server's own key.
#
# Stages:
#   build    debian:bookworm-slim + the Debian -dev packages; builds build/herd-server and the health probe
#            herd-ping (deploy/herd_ping.c).  MuJoCo, Criterion and the bench are not built or installed.
#   rootfs   (inside build) the two stripped binaries, exactly the shared libraries they load (ldd closure,
#            with the Debian copyright files of the packages they come from), /etc/passwd with user herd.
#   final    FROM scratch + rootfs: no shell, no package manager, nothing else.  Runs as uid 10001.
#
# Configuration: every herd-server setting is an environment variable (herd-server --help): HERD_BIND, HERD_METRICS,
# HERD_THREADS, HERD_MAX_MESSAGE_BYTES, HERD_MAX_WORLDS_PER_SESSION, HERD_MAX_WORLDS, HERD_SESSION_TIMEOUT,
# HERD_LOG_LEVEL, HERD_STATS_INTERVAL, HERD_QUANTUM, HERD_CURVE_SECRET_KEY_FILE, HERD_AUTHORIZED_KEYS,
# HERD_INSECURE; arguments after the image name win over them.
# The binary's own default bind is loopback; this image sets HERD_BIND=tcp://0.0.0.0:5555 so that a
# published port reaches it.  Without HERD_THREADS the server sizes its workers from the container's CPU
# quota (docker --cpus, Kubernetes limits: cgroup cpu.max) and logs where the number came from.
#
# HEALTHCHECK runs `herd-ping`, which sends a protocol ping to the endpoint derived from HERD_BIND (or
# HERD_PING_ENDPOINT): change the address with -e HERD_BIND=..., not --bind, so that the probe follows.
# Docker keeps HEALTHCHECK; buildah/podman keep it only with --format docker.
#
# CPU target: MARCH is passed to the Makefile (-march=).  The default x86-64-v3 (AVX2 + FMA, Intel Haswell /
# AMD Zen and later) runs on almost every x86-64 node; `make` on a host with AVX-512 picks x86-64-v4, which is
# faster there (--build-arg MARCH=x86-64-v4 for such nodes only); use --build-arg MARCH=x86-64-v2 for older
# CPUs.  On other architectures the default becomes the architecture's baseline.  MARCH changes speed, not
# results: the bits follow the source (README, "bits follow the source"), so v2, v3 and v4 images agree bit for
# bit on CPUs with FMA.

ARG DEBIAN_IMAGE=debian:bookworm-slim

FROM ${DEBIAN_IMAGE} AS build
ARG DEBIAN_FRONTEND=noninteractive
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends \
      gcc libc6-dev make binutils pkg-config libzmq3-dev libmsgpack-dev libxml2-dev libmicrohttpd-dev \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /src
COPY . .

ARG MARCH=
RUN set -eu; \
    march="${MARCH:-}"; \
    if [ -z "$march" ]; then \
      case "$(uname -m)" in x86_64) march=x86-64-v3 ;; aarch64) march=armv8-a ;; *) march=native ;; esac; \
    fi; \
    echo "building herd-server with -march=$march"; \
    rm -rf build; \
    make -j"$(nproc)" MARCH="$march" build/herd-server; \
    gcc -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -O2 -o build/herd-ping deploy/herd_ping.c -lzmq -lmsgpackc; \
    strip --strip-unneeded build/herd-server build/herd-ping

# The runtime file system: binaries + their shared libraries + a user.  Debian's glibc looks in
# /lib/x86_64-linux-gnu (or the architecture's multiarch dir) without /etc/ld.so.cache; ldconfig writes one anyway.
RUN set -eu; \
    R=/rootfs; \
    mkdir -p $R/usr/local/bin $R/etc $R/tmp $R/usr/share/doc; \
    chmod 1777 $R/tmp; \
    cp build/herd-server build/herd-ping $R/usr/local/bin/; \
    libs=$(ldd build/herd-server build/herd-ping | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' | sort -u); \
    for l in $libs; do \
      real=$(readlink -f "$l"); \
      mkdir -p "$R$(dirname "$l")"; \
      cp "$real" "$R$l"; \
      pkg=""; \
      for p in "$real" "$l" "${real#/usr}"; do \
        pkg=$(dpkg -S "$p" 2>/dev/null | head -1 | cut -d: -f1) || true; [ -n "$pkg" ] && break; \
      done; \
      if [ -n "$pkg" ] && [ -f "/usr/share/doc/$pkg/copyright" ]; then \
        mkdir -p "$R/usr/share/doc/$pkg" && cp "/usr/share/doc/$pkg/copyright" "$R/usr/share/doc/$pkg/"; \
      fi; \
    done; \
    ldconfig -r $R; \
    printf 'root:x:0:0:root:/root:/sbin/nologin\nherd:x:10001:10001:herd-server:/nonexistent:/sbin/nologin\n' > $R/etc/passwd; \
    printf 'root:x:0:\nherd:x:10001:\n' > $R/etc/group; \
    printf 'hosts: files dns\n' > $R/etc/nsswitch.conf; \
    chroot $R /usr/local/bin/herd-server --version; \
    chroot $R /usr/local/bin/herd-ping --help >/dev/null

FROM scratch
ARG VERSION=unknown
ARG REVISION=unknown
ARG CREATED=unknown
COPY --from=build /rootfs/ /
USER 10001:10001
ENV PATH=/usr/local/bin:/usr/bin:/bin \
    HERD_BIND=tcp://0.0.0.0:5555
EXPOSE 5555
# the Prometheus endpoint when HERD_METRICS=0.0.0.0:9464 is set (off by default)
EXPOSE 9464
HEALTHCHECK --interval=15s --timeout=5s --start-period=10s --retries=3 \
  CMD ["/usr/local/bin/herd-ping", "--quiet", "--timeout", "3000"]
STOPSIGNAL SIGTERM
# The bundled Debian libraries' licences: /usr/share/doc/<package>/copyright in the image.
# `make image` passes VERSION, REVISION and CREATED (and tags herd:<version>, herd:<git sha>).
LABEL org.opencontainers.image.title="herd-server" \
      org.opencontainers.image.description="Batched ANYmal C reinforcement-learning worlds served over ZeroMQ + MessagePack" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.vendor="the herd authors"
ENTRYPOINT ["/usr/local/bin/herd-server"]
