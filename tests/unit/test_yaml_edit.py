"""Setting keys in an adapter entry by editing lines: comments, quoting and layout stay as written; what a
line edit cannot do safely is refused with nothing written."""

from __future__ import annotations

import pytest

from server.config.yaml_edit import EditRefused, set_keys

ENTRY = ("adapters", 1)
TEXT = """\
# Demo adapters.
adapters:
  - name: hr
    type: sql
    confidence_threshold: 0.45   # the child's own
    templates: ["templates/hr/*.yaml"]

  - name: company
    type: composite
    # 0.2: the comment above the threshold
    child_adapters: [hr]
    confidence_threshold: 0.2     # trailing note
    intent_model: {enabled: true}
"""


def test_a_value_is_replaced_and_everything_else_kept(tmp_path):
    path = tmp_path / "demo.yaml"
    path.write_text(TEXT)
    written = set_keys(path, "config/adapters/demo.yaml", ENTRY, {"confidence_threshold": 0.162})
    assert path.read_text() == TEXT.replace("confidence_threshold: 0.2     #", "confidence_threshold: 0.162     #")
    assert written.backup.read_text() == TEXT and written.backup.name == "demo.yaml.bak"
    assert written.lines == {"confidence_threshold": 12}


def test_a_missing_key_is_added_beside_a_sibling(tmp_path):
    path = tmp_path / "demo.yaml"
    path.write_text(TEXT)
    set_keys(path, "demo.yaml", ENTRY, {"confidence_threshold": 0.3, "ambiguity_margin": 0.02})
    lines = path.read_text().splitlines()
    assert lines[11:14] == [
        "    confidence_threshold: 0.3     # trailing note",
        "    ambiguity_margin: 0.02",
        "    intent_model: {enabled: true}",
    ]
    # no threshold written at all: the new key goes under `name`, at the entry's indentation
    bare = tmp_path / "bare.yaml"
    bare.write_text("adapters:\n  - name: company\n    type: composite\n    child_adapters: [hr]\n")
    set_keys(bare, "bare.yaml", ("adapters", 0), {"confidence_threshold": 0.25})
    assert bare.read_text() == (
        "adapters:\n  - name: company\n    confidence_threshold: 0.25\n    type: composite\n    child_adapters: [hr]\n"
    )


def test_windows_line_ends_stay(tmp_path):
    path = tmp_path / "demo.yaml"
    path.write_bytes(TEXT.replace("\n", "\r\n").encode())
    set_keys(path, "demo.yaml", ENTRY, {"confidence_threshold": 0.5, "ambiguity_margin": 0.01})
    raw = path.read_bytes()
    assert b"confidence_threshold: 0.5     # trailing note\r\n    ambiguity_margin: 0.01\r\n" in raw
    assert raw.count(b"\n") == raw.count(b"\r\n")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("adapters:\n  - {name: company, type: composite, confidence_threshold: 0.2}\n", "set it by hand"),
        ("adapters:\n  - name: company\n    confidence_threshold: ${THRESHOLD:-0.2}\n", "environment variable"),
        ("adapters:\n  - name: company\n    confidence_threshold:\n      0.2\n", "on a line of its own"),
    ],
)
def test_what_a_line_edit_cannot_do_is_refused_and_nothing_written(tmp_path, text, reason):
    path = tmp_path / "demo.yaml"
    path.write_text(text)
    with pytest.raises(EditRefused, match=reason):
        set_keys(path, "demo.yaml", ("adapters", 0), {"confidence_threshold": 0.3})
    assert path.read_text() == text and not (tmp_path / "demo.yaml.bak").exists()


def test_a_key_of_a_nested_block_mapping(tmp_path):
    """`fit-thresholds --write` with acceptance on sets `acceptance.threshold` inside the composite's entry."""
    path = tmp_path / "demo.yaml"
    path.write_text("adapters:\n  - name: company\n    acceptance:\n      enabled: true   # on\n    verbose: false\n")
    set_keys(path, "demo.yaml", ("adapters", 0, "acceptance"), {"threshold": 0.41})
    assert path.read_text() == (
        "adapters:\n  - name: company\n    acceptance:\n      enabled: true   # on\n      threshold: 0.41\n"
        "    verbose: false\n"
    )
