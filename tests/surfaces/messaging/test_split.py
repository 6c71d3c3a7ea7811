"""Splitting long answers at sensible boundaries within a platform's limit."""

from __future__ import annotations

from hermes.surfaces.messaging.split import split_text, utf16_length


def test_short_text_is_one_part() -> None:
    assert split_text("hello", 100) == ["hello"]


def test_paragraphs_are_kept_whole_when_they_fit() -> None:
    paragraphs = [f"Paragraph {i} " + "x" * 40 for i in range(6)]
    parts = split_text("\n\n".join(paragraphs), 120)
    assert all(len(p) <= 120 for p in parts)
    assert all(any(par == line for line in part.split("\n\n")) for part in parts for par in [part.split("\n\n")[0]])
    assert sum(p.count("Paragraph") for p in parts) == 6
    assert not any(p.startswith("x") for p in parts)  # never cut inside a paragraph that fits


def test_a_sentence_or_a_space_is_preferred_over_a_cut_word() -> None:
    text = "One sentence here. " * 20
    parts = split_text(text, 100)
    assert all(len(p) <= 100 for p in parts)
    assert all(p.rstrip().endswith(".") for p in parts)


def test_an_unbroken_run_is_cut_hard() -> None:
    parts = split_text("x" * 250, 100)
    assert [len(p) for p in parts] == [100, 100, 50]


def test_a_cut_code_fence_is_closed_and_reopened() -> None:
    code = "```python\n" + "\n".join(f"print({i})" for i in range(60)) + "\n```"
    parts = split_text(code, 200)
    assert len(parts) > 1 and all(len(p) <= 200 for p in parts)
    assert all(p.count("```") % 2 == 0 for p in parts)
    assert all(p.startswith("```python") for p in parts)


def test_utf16_units_are_what_telegram_counts() -> None:
    text = "😀" * 3000  # 2 UTF-16 units each
    parts = split_text(text, 4096, utf16_length)
    assert all(utf16_length(p) <= 4096 for p in parts)
    assert "".join(parts) == text
