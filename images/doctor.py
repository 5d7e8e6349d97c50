"""`bugforge doctor`: is the engine reachable, is there disk, is the base image built."""

from __future__ import annotations

from dataclasses import dataclass

from bugforge.engine import MIN_FREE_GB, client, free_gb
from bugforge.errors import BugforgeError
from bugforge.images.build import find_base_image


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""


def doctor(python: str = "3.11") -> list[Check]:
    """Every check `bugforge doctor` prints; the engine is unusable unless all pass."""
    try:
        c = client()
    except BugforgeError as e:
        return [Check("engine reachable", False, e.what, e.fix)]
    checks = [Check("engine reachable", True, c.api.base_url)]
    v = c.version()
    checks.append(Check("engine version", True, f"{v.get('Version')} (API {v.get('ApiVersion')})"))
    gb = free_gb(c)
    checks.append(
        Check(
            "free disk",
            gb >= MIN_FREE_GB,
            f"{gb:.1f} GB free",
            f"free at least {MIN_FREE_GB:.0f} GB (docker system prune)",
        )
    )
    tag = find_base_image(python)
    checks.append(
        Check(
            f"base image (python {python})",
            tag is not None,
            tag or "not built",
            f"build it with `bugforge images build --python {python}`",
        )
    )
    return checks
