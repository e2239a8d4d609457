"""Image tags are one digest (runner.base_image.context_digest), pinned: a change renames every
agent image and sets every journal's trials aside, so it must be deliberate."""

from __future__ import annotations

from pathlib import Path

from evalnoise.models.agent_images import _files
from evalnoise.pipeline.settings import agent_image_tag
from evalnoise.runner.base_image import context_digest


def _context(root: Path) -> Path:
    (root / "sub").mkdir(parents=True)
    (root / "Dockerfile").write_text("FROM x\n")
    (root / "sub" / "a.py").write_text("print(1)\n")
    return root


def test_build_agent_tag_is_pinned(tmp_path):
    # the value the digest had before the image modules shared it (pipeline.settings)
    assert agent_image_tag("Tiny", _context(tmp_path), "evalnoise-base:abc") == (
        "evalnoise-agent-tiny:2a8dcd4272bc"
    )


def test_program_agent_digest_is_pinned(tmp_path):
    # the value it had in models.agent_images before (prefix = the base image's tag)
    root = _context(tmp_path)
    assert context_digest(root, _files(root), prefix="evalnoise-base:abc") == "d41918490de0"


def test_digest_changes_with_any_input(tmp_path):
    root = _context(tmp_path)
    files = _files(root)
    before = context_digest(root, files, prefix="p")
    assert context_digest(root, list(reversed(files)), prefix="p") == before  # order-free
    assert context_digest(root, files, prefix="q") != before
    (root / "sub" / "a.py").write_text("print(2)\n")
    assert context_digest(root, files, prefix="p") != before
    (root / "sub" / "a.py").rename(root / "sub" / "b.py")
    assert context_digest(root, _files(root), prefix="p") != before
