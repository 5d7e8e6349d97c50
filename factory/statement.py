"""Problem statements in the voice of a bug report, written from what the failing tests show (names,
assertion messages, the line that raised) — never from the diff. Optionally polished by an LM, which
is shown the same material and nothing more."""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass

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


def polish(statement: str, client, model: str, max_tokens: int = 600, seed: int | None = None) -> str:
    """Rewrite through an LM endpoint, keeping the facts. An endpoint error or an empty reply raises
    PolishError (the reason in one line); `Polisher` catches it, logs it and keeps the original."""
    import openai

    prompt = (
        "Rewrite this bug report so it reads like a GitHub issue written by a user. Keep every test name and "
        "error message; do not guess at the cause or the fix.\n\n" + statement
    )
    try:
        r = client.chat.completions.create(
            model=model,
            messages=[{"role": "user", "content": prompt}],
            max_tokens=max_tokens,
            temperature=0.3,
            seed=seed,
        )
    except openai.OpenAIError as e:  # connection, timeout, HTTP status, malformed response
        raise PolishError(f"{type(e).__name__}: {' '.join(str(e).split())[:200]}") from e
    text = (r.choices[0].message.content or "").strip() if r.choices else ""
    if not text:
        raise PolishError("the model returned no text")
    return text


class PolishError(Exception):
    """Why an LM rewrite of a statement was not used (one line)."""


@dataclass
class Polisher:
    """LM-written statements for an export: `polisher(text, patch)` is the model's rewrite of `text`,
    scrubbed of the patch's changed lines (`scrub`), or `text` itself when the endpoint fails (a one-line
    warning through `log`, counted in `fallbacks`). After `give_up` failures in a row it stops asking:
    a dead endpoint costs a few warnings, not one timeout per instance."""

    model: str
    base_url: str | None = None
    max_tokens: int = 600
    seed: int | None = 0
    give_up: int = 3
    log: Callable[[str], None] = print
    client: object = None
    polished: int = 0
    fallbacks: int = 0
    scrubbed: int = 0
    failed_in_a_row: int = 0

    def __post_init__(self) -> None:
        if self.client is None:
            import os

            from openai import OpenAI

            self.client = OpenAI(
                base_url=self.base_url or os.environ.get("OPENAI_BASE_URL"),
                api_key=os.environ.get("OPENAI_API_KEY") or "none",
                timeout=300,
                max_retries=1,
            )

    def __call__(self, text: str, patch: str) -> str:
        if self.failed_in_a_row >= self.give_up:
            self.fallbacks += 1
            return text
        try:
            out = polish(text, self.client, self.model, self.max_tokens, self.seed)
        except PolishError as e:
            self.fallbacks += 1
            self.failed_in_a_row += 1
            stop = (
                " (stopping: the template statements are used for the rest)"
                if self.failed_in_a_row >= self.give_up
                else ""
            )
            self.log(f"warning: statement model {self.model}: {e}; kept the template statement{stop}")
            return text
        self.failed_in_a_row = 0
        self.polished += 1
        clean = scrub(out, patch)
        self.scrubbed += clean != out
        return clean

    def summary(self) -> str:
        return (
            f"statements: {self.polished} written by {self.model} ({self.scrubbed} with patch lines removed), "
            f"{self.fallbacks} fallbacks to the template"
        )
