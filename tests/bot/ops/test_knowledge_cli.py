"""`support-bot knowledge sync | search | eval` on a real SQLite file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot import cli
from bot.knowledge import SAMPLE_DIR


@pytest.fixture
def database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    file = tmp_path / "kb.db"
    monkeypatch.setenv("DATABASE_URL", f"sqlite+aiosqlite:///{file}")
    monkeypatch.delenv("KNOWLEDGE_DIR", raising=False)
    return file


def test_knowledge_sync_then_search_the_shipped_sample(
    database: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["knowledge", "sync"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"{SAMPLE_DIR}: 4 added, 0 updated, 0 removed, 0 unchanged"
    assert "  added: policies/refund-policy" in out
    assert cli.main(["knowledge", "sync"]) == 0
    assert capsys.readouterr().out.endswith("0 added, 0 updated, 0 removed, 4 unchanged\n")

    query = "The desktop app crashes with error 0x80070005"
    assert cli.main(["knowledge", "search", query, "--collection", "tech", "--limit", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("1. tech/troubleshooting#error-0x80070005-access-denied-on-windows")
    assert lines[1:3] == [
        "   Troubleshooting guide (sample) › Error 0x80070005 (access denied) on Windows",
        "   https://help.example.com/troubleshooting",
    ]
    assert len(lines) == 4


def test_knowledge_sync_names_a_bad_file(
    database: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "kb"
    folder.mkdir()
    (folder / "empty.md").write_text("   \n")
    assert cli.main(["knowledge", "sync", "--dir", str(folder)]) == 1
    assert (
        capsys.readouterr().out
        == f"knowledge sync failed: {folder / 'empty.md'}: the document is empty\n"
    )


def test_knowledge_eval_prints_figures_per_half(
    database: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "plates.md").write_text("# Plates\n\n## How can I get new plates?\n\nApply online.\n")
    (docs / "loans.md").write_text("# Loans\n\n## Consolidation\n\nCombine federal loans.\n")
    rows = [
        {"id": "q1", "question": "How do I get new plates?", "doc_id": "plates",
         "section": "How can I get new plates?", "answerable": True},
        {"id": "q2", "question": "Can I consolidate my federal loans?", "doc_id": "loans",
         "section": "Consolidation", "answerable": True},
        {"id": "q3", "question": "Who won?", "doc_id": None, "section": None, "answerable": False},
    ]  # fmt: skip
    data = tmp_path / "questions.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    # The bot's own index holds the team's documents, and the evaluation leaves it alone.
    assert cli.main(["knowledge", "sync"]) == 0
    capsys.readouterr()
    assert cli.main(["knowledge", "eval", "--docs", str(docs), "--data", str(data)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith("2 added, 0 updated, 0 removed, 0 unchanged")
    assert cli.main(["knowledge", "sync"]) == 0
    assert capsys.readouterr().out.endswith("0 added, 0 updated, 0 removed, 4 unchanged\n")
    assert "[overall] questions: 2" in out
    assert "[overall] document hit@1: 1.000" in out
    assert "[overall] section hit@5: 1.000" in out
    halves = [line for line in out if line.split("]")[0] in ("[look", "[measure")]
    assert sum(int(line.split(": ")[1]) for line in halves if "questions:" in line) == 2
