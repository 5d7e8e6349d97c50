"""`bugforge view` in a real browser (Debian's headless Chromium through Playwright) against a runs
directory the fixtures build (tests/view/conftest.py): every page renders, filters and pagination
work, a trajectory shows every turn, bad lines and bad files give readable errors, training curves
refresh while metrics.jsonl grows, nothing is written to the runs directory and nothing is fetched
from outside localhost."""

from __future__ import annotations

import json
import subprocess
import sys
from urllib.parse import quote

DATA = "textkit/instances.jsonl"


def listing(root):
    return sorted((str(p.relative_to(root)), p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*"))


def test_home_lists_environment_datasets_and_runs(page, view_server, runs_dir):
    page.goto(view_server + "/")
    assert page.title() == "bugforge view"
    assert page.get_by_role("link", name="textkit", exact=True).count() == 1
    assert page.get_by_role("link", name=DATA).count() == 1
    page.get_by_role("link", name="textkit", exact=True).click()
    assert "Environment textkit" in page.inner_text("h1")
    assert "61 candidates validated" in page.inner_text("main")  # 60 valid + one with no failures
    assert page.locator("svg.chart").count() == 2


def test_dataset_page_charts_filters_search_pagination_and_bad_lines(page, view_server, runs_dir):
    page.goto(f"{view_server}/dataset?path={quote(DATA)}")
    main = page.inner_text("main")
    assert "60 instances" in main
    assert page.locator("svg.chart").count() >= 4  # strategy, difficulty, file, FAIL_TO_PASS size (+ cost)
    # the malformed line and the half-written one are named on the page; the other rows are listed
    problems = page.inner_text(".problems")
    assert "instances.jsonl line 31: not valid JSON" in problems
    assert "instances.jsonl line 62: incomplete" in problems
    assert "60 matching · page 1 of 2" in page.inner_text("#matches")
    assert page.locator("#instance-list tr").count() == 51
    page.get_by_role("link", name="next →").click()
    assert page.locator("#instance-list tr").count() == 11
    # filters: strategy, then difficulty on top, then a search
    page.goto(f"{view_server}/dataset?path={quote(DATA)}")
    page.select_option("select[name=strategy]", "combine")
    page.click("button[type=submit]")
    assert "15 matching" in page.inner_text("#matches")
    assert set(page.locator("#instance-list td:nth-child(2)").all_inner_texts()) == {"combine"}
    page.select_option("select[name=difficulty]", "easy")
    page.click("button[type=submit]")
    assert "5 matching" in page.inner_text("#matches")  # i = 3 mod 4 and 0 mod 3: 3, 15, 27, 39, 51
    page.goto(f"{view_server}/dataset?path={quote(DATA)}")
    page.fill("input[name=q]", "count_words17 ")
    page.press("input[name=q]", "Enter")
    assert "1 matching" in page.inner_text("#matches")
    page.select_option("select[name=f2p]", "6-10")
    page.fill("input[name=q]", "")
    page.click("button[type=submit]")
    assert "16 matching" in page.inner_text("#matches")  # 1 + i % 7 in (6, 7): i % 7 in (5, 6)


def test_instance_page_statement_diffs_tests_validation_and_runs(page, view_server, runs_dir):
    row = runs_dir[1]["rows"][2]
    page.goto(f"{view_server}/dataset?path={quote(DATA)}")
    page.get_by_role("link", name=row.instance_id).click()
    assert page.inner_text("h1") == row.instance_id
    assert "count_words2 returns the wrong number" in page.inner_text(".statement")
    assert page.locator(".diffs .hl").count() == 2  # Pygments-highlighted bug and gold diffs
    assert page.locator(".diffs .hl .gd").count() >= 1 and page.locator(".diffs .hl .gi").count() >= 1
    assert page.locator("#f2p li").count() == 3
    assert "valid" in page.inner_text("main") and row.image in page.inner_text("main")
    page.get_by_role("link", name="side by side").click()
    assert page.locator("table.sbs td.del").first.inner_text().strip() == "return len(words) + 2"
    assert page.locator("a.traj-link").count() == 2  # model-a and model-b ran it


def test_trajectory_page_shows_every_turn_and_grade(page, view_server, runs_dir):
    row = runs_dir[1]["rows"][1]
    page.goto(f"{view_server}/dataset?path={quote(DATA)}")
    page.get_by_role("link", name=row.instance_id).click()
    page.locator("a.traj-link", has_text="model-a").click()
    assert row.instance_id in page.inner_text("h1")
    turns = page.locator("li.turn")
    assert turns.count() == 3
    first, second, third = (turns.nth(i).inner_text() for i in range(3))
    assert "grep -n return textkit/mod0.py" in first and "exit code 0" in first and "obs-" + row.instance_id in first
    assert "20 completion tokens" in first and "300 prompt" in first
    assert "format error" in second and "Format error: no ```bash block" in second
    assert "submit" in third
    assert page.inner_text("#exit-reason") == "submitted"
    assert "resolved" in page.inner_text(".kv")  # model-a resolved instance 1 in run1
    assert page.locator(".hl").last.inner_text().strip().startswith("diff --git")  # the final patch


def test_evaluations_breakdown_links_and_compare(page, view_server, runs_dir):
    page.goto(view_server + "/evals")
    main = page.inner_text("main")
    assert "textkit/model-a.run1.json" in main and "50%" in main
    assert "broken.run1.json" in main and "Expecting" in main  # a half-written report: its JSON error
    page.get_by_role("link", name="textkit/model-a.run1.json").click()
    assert "resolved 4 of 8 submitted" in page.inner_text("main")
    assert page.locator("svg.chart").count() == 3  # by strategy, difficulty, repo
    links = page.locator("#eval-instances a.traj-link")
    assert links.count() == 8  # every evaluated instance links to its trajectory
    links.first.click()
    assert page.locator("li.turn").count() == 3
    page.goto(view_server + "/evals")
    page.select_option("select[name=a]", "textkit/model-a.run1.json")
    page.select_option("select[name=b]", "textkit/model-b.run1.json")
    page.get_by_role("button", name="compare").click()
    flipped = page.locator("#compare tr.flipped")
    assert flipped.count() == 4  # 0, 1 lost; 4, 5 fixed
    assert page.locator("#compare tr.flipped", has_text="fixed in B").count() == 2
    assert "2 resolved by both" in page.inner_text("ul.counts")


def test_training_curves_refresh_while_the_run_goes_on(page, view_server, runs_dir, metrics_row):
    page.goto(view_server + "/training")
    page.get_by_role("link", name="train/grpo/metrics.jsonl").click()
    assert page.inner_text("#steps").startswith("5 steps logged")
    captions = page.locator("figcaption").all_inner_texts()
    for title in ("reward", "resolve rate", "filtered share", "tokens", "seconds per step: rollout vs update", "loss"):
        assert title in captions
    assert "update_seconds" in page.inner_text("#curves")  # rollout vs update on one chart
    with open(runs_dir[1]["metrics"], "a") as f:  # the run goes on: a step, then half of the next
        f.write(json.dumps(metrics_row(6)) + "\n" + '{"step": 7, "loss"')
    page.wait_for_function("document.getElementById('steps').textContent.startsWith('6 steps')", timeout=15000)
    assert "line 7: incomplete" in page.inner_text("#curves")


def test_bad_files_and_paths_show_errors_not_crashes(page, view_server, runs_dir):
    page.goto(view_server + "/eval?path=textkit/broken.run1.json")
    assert "could not be read" in page.inner_text(".error")
    r = page.goto(view_server + "/dataset?path=../../etc/passwd")
    assert r.status == 404 and "outside the runs directory" in page.inner_text(".error")
    r = page.goto(f"{view_server}/instance?path={quote(DATA)}&id=textkit.nope")
    assert r.status == 404 and "no instance 'textkit.nope'" in page.inner_text(".error")
    r = page.goto(f"{view_server}/trajectory?path=textkit/trajectories.model-a.jsonl&line=99")
    assert r.status == 404
    assert page.goto(view_server + "/healthz").ok  # the server is still up


def test_nothing_is_written_to_the_runs_directory(runs_dir, view_server, page):
    root = runs_dir[0]
    before = listing(root)
    for path in ("/", f"/dataset?path={quote(DATA)}", "/evals", "/training?path=train/grpo/metrics.jsonl"):
        page.goto(view_server + path)
    assert listing(root) == before


def test_command_line_refuses_a_missing_directory(tmp_path):
    r = subprocess.run(
        [sys.executable, "-m", "bugforge.cli", "view", str(tmp_path / "nope")], capture_output=True, text=True
    )
    assert r.returncode == 1 and r.stderr.startswith("error:") and "is not a directory" in r.stderr
