"""`bugforge doctor`: check the Docker engine, disk and base image."""

from __future__ import annotations

from bugforge.cli.common import console, default_of
from bugforge.images.doctor import doctor


def configure(d) -> None:
    d.add_argument("--python", default=default_of(doctor, "python"))
    d.set_defaults(func=cmd_doctor)


def cmd_doctor(a) -> int:
    checks = doctor(a.python)
    for c in checks:
        mark = "[green]ok[/green]  " if c.ok else "[red]FAIL[/red]"
        console.print(f"{mark} {c.name}: {c.detail}" + (f"\n       fix: {c.fix}" if not c.ok and c.fix else ""))
    ok = all(c.ok for c in checks)
    console.print("[green]engine ready[/green]" if ok else "[red]engine not ready[/red]")
    return 0 if ok else 1
