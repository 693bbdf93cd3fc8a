"""compat/CONFORMANCE.md (and .json beside it): per API key the cases, identical and differing, and
each difference with both answers; the errors the issue asks to see provoked; the normalisation table."""

from __future__ import annotations

import datetime
import json
import subprocess
from pathlib import Path

from .known import KNOWN
from .normalize import NORMALISED

# The errors the suite must provoke somewhere (in Kafka's answer or ours), by Kafka's names.
REQUIRED_ERRORS = (
    "UNKNOWN_TOPIC_OR_PARTITION", "INVALID_PARTITIONS", "INVALID_REPLICATION_FACTOR", "INVALID_CONFIG",
    "INVALID_TOPIC_EXCEPTION", "POLICY_VIOLATION", "OFFSET_OUT_OF_RANGE", "NOT_LEADER_OR_FOLLOWER",
    "COORDINATOR_NOT_AVAILABLE", "COORDINATOR_LOAD_IN_PROGRESS", "UNKNOWN_MEMBER_ID", "ILLEGAL_GENERATION",
    "REBALANCE_IN_PROGRESS", "FENCED_INSTANCE_ID", "INCONSISTENT_GROUP_PROTOCOL", "INVALID_SESSION_TIMEOUT",
    "GROUP_MAX_SIZE_REACHED", "STALE_MEMBER_EPOCH", "FENCED_MEMBER_EPOCH", "UNSUPPORTED_ASSIGNOR",
    "INVALID_TXN_STATE", "PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH", "CONCURRENT_TRANSACTIONS",
    "OUT_OF_ORDER_SEQUENCE_NUMBER", "DUPLICATE_SEQUENCE_NUMBER", "TRANSACTIONAL_ID_NOT_FOUND",
    "TOPIC_AUTHORIZATION_FAILED", "GROUP_AUTHORIZATION_FAILED", "CLUSTER_AUTHORIZATION_FAILED",
    "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", "SASL_AUTHENTICATION_FAILED", "UNSUPPORTED_SASL_MECHANISM",
    "UNSUPPORTED_VERSION",
)


# Required errors no deterministic scenario can provoke, and why (the report shows the reason).
NOT_DETERMINISTIC = {
    "DUPLICATE_SEQUENCE_NUMBER": "Kafka 4.3 answers a duplicate of one of a producer's last five batches with NONE "
                                 "and the original offset, an older one with OUT_OF_ORDER_SEQUENCE_NUMBER "
                                 "(scenarios/idempotence.py plays both); it never sends this code",
    "COORDINATOR_LOAD_IN_PROGRESS": "only while a coordinator loads its partition, a window of milliseconds after "
                                    "the internal topic appears; kafka-wire replays its internal topics before it "
                                    "listens, so a client meets it only after a coordinator moves (cluster mode)",
}


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=Path(__file__).parent).stdout.strip() or "?"
    except OSError:
        return "?"


def _errors_seen(steps: list[dict]) -> set[str]:
    from kafka_wire.errors import ErrorCode

    from .scenario import error_codes_in

    seen = set()
    for step in steps:
        for code in error_codes_in(step["answer"]):
            if code:
                try:
                    seen.add(ErrorCode.from_code(code).name)
                except ValueError:
                    seen.add(f"code {code}")
    return seen


