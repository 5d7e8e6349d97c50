"""`bugforge images build | bootstrap | prune`: base images; removing images no run record names."""

from __future__ import annotations

from bugforge.cli.common import console, default_of, log
from bugforge.images import ensure_base_image


def configure(p) -> None:
    im = p.add_subparsers(dest="cmd", required=True)
    for name, help_ in (
        ("build", "build the base image (registry, else offline bootstrap)"),
        ("bootstrap", "build the base image offline from a debootstrap root file system"),
    ):
        b = im.add_parser(name, help=help_)
        b.add_argument(
            "--python",
            default=default_of(ensure_base_image, "python"),
            help="Python version (offline: 3.9, 3.11 or 3.13)",
        )
        if name == "build":
            b.add_argument(
                "--source", choices=["auto", "registry", "bootstrap"], default=default_of(ensure_base_image, "source")
            )
            b.add_argument("--from", dest="from_image", help="registry image with Python (default python:X-slim)")
        else:
            b.set_defaults(from_image=None)
        b.add_argument("--ca-bundle", help="PEM bundle to trust inside images (default: the host's bundle)")
        b.add_argument("--no-ca-bundle", action="store_true", help="inject no CA bundle")
        b.set_defaults(func=cmd_build)
    pr = im.add_parser(
        "prune",
        help="remove environment and instance images no run record refers to, and "
        "bugforge's stopped containers (base images stay)",
    )
    pr.add_argument(
        "--runs",
        action="append",
        metavar="DIR",
        help="run directory whose env.json and JSONL rows name the images to keep (repeatable; default: runs)",
    )
    pr.add_argument(
        "--only",
        action="append",
        metavar="NAME",
        help="only environment NAME's images and their containers (repeatable)",
    )
    pr.add_argument("--dry-run", action="store_true", help="list what would be removed; remove nothing")
    pr.set_defaults(func=cmd_prune)


def cmd_build(a) -> int:
    ca = "" if a.no_ca_bundle else a.ca_bundle
    source = "bootstrap" if a.cmd == "bootstrap" else a.source
    img = ensure_base_image(a.python, source=source, from_image=a.from_image, ca_bundle=ca, log=log)
    how = "built" if img.built else "reused"
    console.print(f"base image {img.tag} ({how}, via {img.source})")
    return 0


def cmd_prune(a) -> int:
    from bugforge.images.prune import prune, size

    say = lambda line: console.print(line, markup=False, soft_wrap=True)  # noqa: E731  one line each
    out = prune(a.runs or ["runs"], dry_run=a.dry_run, only=a.only, log=say)
    did, removed = ("would reclaim at least", "to remove") if a.dry_run else ("reclaimed", "removed")
    say(
        f"{did} {size(out.reclaimed)} ({out.removed} {removed}, {out.skipped} skipped)"
        if out.removed or out.skipped
        else "nothing to prune"
    )
    return 0
