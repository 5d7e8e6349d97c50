#!/usr/bin/env bash
# Rootless Podman for the `podman` backend (docs/sandbox.md#podman-rootless): Debian's podman, uidmap,
# fuse-overlayfs and slirp4netns; an unprivileged user (BUGFORGE_PODMAN_USER, default bfpodman) with a
# subordinate id range, overlay storage through fuse-overlayfs, and that user's Docker-compatible API service
# on unix:///run/user/UID/podman/podman.sock. Run as root; each step is skipped when done. Prints the socket
# on stdout (what BUGFORGE_PODMAN_SOCKET takes); exits non-zero, saying why on stderr, when it cannot.
set -euo pipefail
U=${BUGFORGE_PODMAN_USER:-bfpodman}
say() { echo "setup-podman: $*" >&2; }
if ! command -v podman >/dev/null 2>&1 || ! command -v newuidmap >/dev/null 2>&1 || [ ! -x /usr/bin/fuse-overlayfs ]; then
  say "apt-get install podman uidmap fuse-overlayfs slirp4netns"
  { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q podman uidmap fuse-overlayfs slirp4netns; } >/dev/null 2>&1 \
    || { say "could not install Debian's podman"; exit 1; }
fi
id -u "$U" >/dev/null 2>&1 || useradd -m -s /bin/bash "$U"
for f in /etc/subuid /etc/subgid; do  # 65536 ids above every range already handed out
  if ! grep -q "^$U:" "$f" 2>/dev/null; then
    start=$(awk -F: 'BEGIN{m=100000} {e=$2+$3; if (e>m) m=e} END{print m}' "$f" 2>/dev/null || echo 100000)
    echo "$U:$start:65536" >>"$f"
  fi
done
UID_=$(id -u "$U"); HOME_=$(getent passwd "$U" | cut -d: -f6); RUN=/run/user/$UID_
SOCK=$RUN/podman/podman.sock
as_user() { runuser -u "$U" -- env XDG_RUNTIME_DIR="$RUN" HOME="$HOME_" "$@"; }
install -d -m 700 -o "$U" -g "$U" "$RUN" "$RUN/podman"
CONF=$HOME_/.config/containers/storage.conf
if [ -e /dev/fuse ] && [ -x /usr/bin/fuse-overlayfs ] && ! grep -q fuse-overlayfs "$CONF" 2>/dev/null; then
  # overlay through fuse-overlayfs: a container costs no copy of its image (vfs copies it: ~2 s a run)
  as_user mkdir -p "$(dirname "$CONF")"
  printf '[storage]\ndriver = "overlay"\n\n[storage.options.overlay]\nmount_program = "/usr/bin/fuse-overlayfs"\n' \
    | as_user tee "$CONF" >/dev/null
  if [ -d "$HOME_/.local/share/containers/storage" ]; then
    say "switching $U's storage to overlay (podman system reset: its images go)"
    as_user podman system reset -f >/dev/null 2>&1 || true
  fi
fi
CC=$HOME_/.config/containers/containers.conf
if ! grep -q exit_command_delay "$CC" 2>/dev/null; then
  # an exec's conmon waits exit_command_delay (300 s by default) after the exec ends: bugforge's many short execs
  # left hundreds of them; 5 s still lets a client read the exit code
  as_user mkdir -p "$(dirname "$CC")"
  printf '[engine]\nexit_command_delay = 5\n' | as_user tee -a "$CC" >/dev/null
  say "$CC: exit_command_delay = 5 (a service already running keeps 300 s until restarted)"
fi
ping() { curl -s -m 5 --unix-socket "$SOCK" http://d/_ping 2>/dev/null | grep -q OK; }
if ! ping; then
  say "starting $U's podman API service on $SOCK"
  as_user setsid podman system service --time=0 "unix://$SOCK" </dev/null >>"$RUN/podman-service.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 60); do { ping || ! kill -0 $pid 2>/dev/null; } && break; sleep 0.5; done
  ping || { say "the service did not answer: $(tail -n 3 "$RUN/podman-service.log" | tr '\n' ' ')"; exit 1; }
fi
echo "$SOCK"
