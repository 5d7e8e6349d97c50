"""Where bugforge keeps what it caches on the host (clones, models): $BUGFORGE_HOME, else
~/.cache/bugforge."""

from __future__ import annotations

import os
from pathlib import Path


def cache_home() -> Path:
    return Path(os.environ.get("BUGFORGE_HOME", Path.home() / ".cache" / "bugforge"))