def summarise(version: str, results, our_versions, kafka_versions, seconds: float, quick: bool, subset: bool,
              not_comparable: list[str] = ()) -> dict:
    from kafka_wire.messages import APIS

    per_api: dict[str, dict] = {}
    for key, api in APIS.items():
        if key in our_versions:
            low, high = our_versions[key]
            k = kafka_versions.get(key)
            per_api[api.name] = {"key": key, "ours": f"{low}-{high}", "kafka": f"{k[0]}-{k[1]}" if k else "not served",
                                 "versions_covered": set(), "cases": 0, "identical": 0, "kept": 0, "open": 0,
                                 "unexplained": 0, "once": 0}
    errors: dict[str, dict[str, list[str]]] = {}
    for result in results:
        entry = per_api.setdefault(result.api, {"key": None, "ours": "not served", "kafka": "?",
                                                "versions_covered": set(), "cases": 0, "identical": 0, "kept": 0,
                                                "open": 0, "unexplained": 0, "once": 0})
        entry["cases"] += 1
        entry[result.status] += 1
        if result.version is not None:
            entry["versions_covered"].add(result.version)
        else:
            entry["once"] += 1
        # An API is also covered at each version any case's recorded request used.
        for step in result.our_steps:
            if step.get("api") and step.get("version") is not None and step["api"] in per_api:
                per_api[step["api"]]["versions_covered"].add(step["version"])
        for side, steps in (("kafka", result.kafka_steps), ("ours", result.our_steps)):
            for name in _errors_seen(steps):
                errors.setdefault(name, {"kafka": [], "ours": []})[side].append(result.case)
    counts = {status: sum(1 for r in results if r.status == status)
              for status in ("identical", "kept", "open", "unexplained")}
    for entry in per_api.values():
        entry["versions_covered"] = sorted(entry["versions_covered"])
    return {
        "version": version, "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": _commit(), "form": "quick (CI)" if quick else "full", "subset": subset,
        "seconds": round(seconds, 1), "cases": len(results), **counts, "apis": per_api, "errors": errors,
        "not_comparable": sorted(not_comparable),
        "differences": [{"case": r.case, "api": r.api, "status": r.status, "kafka_failure": r.kafka_failure,
                         "our_failure": r.our_failure, "differences": r.differences} for r in results if r.differences],
    }


def write_report(path: Path, version: str, results, our_versions, kafka_versions, seconds: float,
                 quick: bool = False, subset: bool = False, not_comparable: list[str] = ()) -> dict:
    summary = summarise(version, results, our_versions, kafka_versions, seconds, quick, subset, not_comparable)
    json_path = path.with_suffix(".json")
    json_path.parent.mkdir(parents=True, exist_ok=True)  # --results may name a folder not made yet
    try:
        everything = json.loads(json_path.read_text())
    except (OSError, ValueError):
        everything = {}
    everything[version] = summary
    json_path.write_text(json.dumps(everything, indent=1, sort_keys=True, default=str) + "\n")
    path.write_text(render(everything))
    return summary


def _cell(value, limit: int = 300) -> str:
    text = json.dumps(value, default=str, sort_keys=True)
    if len(text) > limit:
        text = text[:limit] + "…"
    return "`" + text.replace("|", "\\|").replace("`", "'") + "`"


def _versions(covered: list[int], once: int) -> str:
    parts = []
    if covered:
        runs, start, prev = [], covered[0], covered[0]
        for v in covered[1:] + [None]:
            if v is not None and v == prev + 1:
                prev = v
                continue
            runs.append(f"{start}" if start == prev else f"{start}-{prev}")
            if v is not None:
                start = prev = v
        parts.append(",".join(runs))
    if once:
        parts.append(f"+{once} chosen in-scenario")
    return " ".join(parts) or "—"


