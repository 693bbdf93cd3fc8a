"""Allowlists of third-party suites' tests that passed against kafka-wire (librdkafka's, franz-go's):
one test name a line, `#` starts a comment; a list only grows."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

RAN = "ran"  # the outcome of a test that did broker work and passed, in both suites' results


def read_allowlist(path: Path) -> list[str]:
    """Test names, one a line; `#` starts a comment."""
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        return []
    return [line.split("#", 1)[0].strip() for line in lines if line.split("#", 1)[0].strip()]


def grow_allowlist(results: Iterable, path: Path, header: str) -> list[str]:
    """Adds every result (`.key`, `.outcome`) that ran and passed, never removes one; `header` starts a
    new file. Returns the added names."""
    present = set(read_allowlist(path))
    added = sorted({r.key for r in results if r.outcome == RAN and r.key not in present})
    if added:
        start = "" if path.exists() else header
        with open(path, "a") as out:
            out.write(start + "".join(f"{name}\n" for name in added))
    return added
