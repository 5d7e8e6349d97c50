"""Problem statements in the voice of a bug report, written from what the failing tests show (names,
assertion messages, the line that raised) — never from the diff. Optionally polished by an LM, which
is shown the same material and nothing more."""

from __future__ import annotations

import random
import re

from bugforge.records import Candidate, Validation

OPENINGS = [
    "After updating to the latest code, some behaviour that used to work is now broken.",
    "I'm seeing wrong results from {area} on the current version.",
    "Something in {area} seems to have regressed.",
    "{area} no longer behaves the way it used to.",
]
CLOSINGS = [
    "These checks passed before; they should pass again.",
    "Expected: the calls above behave as they did before. Could someone take a look?",
    "I'd expect all of these to work as they did previously.",
]


def _area(tests: list[str]) -> str:
    names = [re.sub(r"^tests?/|^test_|\.py$", "", t.split("::")[0].rsplit("/", 1)[-1]) for t in tests]
    common = max(set(names), key=names.count)
    return f"the `{re.sub(r'^test_', '', common)}` functionality"


def _readable(test: str) -> str:
    name = test.split("::")[-1]
    name = re.sub(r"\[.*\]$", "", name)
    return re.sub(r"^test_?", "", name).replace("_", " ").strip() or name


def _clean_message(msg: str, patch: str) -> str:
    lines = [l for l in msg.strip().splitlines() if l.strip()]
    text = " ".join(lines[:3])[:300]
    return text


def write(cand: Candidate, val: Validation, seed: int = 0, max_tests: int = 5) -> str:
    rng = random.Random(f"{seed}:{cand.id}")
    tests = val.FAIL_TO_PASS
    area = _area(tests)
    out = [rng.choice(OPENINGS).format(area=area), ""]
    shown = tests[:max_tests]
    out.append("The following checks fail:" if len(shown) > 1 else "The following check fails:")
    for t in shown:
        msg = _clean_message(val.messages.get(t, ""), cand.patch)
        out.append(f"- {_readable(t)} (`{t}`)" + (f": {msg}" if msg else ""))
    if len(tests) > max_tests:
        out.append(f"- ... and {len(tests) - max_tests} more in the same area")
    out += ["", rng.choice(CLOSINGS)]
    return scrub("\n".join(out), cand.patch)


def leaks(text: str, patch: str) -> list[str]:
    """Changed code lines of the patch (removed or added, 12+ chars) that appear in `text`."""
    changed = [
        l[1:].strip()
        for l in patch.splitlines()
        if l[:1] in "+-" and not l.startswith(("+++", "---")) and len(l[1:].strip()) >= 12
    ]
    return [c for c in changed if c in text]


def scrub(text: str, patch: str) -> str:
    for line in leaks(text, patch):
        text = text.replace(line, "[...]")
    return text


def polish(statement: str, client, model: str) -> str:
    """Rewrite through an LM endpoint, keeping the facts; falls back to the original on any failure."""
    prompt = (
        "Rewrite this bug report so it reads like a GitHub issue written by a user. Keep every test name and "
        "error message; do not guess at the cause or the fix.\n\n" + statement
    )
    try:
        r = client.chat.completions.create(
            model=model, messages=[{"role": "user", "content": prompt}], max_tokens=600, temperature=0.3
        )
        return (r.choices[0].message.content or "").strip() or statement
    except Exception:
        return statement