def render(everything: dict) -> str:
    lines = ["# Conformance: kafka-wire beside Apache Kafka", "",
             "Written by `kafka-wire compat --against-kafka VERSION` (compat/conformance/). Each scenario sends the "
             "same requests, through our wire client, to the real Apache Kafka (KRaft single node, from Maven "
             "Central) and to kafka-wire; both answers are decoded with kafka_wire, the fields that legitimately "
             "differ are normalised (table at the end, each with its reason), and the rest is compared field by "
             "field. A difference is *kept* (a Kafka behaviour we deliberately do not copy), *open* (a known "
             "conformance bug not yet fixed) or *unexplained* (fails the run).", ""]
    for version in sorted(everything, reverse=True):
        s = everything[version]
        lines += [f"## Against Apache Kafka {version}", "",
                  f"{s['date']}, kafka-wire commit {s['commit']}, {s['form']} run"
                  f"{' (a subset of scenarios)' if s.get('subset') else ''}, {s['seconds']} s: "
                  f"**{s['cases']} cases: {s['identical']} identical, {s['kept']} kept, {s['open']} open, "
                  f"{s['unexplained']} unexplained.**", "",
                  "| key | API | kafka-wire | Kafka | versions played (any case) | cases of its own | identical | kept | open | unexplained |",
                  "| ---: | --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: |"]
        for name, a in sorted(s["apis"].items(), key=lambda item: (item[1]["key"] is None, item[1]["key"] or 0)):
            lines.append(f"| {a['key'] if a['key'] is not None else ''} | {name} | {a['ours']} | {a['kafka']} | "
                         f"{_versions(a['versions_covered'], a['once'])} | {a['cases']} | {a['identical']} | "
                         f"{a['kept']} | {a['open']} | {a['unexplained']} |")
        lines += ["", "### Errors provoked", "",
                  "The errors Kafka documents for these APIs that the suite must provoke, and the cases whose answers "
                  "carried them (on Kafka / on kafka-wire).", "",
                  "| error | on Kafka | on kafka-wire |", "| --- | --- | --- |"]
        errors = s["errors"]
        for name in REQUIRED_ERRORS:
            seen = errors.get(name, {"kafka": [], "ours": []})
            why = f" ({NOT_DETERMINISTIC[name]})" if name in NOT_DETERMINISTIC and not seen["kafka"] else ""
            lines.append(f"| {name}{why} | {_names(seen['kafka'])} | {_names(seen['ours'])} |")
        others = sorted(set(errors) - set(REQUIRED_ERRORS))
        if others:
            lines += ["", "Other errors seen: " + ", ".join(others) + "."]
        if s.get("not_comparable"):
            lines += ["", f"Not played: {len(s['not_comparable'])} cases at API versions kafka-wire serves and Apache "
                      f"Kafka {version} does not (see the ranges above): " + ", ".join(s["not_comparable"][:40])
                      + (" …" if len(s["not_comparable"]) > 40 else "") + "."]
        lines += ["", "### Differences", ""]
        if not s["differences"]:
            lines.append("None.")
        for entry in s["differences"]:
            lines.append(f"- **{entry['case']}** ({entry['api']}, {entry['status']})")
            for d in entry["differences"]:
                reason = f" — {d['kind']}: {d['reason']}" if d["reason"] else f" — {d['kind']}"
                lines.append(f"  - `{d['where'].split(' :: ', 1)[1]}`{reason}<br>Kafka: {_cell(d['kafka'])}<br>"
                             f"kafka-wire: {_cell(d['ours'])}")
        lines.append("")
    lines += ["## Normalised fields", "", "| field | how | only in | why |", "| --- | --- | --- | --- |"]
    for rule in NORMALISED:
        lines.append(f"| `{rule.field}` | {rule.mode} | {', '.join(rule.apis) or 'every API'}{' but ' + ', '.join(rule.not_apis) if rule.not_apis else ''} | {rule.reason} |")
    lines += ["", "## Explained differences (compat/conformance/known.py)", ""]
    if not KNOWN:
        lines.append("None.")
    else:
        lines += ["| pattern | kind | reason |", "| --- | --- | --- |"]
        for known in KNOWN:
            lines.append(f"| `{known.pattern}` | {known.kind} | {known.reason} |")
    return "\n".join(lines) + "\n"


def _names(cases: list[str], limit: int = 3) -> str:
    if not cases:
        return "—"
    shown = ", ".join(sorted(set(cases))[:limit])
    more = len(set(cases)) - limit
    return shown + (f" (+{more})" if more > 0 else "")
