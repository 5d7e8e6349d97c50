"""Predictions files in every form the SWE-bench harness accepts, and one clear error for each kind of
bad file (sandbox.predictions; `bugforge eval --predictions`)."""

from __future__ import annotations

import json

import pytest

from bugforge.errors import BugforgeError
from bugforge.records import Prediction
from bugforge.sandbox.predictions import parse_predictions, read_predictions

A = {"instance_id": "calc.op.a", "model_name_or_path": "m/1", "model_patch": "diff --git a/x b/x\n"}
B = {"instance_id": "calc.op.b", "model_name_or_path": "m/1", "model_patch": ""}
WANT = [Prediction("calc.op.a", A["model_patch"], "m/1"), Prediction("calc.op.b", "", "m/1")]


@pytest.mark.parametrize(
    "text",
    [
        json.dumps(A) + "\n" + json.dumps(B) + "\n",  # JSONL
        json.dumps(A) + "\n\n" + json.dumps(B),  # JSONL, a blank line, no final newline
        json.dumps([A, B]),  # a JSON list on one line
        json.dumps([A, B], indent=2),  # a JSON list over many lines
        json.dumps({A["instance_id"]: A, B["instance_id"]: B}, indent=2),  # mini-swe-agent's preds.json
        json.dumps({A["instance_id"]: A, B["instance_id"]: B}),  # the same on one line
    ],
    ids=["jsonl", "jsonl-blank-line", "list", "list-indented", "keyed", "keyed-one-line"],
)
def test_every_form_the_harness_accepts(text):
    assert parse_predictions(text, "p.json") == WANT
    assert parse_predictions(text, "p.jsonl") == WANT  # the content decides, not the name


def test_keyed_values_take_their_key_and_null_patch_is_empty():
    text = json.dumps(
        {"calc.op.a": {"model_patch": None}, "calc.op.b": {"model_patch": "x", "model_name_or_path": "m"}}
    )
    assert parse_predictions(text) == [Prediction("calc.op.a", "", "model"), Prediction("calc.op.b", "x", "m")]


def test_a_single_prediction_object_is_a_one_line_jsonl():
    assert parse_predictions(json.dumps(A)) == WANT[:1]


def test_gold_reads_each_rows_patch(tmp_path):
    rows = [{"instance_id": "i1", "patch": "P1"}, {"instance_id": "i2", "patch": "P2"}]
    assert read_predictions("gold", rows) == [Prediction("i1", "P1", "gold"), Prediction("i2", "P2", "gold")]
    with pytest.raises(BugforgeError, match="need the dataset"):
        read_predictions("gold")


def test_a_file_is_read_from_disk(tmp_path):
    f = tmp_path / "preds.json"
    f.write_text(json.dumps({A["instance_id"]: A, B["instance_id"]: B}))
    assert read_predictions(f) == WANT
    with pytest.raises(BugforgeError, match="does not exist"):
        read_predictions(tmp_path / "missing.jsonl")


BAD = {
    "empty": ("", "the predictions file is empty"),
    "blank": ("\n  \n", "the predictions file is empty"),
    "bad-json-line": (json.dumps(A) + "\n{oops\n", r"line 2: not valid JSON"),
    "torn-last-line": (json.dumps(A) + "\n" + json.dumps(B)[:20], r"line 2: not valid JSON"),
    "bad-json-document": ('{\n  "calc.op.a": {"model_patch": "x"},\n  "calc.op.b": \n}', r"line 4 column 1: not valid"),
    "bad-json-list": ('[\n {"instance_id": "a", "model_patch": ""},\n', r"line 3 column 1: not valid JSON"),
    "no-instance-id": (json.dumps({"model_patch": ""}) + "\n", "line 1: no instance_id"),
    "no-instance-id-in-list": (json.dumps([A, {"model_patch": ""}]), "item 2: no instance_id"),
    "number-instance-id": (json.dumps([{"instance_id": 3, "model_patch": ""}]), "item 1: instance_id is a number"),
    "no-model-patch": (json.dumps(A) + "\n" + json.dumps({"instance_id": "calc.op.b"}), "line 2: no model_patch for"),
    "patch-not-string": (json.dumps([{"instance_id": "a", "model_patch": ["x"]}]), "model_patch of a is a list"),
    "value-not-object": (json.dumps({"calc.op.a": A, "calc.op.b": "diff"}), "key 'calc.op.b': its value is a string"),
    "value-id-mismatch": (json.dumps({"calc.op.a": B}), "key 'calc.op.a': its value's instance_id is 'calc.op.b'"),
    "duplicate-jsonl": (json.dumps(A) + "\n" + json.dumps(B) + "\n" + json.dumps(A), "line 3: calc.op.a is predicted"),
    "duplicate-list": (json.dumps([A, A]), r"item 2: calc.op.a is predicted twice \(first at item 1\)"),
    "row-not-object": (json.dumps(A) + "\n[1, 2]\n", "line 2: a list, not a prediction object"),
    "empty-list": ("[]", "holds no predictions"),
    "empty-object": ("{}", "holds no predictions"),
    "a-string": ('"gold"', "holds a string, not predictions"),
}


@pytest.mark.parametrize("text,message", BAD.values(), ids=BAD.keys())
def test_each_bad_file_gets_one_error_naming_where(text, message):
    with pytest.raises(BugforgeError, match=message) as e:
        parse_predictions(text, "preds.json")
    assert e.value.what.startswith("preds.json: ") and "\n" not in e.value.line()
    assert e.value.fix


def test_cli_bad_predictions_one_line_and_nothing_graded(cli, tmp_path):
    """A file whose first line is good and whose third is not: one error line, exit 1, no logs, no report
    (the predictions are checked before the dataset's images or any container)."""
    ds = tmp_path / "instances.jsonl"
    ds.write_text(json.dumps({"instance_id": "calc.op.a", "image": "bugforge/absent:x"}) + "\n")
    preds = tmp_path / "preds.jsonl"
    preds.write_text(json.dumps(A) + "\n" + json.dumps(B) + "\n" + '{"instance_id": "calc.op.c", "model_patch": \n')
    r = cli("eval", "--dataset", str(ds), "--predictions", str(preds), "--report-dir", str(tmp_path), cwd=tmp_path)
    assert r.returncode != 0
    lines = [line for line in (r.stdout + r.stderr).splitlines() if line.strip()]
    assert len(lines) == 1 and "line 3: not valid JSON" in lines[0] and str(preds) in lines[0], lines
    assert "Traceback" not in r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["instances.jsonl", "preds.jsonl"]


def test_a_patch_holding_a_unicode_line_separator_stays_one_prediction():
    """JSON Lines end at \\n only: a raw U+2028 or U+0085 inside a string is part of it."""
    rows = [{"instance_id": i, "model_patch": "a\u2028b\x85c", "model_name_or_path": "m"} for i in "xy"]
    text = "\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n"
    assert [p.model_patch for p in parse_predictions(text)] == ["a\u2028b\x85c"] * 2
