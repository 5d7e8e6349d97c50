"""Read a predictions file in every form the SWE-bench harness accepts, into `Prediction` records:

- JSONL, one prediction object a line (blank lines skipped);
- a JSON list of prediction objects;
- a JSON object keyed by instance id, each value a prediction object (SWE-agent's and mini-swe-agent's
  `preds.json`; a value without `instance_id` takes its key);
- the word `gold`: each dataset row's own `patch`, under the model name `gold`.

The form is read from the content, not the file name (a `.json` file of JSONL lines reads too). A prediction needs `instance_id` (a non-empty
string) and `model_patch` (a string, or null for no patch); `model_name_or_path` is optional. Anything
else (bad JSON, a missing or mistyped field, an id twice, an empty file) raises one BugforgeError naming
the line, item or key: the whole file is read and checked before anything is returned, so nothing is
graded from a half-read file."""

from __future__ import annotations

import json
from pathlib import Path

from bugforge.errors import BugforgeError
from bugforge.records import Prediction

FIELDS = {"instance_id", "model_patch", "model_name_or_path"}
FIX = "write one prediction per instance as {instance_id, model_patch, model_name_or_path} (docs/mini-swe-agent.md)"


def read_predictions(source: str | Path, rows: list[dict] | None = None) -> list[Prediction]:
    """The predictions of `source` (a path, or "gold" with the dataset's `rows`), in file order."""
    if str(source) == "gold":
        if rows is None:
            raise BugforgeError("`gold` predictions need the dataset", "pass --dataset")
        return [Prediction(r["instance_id"], r.get("patch") or "", "gold") for r in rows]
    path = Path(source)
    if not path.is_file():
        raise BugforgeError(
            f"predictions file {path} does not exist",
            "run an agent first (`bugforge run-agent`, mini-swe-agent), or pass `gold`",
        )
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise BugforgeError(f"cannot read predictions file {path}: {e}", FIX) from None
    return parse_predictions(text, str(path))


def parse_predictions(text: str, name: str = "predictions") -> list[Prediction]:
    """The predictions in `text` (any of the forms above); `name` prefixes every error."""
    if not text.strip():
        raise BugforgeError(f"{name}: the predictions file is empty", FIX)
    try:
        whole = json.loads(text)
    except json.JSONDecodeError as e:
        first = next(line for line in text.split("\n") if line.strip())
        try:
            json.loads(first)
        except json.JSONDecodeError:  # not JSONL: one JSON document spread over lines, broken somewhere
            raise BugforgeError(f"{name}: line {e.lineno} column {e.colno}: not valid JSON ({e.msg})", FIX) from None
        return _checked(name, _jsonl(text, name))
    if isinstance(whole, list):
        return _checked(name, [(f"item {i}", p) for i, p in enumerate(whole, 1)])
    if isinstance(whole, dict):
        if any(not isinstance(whole[k], dict) for k in FIELDS & set(whole)):
            return _checked(name, [("line 1", whole)])  # a JSONL file of one prediction
        items = []
        for key, value in whole.items():
            if not isinstance(value, dict):
                raise BugforgeError(f"{name}: key {key!r}: its value is {_kind(value)}, not a prediction object", FIX)
            if value.get("instance_id", key) != key:
                raise BugforgeError(
                    f"{name}: key {key!r}: its value's instance_id is {value['instance_id']!r}, not the key", FIX
                )
            items.append((f"key {key!r}", {"instance_id": key, **value}))
        return _checked(name, items)
    raise BugforgeError(f"{name}: the file holds {_kind(whole)}, not predictions", FIX)


def _jsonl(text: str, name: str) -> list[tuple[str, object]]:
    items = []
    for n, line in enumerate(text.split("\n"), 1):  # (JSON Lines end at \n: a string may hold U+2028)
        if not line.strip():
            continue
        try:
            items.append((f"line {n}", json.loads(line)))
        except json.JSONDecodeError as e:
            raise BugforgeError(f"{name}: line {n}: not valid JSON ({e.msg} at column {e.colno})", FIX) from None
    return items


def _checked(name: str, items: list[tuple[str, object]]) -> list[Prediction]:
    if not items:
        raise BugforgeError(f"{name}: the file holds no predictions", FIX)
    seen: dict[str, str] = {}
    out = []
    for where, p in items:
        if not isinstance(p, dict):
            raise BugforgeError(f"{name}: {where}: {_kind(p)}, not a prediction object", FIX)
        iid = p.get("instance_id")
        if not isinstance(iid, str) or not iid:
            got = "no instance_id" if iid is None else f"instance_id is {_kind(iid)}, not a non-empty string"
            raise BugforgeError(f"{name}: {where}: {got}", FIX)
        if "model_patch" not in p:
            raise BugforgeError(f"{name}: {where}: no model_patch for {iid}", FIX)
        patch = p["model_patch"]
        if patch is not None and not isinstance(patch, str):
            raise BugforgeError(f"{name}: {where}: model_patch of {iid} is {_kind(patch)}, not a string", FIX)
        model = p.get("model_name_or_path")
        if model is not None and not isinstance(model, str):
            raise BugforgeError(f"{name}: {where}: model_name_or_path of {iid} is {_kind(model)}, not a string", FIX)
        if iid in seen:
            raise BugforgeError(f"{name}: {where}: {iid} is predicted twice (first at {seen[iid]})", FIX)
        seen[iid] = where
        out.append(Prediction(iid, patch or "", model or "model"))
    return out


def _kind(value: object) -> str:
    if value is None:
        return "null"
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), "a number" if isinstance(value, (int, float)) else type(value).__name__
    )
