#!/usr/bin/env bash
# mini-swe-agent (PyPI `mini-swe-agent`, pinned) in its own virtual environment, keyed by version under
# bugforge's cache home ($BUGFORGE_HOME, else ~/.cache/bugforge), reused when present. Its own
# environment because its dependency litellm pins newer certifi/boto3 than other tools installed beside
# bugforge may allow (it upgrades botocore past awscli's pin, for one). Prints the environment's folder:
# its bin/mini-extra is the command. Safe to rerun.
#   PYTHON=/path/to/python3.10+ bash scripts/setup-minisweagent.sh
set -euo pipefail
MSWEA_VERSION=2.4.6
home=${BUGFORGE_HOME:-$HOME/.cache/bugforge}
venv=$home/mini-swe-agent-$MSWEA_VERSION
if [ -x "$venv/bin/mini-extra" ] && [ -f "$venv/.complete" ]; then
  echo "$venv"
  exit 0
fi
py=${PYTHON:-python3}
if ! "$py" -c 'import sys; assert sys.version_info[:2] >= (3, 10)' >/dev/null 2>&1; then
  echo "setup-minisweagent: mini-swe-agent needs Python >= 3.10; set PYTHON=/path/to/python3" >&2
  exit 1
fi
rm -rf "$venv"
"$py" -m venv "$venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check "mini-swe-agent==$MSWEA_VERSION" 2>&1 |
  grep -v -E "^WARNING: (Location|Running pip)" >&2 || true
MSWEA_SILENT_STARTUP=1 "$venv/bin/python" -c 'import minisweagent, datasets; assert minisweagent.__version__ == "'$MSWEA_VERSION'"'
"$venv/bin/mini-extra" swebench --help >/dev/null
touch "$venv/.complete"
echo "$venv"
