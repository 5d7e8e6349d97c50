"""The viewer's JSONL offset index (bugforge/view/jsonl.py): rows read back by offset, bad lines named,
a torn last line left out until finished, a grown file indexed from where it stopped, a replaced
one from the start."""

from __future__ import annotations

import json
import os

from bugforge.view.jsonl import JsonlIndex


def test_index_grows_names_bad_lines_and_rebuilds_on_replace(tmp_path):
    p = tmp_path / "rows.jsonl"
    p.write_text('{"a": 1}\nnot json\n[1, 2]\n\n{"a": 2}\n{"a": 3')
    idx = JsonlIndex(p, lambda d: d["a"])
    idx.refresh()
    assert [r.summary for r in idx.rows] == [1, 2]
    assert [r.line for r in idx.rows] == [1, 5]
    assert [n for n, _ in idx.errors] == [2, 3] and idx.torn == 6
    assert idx.read(idx.rows[1]) == {"a": 2}
    end, version = idx.end, idx.version
    with open(p, "a") as f:  # the writer finishes its line and adds one with a field missing
        f.write('}\n{"b": 4}\n')
    idx.refresh()
    assert [r.summary for r in idx.rows] == [1, 2, 3] and idx.torn is None
    assert idx.errors[-1][0] == 7 and "KeyError" in idx.errors[-1][1]
    assert idx.end > end and idx.version == version + 1
    assert any("line 2: not valid JSON" in line for line in idx.problems())
    p.write_text(json.dumps({"a": 9}) + "\n")  # replaced by a shorter file
    os.utime(p, (1, 1))
    idx.refresh()
    assert [r.summary for r in idx.rows] == [9] and idx.errors == [] and idx.lines == 1
    tmp = tmp_path / "rows.tmp"  # rewritten atomically and longer (as `factory export` upgrades rows)
    tmp.write_text("".join(json.dumps({"a": 10 + k, "pad": "x" * 50}) + "\n" for k in range(3)))
    tmp.replace(p)
    idx.refresh()
    assert [r.summary for r in idx.rows] == [10, 11, 12] and idx.errors == []
