#!/usr/bin/env bash
# Make sure a Docker engine answers. When none does and we are root on Debian/Ubuntu, install the
# distribution's engine (docker.io) and debootstrap, and start dockerd with no bridge network and no
# iptables rules: sandboxes run with network "none" and image builds use the host network, so no
# private-range addresses are ever used. Otherwise, say exactly what to install.
set -euo pipefail
log=${BUGFORGE_DOCKERD_LOG:-/var/log/bugforge-dockerd.log}

answers() { timeout 10 docker info >/dev/null 2>&1; }

if command -v docker >/dev/null && answers; then
  echo "engine: a Docker engine already answers"
else
  if [ "$(id -u)" != 0 ]; then
    echo "error: no Docker engine answers and this script is not root — install Docker Engine" \
         "(https://docs.docker.com/engine/install/) or rerun as root on Debian/Ubuntu" >&2
    exit 1
  fi
  if ! command -v dockerd >/dev/null || ! command -v debootstrap >/dev/null; then
    if ! command -v apt-get >/dev/null; then
      echo "error: no Docker engine and no apt-get — install Docker Engine and debootstrap with your" \
           "distribution's package manager, start dockerd, then rerun" >&2
      exit 1
    fi
    echo "engine: installing Debian's docker.io and debootstrap (about a minute)"
    export DEBIAN_FRONTEND=noninteractive
    aptlog=$(mktemp)
    if ! { apt-get update -q && NEEDRESTART_MODE=a apt-get install -y -q docker.io debootstrap; } >"$aptlog" 2>&1; then
      tail -n 20 "$aptlog" >&2
      echo "error: installing docker.io failed (log above) — install Docker Engine by hand, then rerun" >&2
      exit 1
    fi
  fi
  echo "engine: starting dockerd --bridge=none --iptables=false (log: $log)"
  nohup dockerd --bridge=none --iptables=false >"$log" 2>&1 &
  for _ in $(seq 60); do answers && break; sleep 1; done
  if ! answers; then
    echo "error: dockerd did not come up within 60 s — read $log" >&2
    exit 1
  fi
  echo "engine: dockerd is up"
fi
if [ "$(id -u)" = 0 ] && ! command -v debootstrap >/dev/null && command -v apt-get >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap >/dev/null || true
fi
