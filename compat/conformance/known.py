"""Differences between Kafka's answers and ours that are explained: kept on purpose, or open bugs.

Each entry matches differences by shell-style patterns over "case :: step :: path" (see
compare.Difference.where) and says why. KEPT: a Kafka behaviour we deliberately do not copy (also
listed in README). OPEN: a conformance bug we know of and have not fixed yet; it is reported as
such, never as conformance. A difference that matches nothing here is unexplained and fails the run.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass

KEPT, OPEN = "kept", "open"


@dataclass(frozen=True)
class Known:
    pattern: str
    kind: str
    reason: str

    def matches(self, where: str) -> bool:
        return fnmatch.fnmatchcase(where, self.pattern)


KNOWN: tuple[Known, ...] = (
)


def explain(where: str) -> Known | None:
    for known in KNOWN:
        if known.matches(where):
            return known
    return None
