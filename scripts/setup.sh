#!/usr/bin/env bash
# Everything a fresh machine needs: a Docker engine, the bugforge package (editable, with test extras),
# and the base image (from a registry, or built offline). Safe to rerun: each step is skipped when done.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-engine.sh
PY=${PYTHON:-python3}
if ! $PY -c "import bugforge.factory, bugforge.sandbox, bugforge.agent, bugforge.images, bugforge.training" >/dev/null 2>&1 || [ pyproject.toml -nt .setup-stamp ]; then
  echo "setup: pip install -e '.[dev,train,ray]'"
  $PY -m pip install -q --disable-pip-version-check -e '.[dev,train,ray]' 2>&1 | grep -v -E "^WARNING: (Location|Running pip)" || true
  $PY -c "import bugforge.factory, bugforge.sandbox, bugforge.agent, bugforge.images, bugforge.training"  # fail here, clearly, if the install did not work
  touch .setup-stamp
fi
if [ ! -x /usr/bin/chromium ]; then  # the headless browser tests/view drive with Playwright (never `playwright install`)
  echo "setup: apt-get install chromium"
  { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium; } >/dev/null 2>&1 \
    || echo "setup: could not install Debian's chromium (tests/view need /usr/bin/chromium)" >&2
fi
if ! command -v docker-registry >/dev/null 2>&1; then  # a real registry for tests/images/test_registry.py
  echo "setup: apt-get install docker-registry"
  { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q docker-registry; } >/dev/null 2>&1 \
    || echo "setup: could not install Debian's docker-registry (the registry tests will skip)" >&2
fi
if ! command -v bwrap >/dev/null 2>&1; then  # the process backend's confinement (tests/sandbox/test_process_backend.py)
  echo "setup: apt-get install bubblewrap"
  { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q bubblewrap; } >/dev/null 2>&1 \
    || echo "setup: could not install Debian's bubblewrap (the process backend refuses without it)" >&2
fi
if [ "$(id -u)" = 0 ]; then  # rootless Podman for the podman backend (tests/sandbox/test_podman_backend.py)
  bash scripts/setup-podman.sh >/dev/null || echo "setup: rootless Podman not set up (the podman backend's tests will skip)" >&2
fi
bugforge images build
