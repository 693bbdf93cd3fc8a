"""The compatibility matrix: client x feature, each cell pass / fail / not-run, and its renderings.

Client rows come from the client programs' FEATURES-JSON lines (compat/clients.py). The row of
librdkafka's own test suite is derived from what its tests sent the broker: a test that sent
JoinGroup exercised consumer groups, one that sent EndTxn transactions, and so on (API_FEATURES).
A test that ran counts for every feature it exercised; a test that failed counts as a failure of
the most specific feature it reached (a group test that failed fails "groups", not "metadata",
although it also sent Metadata requests).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from . import librdkafka_suite as suite
from .clients import FAIL, NOT_RUN, PASS, ClientRow

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
# Same names, same order as tests/clients/acceptance.py FEATURES.
FEATURES = ("metadata", *(f"produce:{codec}" for codec in CODECS), "fetch", "list-offsets", "admin",
            "groups", "idempotence", "transactions", "sasl")
# Most specific first: where a failed librdkafka test is counted.
SPECIFICITY = ("sasl", "transactions", "groups", "idempotence", "admin", "list-offsets", "fetch",
               *(f"produce:{codec}" for codec in reversed(CODECS)), "metadata")

API_FEATURES = {
    "Metadata": "metadata",
    "Fetch": "fetch",
    "ListOffsets": "list-offsets", "OffsetForLeaderEpoch": "fetch",
    "CreateTopics": "admin", "DeleteTopics": "admin", "CreatePartitions": "admin", "DeleteRecords": "admin",
    "DescribeConfigs": "admin", "AlterConfigs": "admin", "IncrementalAlterConfigs": "admin",
    "DescribeCluster": "admin", "DescribeAcls": "admin", "CreateAcls": "admin", "DeleteAcls": "admin",
    "FindCoordinator": "groups", "JoinGroup": "groups", "SyncGroup": "groups", "Heartbeat": "groups",
    "LeaveGroup": "groups", "OffsetCommit": "groups", "OffsetFetch": "groups", "ListGroups": "groups",
    "DescribeGroups": "groups", "DeleteGroups": "groups", "OffsetDelete": "groups",
    "InitProducerId": "idempotence",
    "AddPartitionsToTxn": "transactions", "AddOffsetsToTxn": "transactions", "EndTxn": "transactions",
    "TxnOffsetCommit": "transactions",
    "SaslHandshake": "sasl", "SaslAuthenticate": "sasl",
}
# Tests whose Produce requests carry compressed batches (the debug log does not say the codec).
CODEC_TESTS = {"0017_compression": CODECS}

SUITE_ROW = "librdkafka test suite"


@dataclass(frozen=True)
class Cell:
    verdict: str  # pass / fail / not-run
    note: str = ""  # e.g. "12/14" for the suite row

    def render(self) -> str:
        return f"{self.verdict} ({self.note})" if self.note else self.verdict


@dataclass
class Matrix:
    rows: list[tuple[str, dict[str, Cell], str]]  # (client, feature -> cell, overall)

    def render_text(self) -> str:
        header = ["client", *FEATURES, "overall"]
        table = [header] + [[client, *(cells[f].render() for f in FEATURES), overall]
                            for client, cells, overall in self.rows]
        widths = [max(len(row[i]) for row in table) for i in range(len(header))]
        lines = ["  ".join(value.ljust(width) for value, width in zip(row, widths)).rstrip() for row in table]
        lines.insert(1, "  ".join("-" * width for width in widths))
        return "\n".join(lines)

    def render_markdown(self) -> str:
        header = ["client", *FEATURES, "overall"]
        lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
        for client, cells, overall in self.rows:
            lines.append("| " + " | ".join([client, *(_mark(cells[f]) for f in FEATURES), _mark(Cell(overall))]) + " |")
        return "\n".join(lines)


def _mark(cell: Cell) -> str:
    symbol = {PASS: "pass", FAIL: "**FAIL**", NOT_RUN: "-"}.get(cell.verdict, cell.verdict)
    return f"{symbol} ({cell.note})" if cell.note else symbol


def client_cells(row: ClientRow) -> tuple[dict[str, Cell], str]:
    cells = {f: Cell(row.features.get(f, NOT_RUN)) for f in FEATURES}
    overall = NOT_RUN if row.passed is None else (PASS if row.passed else FAIL)
    return cells, overall


def features_of(result: suite.TestResult) -> set[str]:
    """The matrix features a librdkafka test exercised, from the requests it sent."""
    found = set()
    apis = {key.split()[0] for key in result.requests}
    for api in apis:
        if api == "Produce":
            found.update(f"produce:{codec}" for codec in CODEC_TESTS.get(result.test.name, ("none",)))
        elif api in API_FEATURES:
            found.add(API_FEATURES[api])
    return found


def suite_cells(results: Iterable[suite.TestResult]) -> tuple[dict[str, Cell], str]:
    ran = {f: 0 for f in FEATURES}
    failed = {f: 0 for f in FEATURES}
    any_failed = False
    any_ran = False
    for result in results:
        features = features_of(result)
        if result.outcome == suite.RAN:
            any_ran = True
            for feature in features:
                ran[feature] += 1
        elif result.outcome == suite.FAILED:
            any_failed = True
            most_specific = next((f for f in SPECIFICITY if f in features), None)
            if most_specific:
                failed[most_specific] += 1
    cells = {}
    for feature in FEATURES:
        total = ran[feature] + failed[feature]
        if not total:
            cells[feature] = Cell(NOT_RUN)
        else:
            cells[feature] = Cell(FAIL if failed[feature] else PASS, f"{ran[feature]}/{total}")
    overall = NOT_RUN if not (any_ran or any_failed) else (FAIL if any_failed else PASS)
    return cells, overall


def build_matrix(client_rows: Iterable[ClientRow], suite_results: list[suite.TestResult] | None) -> Matrix:
    rows = [(row.client, *client_cells(row)) for row in client_rows]
    if suite_results is not None:
        rows.append((SUITE_ROW, *suite_cells(suite_results)))
    return Matrix(rows)
