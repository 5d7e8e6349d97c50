"""`bugforge images build | bootstrap | prune | push | pull | check | rootfs | save | load`: base images; removing images
no run record names; an export's images through a registry (bugforge.images.registry, docs/scale.md); the
root file systems the engine-less `process` sandbox backend runs from (bugforge.images.rootfs,
docs/sandbox.md); a dataset's images as one archive for a Podman node (bugforge.images.archive)."""

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
    pu = im.add_parser(
        "push",
        help="push a run's environment and instance images to a registry and write "
        "instances.pushed.jsonl (rows naming the pushed images by digest); resumable",
    )
    pu.add_argument("--registry", required=True, metavar="HOST[:PORT]/NS", help="e.g. 127.0.0.1:5000/bugforge")
    pu.add_argument("run", metavar="RUN_DIR", help="the run folder of an export (runs/NAME)")
    pu.set_defaults(func=cmd_push)
    for name, help_ in (
        ("pull", "pull every image of a dataset this machine lacks (a pushed dataset's images)"),
        ("check", "verify this machine has every image of a dataset; one line and exit 1 if not"),
    ):
        c = im.add_parser(name, help=help_)
        c.add_argument(
            "dataset", metavar="DATASET", help="a dataset JSONL, or a run folder (its instances.pushed.jsonl if any)"
        )
        c.set_defaults(func=cmd_pull if name == "pull" else cmd_check)
    rf = im.add_parser(
        "rootfs",
        help="export the file system of each environment image a dataset uses into DIR/<image>/ (for the "
        "engine-less `process` sandbox backend); resumable",
    )
    rf.add_argument("dataset", metavar="DATASET", help="a run folder (runs/NAME) or a dataset JSONL")
    rf.add_argument("--out", metavar="DIR", help="where the trees go (default: a rootfs folder beside the dataset)")
    rf.set_defaults(func=cmd_rootfs)
    sv = im.add_parser("save", help="write every instance image of a dataset into one archive (for `images load`)")
    sv.add_argument("dataset", metavar="DATASET", help="a run folder (runs/NAME) or a dataset JSONL")
    sv.add_argument("--out", metavar="FILE", required=True, help="the archive (docker-save format)")
    sv.set_defaults(func=cmd_save)
    ld = im.add_parser("load", help="load an archive `images save` wrote into this machine's engine")
    ld.add_argument("archive", metavar="FILE")
    ld.add_argument(
        "--backend", choices=("docker", "podman"), default="docker", help="podman: the rootless user's store"
    )
    ld.set_defaults(func=cmd_load)


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


def cmd_push(a) -> int:
    from bugforge.images.registry import PUSHED_FILE, push

    say = lambda line: console.print(line, markup=False, soft_wrap=True)  # noqa: E731
    r = push(a.run, a.registry, log=say)
    done = (
        f"dataset with pushed images: {r.out}"
        if r.out.name == PUSHED_FILE
        else f"no instances.jsonl yet: the environment image only (logged in {r.out})"
    )
    say(
        f"{len(r.pushed)} pushed ({r.layers_sent} layers sent, {r.layers_reused} already in the registry), "
        f"{len(r.skipped)} already pushed; {done}"
    )
    return 0


def cmd_pull(a) -> int:
    from bugforge.images.registry import dataset_path, load_rows, pull

    say = lambda line: console.print(line, markup=False, soft_wrap=True)  # noqa: E731
    pulled, have = pull(load_rows(a.dataset), log=say)
    say(f"{pulled} pulled, {have} already present: every image of {dataset_path(a.dataset)} is here")
    return 0


def cmd_check(a) -> int:
    import sys

    from bugforge.images.registry import dataset_images, dataset_path, load_rows, missing

    rows = load_rows(a.dataset)
    gone, total = missing(rows), len(dataset_images(rows))
    if gone:
        more = f" (+{len(gone) - 1} more)" if len(gone) > 1 else ""
        print(
            f"error: {len(gone)} of {total} images of {dataset_path(a.dataset)} missing here: {gone[0]}{more} "
            f"— run `bugforge images pull {a.dataset}`",
            file=sys.stderr,
        )
        return 1
    console.print(f"all {total} images of {dataset_path(a.dataset)} present", markup=False, soft_wrap=True)
    return 0


def cmd_rootfs(a) -> int:
    from bugforge.images.rootfs import export_rootfs

    say = lambda line: console.print(line, markup=False, soft_wrap=True)  # noqa: E731
    r = export_rootfs(a.dataset, a.out, log=say)
    say(
        f"{len(r.exported)} exported, {len(r.skipped)} already there: {r.out} "
        f"(use it with sandbox.connect(backend='process', rootfs='{r.out}'))"
    )
    return 0


def cmd_save(a) -> int:
    from bugforge.images.archive import save

    names = save(a.dataset, a.out)
    console.print(f"{len(names)} images -> {a.out}", markup=False, soft_wrap=True)
    return 0


def cmd_load(a) -> int:
    from bugforge import engine
    from bugforge.images.archive import load

    engine.select(a.backend)
    names = load(a.archive)
    console.print(f"{len(names)} images loaded into {a.backend}: {' '.join(names)}", markup=False, soft_wrap=True)
    return 0
