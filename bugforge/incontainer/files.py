"""File operations inside a session's container, copied to /opt/bugforge/bugforge_files.py and run by
`docker exec` as the session's user (never through the agent's shell, whose aliases and functions the
agent controls). Every path is resolved inside the container — symlinks included — and refused unless
it stays inside the workspace. Runs under the image's Python (3.9+): no bugforge imports.

Request on stdin (JSON): {"op": "read"|"write"|"edit"|"list", "root": "/testbed", "path": "...",
  "content": "...", "old": "...", "new": "...", "max_bytes": N}
Answer on stdout (JSON): {"ok": true, ...} or {"ok": false, "error": "..."}
"""

import json
import os
import sys


def confine(root, path):
    root = os.path.realpath(root)
    full = os.path.realpath(os.path.join(root, path))  # an absolute `path` replaces root: checked below
    if full != root and not full.startswith(root + os.sep):
        raise ValueError("path %r is outside the workspace %s" % (path, root))
    return full


def main():
    req = json.load(sys.stdin)
    root = req.get("root", "/testbed")
    try:
        path = confine(root, req.get("path", "."))
        op = req["op"]
        if op == "read":
            with open(path, "rb") as f:
                data = f.read(int(req.get("max_bytes", 1 << 20)) + 1)
            limit = int(req.get("max_bytes", 1 << 20))
            out = {"ok": True, "content": data[:limit].decode("utf-8", "replace"), "truncated": len(data) > limit}
        elif op == "write":
            parent = os.path.dirname(path)
            os.makedirs(parent, exist_ok=True)
            confine(root, os.path.relpath(os.path.realpath(parent), os.path.realpath(root)))
            with open(path, "w") as f:
                f.write(req.get("content", ""))
            out = {"ok": True, "bytes": len(req.get("content", "").encode())}
        elif op == "edit":
            with open(path) as f:
                text = f.read()
            old, new = req["old"], req.get("new", "")
            n = text.count(old) if old else 0
            if n != 1:
                raise ValueError("old text found %d times in %s; it must occur exactly once" % (n, req["path"]))
            with open(path, "w") as f:
                f.write(text.replace(old, new, 1))
            out = {"ok": True}
        elif op == "list":
            entries = []
            for name in sorted(os.listdir(path))[:5000]:
                p = os.path.join(path, name)
                entries.append(
                    {"name": name, "dir": os.path.isdir(p) and not os.path.islink(p), "size": os.lstat(p).st_size}
                )
            out = {"ok": True, "entries": entries}
        else:
            raise ValueError("unknown op %r" % op)
    except (OSError, ValueError, KeyError, UnicodeDecodeError) as e:
        out = {"ok": False, "error": str(e) if not isinstance(e, KeyError) else "missing field %s" % e}
    sys.stdout.write(json.dumps(out))


if __name__ == "__main__":
    main()
