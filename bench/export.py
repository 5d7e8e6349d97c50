"""Export speed, old path vs new, side by side in one run, with the identity checks.

For each environment folder (made by `bugforge factory env` + `bugforge factory generate`), the same
validated bugs are exported twice into this bench's own folder: with `--method commit` (a container per
instance, committed: the old path) and with `--method layers` (the layers written on the host, one
`docker load` per batch: factory/layers.py). The environment is copied under another name, so the
bench's image tags are its own and never replace another export's. Then, for every instance, both
images are compared: the row (base_commit and every other field but the timestamps and image names),
and in a container of each, factory.export.FINGERPRINT (HEAD, `git ls-files -s`, `git status`, every
object's id/type/size, the loose-object files with owners and modes, every path's owner/mode/type,
every file's content, the baseline manifest, the tools) plus how many objects of the fixed state are
left (the environment's commit and tree, the changed files' fixed blobs). Prints seconds per instance
of each path and the ratio; removes the images it made unless --keep.

    python bench/export.py runs/export-bench/textkit runs/export-bench/cachetools

Figures: docs/figures.md, "Export"."""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bugforge.engine import client
from bugforge.factory.export import export, fingerprint, remove_images
from bugforge.factory.generate import load_validated
from bugforge.records import load_env, read_jsonl

VOLATILE = {"created_at", "image", "image_name", "docker_image"}


def bench_copy(src: Path, dest: Path) -> Path:
    """`src`'s records under `dest`, the environment renamed so that the tags are the bench's own."""
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    for name in ("env.json", "candidates.jsonl", "validations.jsonl", "recipe.json", "testmap.json.gz"):
        if (src / name).exists():
            shutil.copy(src / name, dest / name)
    rec = json.loads((dest / "env.json").read_text())
    rec["name"] = (
        f"exportbench{uuid.uuid4().hex[:8]}-{rec['name']}"  # a run of its own: another bench's clean-up spares it
    )
    (dest / "env.json").write_text(json.dumps(rec))
    return dest


def fixed_objects(env, cands) -> dict[str, tuple[str, ...]]:
    """Per instance id: the objects only the fixed state has (the commit, its tree, each changed file's
    fixed blob), as the environment's repository holds them."""

    def rev(spec: str) -> str:
        return subprocess.run(
            ["git", "-C", env.repo_dir, "rev-parse", spec], capture_output=True, text=True, check=True
        ).stdout.strip()

    root = rev(f"{env.base_commit}^{{tree}}")
    return {
        f"{env.name}.{c.strategy}.{c.id[:8]}": (
            env.base_commit,
            root,
            *(rev(f"{env.base_commit}:{f}") for f in c.files),
        )
        for c in cands
    }


def run_one(src: Path, work: Path, limit: int | None, keep: bool) -> dict:
    d = bench_copy(src, work / src.name)
    env = load_env(d / "env.json")
    old_out, new_out = d / "old.jsonl", d / "new.jsonl"
    t = time.perf_counter()
    export(d, old_out, limit=limit, method="commit")
    t_old = time.perf_counter() - t
    old = read_jsonl(old_out)
    for r in old:  # the old images move aside, so the new path builds every image itself
        repo, tag = r["image"].split(":")
        client().images.get(r["image"]).tag(repo, tag + "-old")
        client().images.remove(r["image"])
        r["image"] = f"{repo}:{tag}-old"
    t = time.perf_counter()
    export(d, new_out, limit=limit, method="layers")
    t_new = time.perf_counter() - t
    new = {r["instance_id"]: r for r in read_jsonl(new_out)}
    try:
        cands = [c for c, _ in load_validated(d)]
        fixed = fixed_objects(env, cands)
        env_layers = len(client().images.get(env.image).attrs["RootFS"]["Layers"])
        with ThreadPoolExecutor(2) as pool:
            prints = list(
                pool.map(
                    lambda r: (
                        fingerprint(r["image"], fixed[r["instance_id"]]),
                        fingerprint(new[r["instance_id"]]["image"], fixed[r["instance_id"]]),
                    ),
                    old,
                )
            )
        res = {"env": src.name, "n": len(old), "old_s": t_old / len(old), "new_s": t_new / len(new)}
        res["commit_same"] = sum(r["base_commit"] == new[r["instance_id"]]["base_commit"] for r in old)
        res["rows_same"] = sum(
            {k: v for k, v in r.items() if k not in VOLATILE}
            == {k: v for k, v in new[r["instance_id"]].items() if k not in VOLATILE}
            for r in old
        )
        res["trees_same"] = sum(a == b for a, b in prints)
        res["fixed_left"] = sum(int(b["fixed_left"]) for _, b in prints)
        res["fixed_left_old"] = sum(int(a["fixed_left"]) for a, _ in prints)
        res["configs_same"] = sum(
            {k: v for k, v in client().images.get(r["image"]).attrs["Config"].items() if k in CONFIG}
            == {
                k: v
                for k, v in client().images.get(new[r["instance_id"]]["image"]).attrs["Config"].items()
                if k in CONFIG
            }
            for r in old
        )
        res["committed"] = sum(
            len(client().images.get(r["image"]).attrs["RootFS"]["Layers"]) == env_layers + 1 for r in new.values()
        )
        res["diffs"] = [
            {k: (a[k], b.get(k)) for k in a if a[k] != b.get(k)} | {"id": r["instance_id"]}
            for r, (a, b) in zip(old, prints)
            if a != b
        ][:3]
        return res
    finally:
        if not keep:
            remove_images([*old, *new.values()])


CONFIG = ("Env", "Cmd", "WorkingDir", "Labels", "User", "Entrypoint", "StopSignal")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("envs", nargs="+", help="environment folders with validated bugs")
    ap.add_argument("--work", default="runs/export-bench/bench", help="this bench's own folder")
    ap.add_argument("--limit", type=int, help="export at most this many instances per environment")
    ap.add_argument("--keep", action="store_true", help="keep the images")
    a = ap.parse_args()
    print(
        f"{'environment':<14}{'inst':>5}{'old s/inst':>11}{'new s/inst':>11}{'ratio':>7}"
        "  same commit/row/tree/config  fixed left  committed",
        flush=True,
    )
    results = []
    for e in a.envs:
        r = run_one(Path(e), Path(a.work), a.limit, a.keep)
        results.append(r)
        print(
            f"{r['env']:<14}{r['n']:>5}{r['old_s']:>11.3f}{r['new_s']:>11.3f}{r['old_s'] / r['new_s']:>6.1f}x"
            f"  {r['commit_same']}/{r['rows_same']}/{r['trees_same']}/{r['configs_same']} of {r['n']}"
            f"{' ' * 10}{r['fixed_left']} (old {r['fixed_left_old']}){r['committed']:>8}",
            flush=True,
        )
        for d in r["diffs"]:
            print("  differs:", d, flush=True)
    ok = all(r["commit_same"] == r["rows_same"] == r["trees_same"] == r["configs_same"] == r["n"] for r in results)
    print("identical: yes" if ok else "identical: NO")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
