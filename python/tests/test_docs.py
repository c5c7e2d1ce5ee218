"""Every ```python block of README.md and docs/python.md runs, in file order,
in a fresh namespace and a temporary directory. A block preceded by the line
``<!-- docs-test: skip: REASON -->`` is not run (the marker the Go docs test
reads for shell blocks)."""

import os
import re

import pytest

from conftest import REPO

DOCS = ("README.md", os.path.join("docs", "python.md"))
SKIP = re.compile(r"^<!-- docs-test: skip: .+ -->$")


def blocks(rel):
    lines = open(os.path.join(REPO, rel), encoding="utf-8").read().split("\n")
    out = []
    i = 0
    while i < len(lines):
        fence = lines[i].strip()
        if fence.startswith("```"):
            lang, start = fence[3:].strip(), i + 1
            skip = i > 0 and SKIP.match(lines[i - 1].strip()) is not None
            i += 1
            while i < len(lines) and not lines[i].strip().startswith("```"):
                i += 1
            if lang == "python":
                out.append((f"{rel}:{start}", "\n".join(lines[start:i]) + "\n", skip))
        i += 1
    return out


ALL = [b for rel in DOCS for b in blocks(rel)]


def test_the_docs_have_python_examples():
    ran = [b for b in ALL if not b[2]]
    assert len([b for b in ran if b[0].startswith("docs")]) >= 6, ran
    assert any(b[0].startswith("README") for b in ran)


@pytest.mark.parametrize("where,body,skip", ALL, ids=[b[0] for b in ALL])
def test_python_block_runs(where, body, skip, tmp_path, monkeypatch, capsys):
    if skip:
        pytest.skip("marked docs-test: skip")
    monkeypatch.chdir(tmp_path)
    exec(compile(body, where, "exec"), {"__name__": "__docs__"})
    assert capsys.readouterr().out.strip(), f"{where} printed nothing"
