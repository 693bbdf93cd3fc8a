"""Kafka's own command-line tools run against kafka-wire and against Apache Kafka, outputs compared.

The same tool (its main class from Kafka's jars), with the same arguments, is run once with the
reference Kafka's bootstrap and once with kafka-wire's; both outputs go through one normaliser (the
table NORMALISED below: what legitimately differs between two brokers, each entry with its reason)
and must then be equal, exit status included.

    with ToolSession("4.3.0") as tools:
        pair = tools.compare(kafka.bootstrap, broker.bootstrap, TOPICS, "--bootstrap-server", BOOTSTRAP, "--list")
        assert pair.ours == pair.kafka, pair.diff()

ToolSession runs the tools one after another in one JVM (compat/reference/ToolSession.java: Exit's
procedures replaced and System.out captured, as Kafka's own tool tests do), so a comparison costs
no JVM start. `run_tool` (compat/reference_kafka.py) runs a tool in a process of its own, for the
tools that call System.exit or run until stopped.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path

from compat.reference_kafka import (KAFKA_4, TOOL_JVM_OPTIONS, TOOLS_LOG4J_CONFIG, REPO_ROOT, install, java,
                                    libs_dir)

SESSION_SOURCE = REPO_ROOT / "compat" / "reference" / "ToolSession.java"
BOOTSTRAP = "{bootstrap}"  # in a tool's arguments: the bootstrap of the broker it runs against

# The tools' main classes (Kafka 4.3; bin/<name>.sh runs these).
TOPICS = "org.apache.kafka.tools.TopicCommand"
CONFIGS = "kafka.admin.ConfigCommand"
CONSUMER_GROUPS = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
STREAMS_GROUPS = "org.apache.kafka.tools.streams.StreamsGroupCommand"
ACLS = "org.apache.kafka.tools.AclCommand"
TRANSACTIONS = "org.apache.kafka.tools.TransactionsCommand"
REASSIGN_PARTITIONS = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
LEADER_ELECTION = "org.apache.kafka.tools.LeaderElectionCommand"
DELETE_RECORDS = "org.apache.kafka.tools.DeleteRecordsCommand"
GET_OFFSETS = "org.apache.kafka.tools.GetOffsetShell"
LOG_DIRS = "org.apache.kafka.tools.LogDirsCommand"
FEATURES = "org.apache.kafka.tools.FeatureCommand"
CONSOLE_PRODUCER = "org.apache.kafka.tools.ConsoleProducer"
CONSOLE_CONSUMER = "org.apache.kafka.tools.consumer.ConsoleConsumer"
VERIFIABLE_PRODUCER = "org.apache.kafka.tools.VerifiableProducer"
VERIFIABLE_CONSUMER = "org.apache.kafka.tools.VerifiableConsumer"
PRODUCER_PERFORMANCE = "org.apache.kafka.tools.ProducerPerformance"
END_TO_END_LATENCY = "org.apache.kafka.tools.EndToEndLatency"


# --- the normaliser -------------------------------------------------------------------------------

SAME, DROP, DELETE, SORT, BLOCKS = "same", "drop", "delete", "sort", "blocks"


@dataclass(frozen=True)
class Rule:
    """What legitimately differs in a tool's output between two brokers, and why. Modes:

    - SAME: each distinct value becomes `<name#n>`, numbered in order of first appearance in that run's
      output (equal values stay equal: the member id a describe shows twice is one placeholder);
    - DROP: the value becomes `<name>` (only that it is there is compared);
    - DELETE: the match goes (lines that are not the tool's output);
    - SORT: the lines after the first (a table's rows under its header) are sorted;
    - BLOCKS: the blocks (a heading line and the tab-indented lines under it) are sorted, and each block's
      indented lines.
    """
    name: str
    pattern: str
    mode: str
    reason: str
    tools: tuple[str, ...] = ()  # only in these tools' output (empty: every tool's)
    group: int = 0  # the regex group holding the value (0: the whole match)
    when: tuple[str, ...] = ()  # only when the invocation has all these arguments


_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_LOG_LINE = r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\] (?:TRACE|DEBUG|INFO|WARN|ERROR|FATAL) (?s:.*?) \([\w.$]+\)\n"


NORMALISED: tuple[Rule, ...] = (
    # -- ids and addresses
    Rule("topic_id", r"TopicId: ([A-Za-z0-9_-]{22})", SAME, "topic ids are random UUIDs (KIP-516)", (TOPICS,), group=1),
    Rule("port", r"(?<=127\.0\.0\.1:)\d+", SAME, "each broker listens on its own (free, random) port"),
    Rule("member_id", rf"[\w.-]*-{_UUID}", SAME, "classic member ids are the client id and a random UUID (KIP-394)",
         (CONSUMER_GROUPS,)),
    Rule("member_id", r"(?<= )[A-Za-z0-9_+/-]{22}(?= +/)", SAME,
         "KIP-848 member ids are random UUIDs the client picks (22 characters of base64: Java's URL-safe, "
         "librdkafka's standard alphabet), before the HOST column",
         (CONSUMER_GROUPS,)),
    Rule("log_dir", r'"logDir":"([^"]*)"', SAME, "each broker's data directory is its own path", (LOG_DIRS,), group=1),
    Rule("log_dir", r'"log_dirs":\[("[^"\]]*")', SAME,
         "each broker's data directory is its own path (the current assignment names it)", (REASSIGN_PARTITIONS,),
         group=1),
    # -- clocks and measurements
    Rule("epoch", r"Epoch: (\d+)", DROP, "Kafka's finalized features epoch is the offset of the last feature record "
                                         "in its metadata log; kafka-wire has no metadata log", (FEATURES,), group=1),
    Rule("timestamp", r'"timestamp":(\d+)', DROP, "the tool's clock when it printed the event",
         (VERIFIABLE_PRODUCER, VERIFIABLE_CONSUMER), group=1),
    Rule("throughput", r'"avg_throughput":([\d.E-]+)', DROP, "a measurement of this run", (VERIFIABLE_PRODUCER,),
         group=1),
    Rule("measurement", r"\d+(?:\.\d+)?(?= (?:records/sec|MB/sec|ms))", DROP, "a measurement of this run "
         "(rates and latencies)", (PRODUCER_PERFORMANCE,)),
    Rule("measurement", r"(?<=Avg latency: )[\d.]+|(?<== )\d+|(?<=\t)[\d.]+$", DROP,
         "a measurement of this run (latencies)", (END_TO_END_LATENCY,)),
    # -- order
    Rule("order", "", SORT, "ListTransactions lists the coordinator's transactions in the order of its hash maps "
                            "(by __transaction_state partition, then hash); no order is promised, the tool prints "
                            "them as received", (TRANSACTIONS,), when=("list",)),
    Rule("order", "", BLOCKS, "kafka-acls.sh prints ACLs grouped in hash maps and sets (ResourcePattern -> "
                              "Set<AccessControlEntry>), filled in the order the broker answered, which Kafka's "
                              "DescribeAclsResponse takes from hash maps too: no order is promised", (ACLS,)),
    # -- what is not the tool's output
    Rule("log line", _LOG_LINE, DELETE, "the tools' clients log retries and timing (warnings on stderr, as the "
                                        "distribution's tools-log4j2 config has it), not the tool's output"),
    Rule("session frames", r"(?m)^\tat (?:java\.base/)?(?:jdk\.internal\.reflect\.|java\.lang\.reflect\.Method\.invoke|"
                           r"ToolSession\.).*\n", DELETE,
         "the stack frames through which ToolSession.java calls a tool's main (a tool run as a process has none)"),
)


class Normaliser:
    """Normalises one tool run's output (placeholders numbered across its stdout and stderr)."""

    def __init__(self, tool: str, args: tuple[str, ...] = ()):
        self.rules = [rule for rule in NORMALISED
                      if (not rule.tools or tool in rule.tools) and all(a in args for a in rule.when)]
        self.tool = tool
        self.seen: dict[tuple[str, str], str] = {}
        self.counters: dict[str, int] = {}

    def placeholder(self, name: str, value: str) -> str:
        key = (name, value)
        if key not in self.seen:
            self.counters[name] = self.counters.get(name, 0) + 1
            self.seen[key] = f"<{name}#{self.counters[name]}>"
        return self.seen[key]

    def text(self, text: str) -> str:
        # Order first, on the values as printed (rows keyed by a name), so that placeholders are then
        # numbered in the same order on both sides.
        for rule in self.rules:
            if rule.mode == SORT:
                head, *rows = text.split("\n")
                text = "\n".join([head, *sorted(r for r in rows if r)]) + ("\n" if text.endswith("\n") else "")
            elif rule.mode == BLOCKS:
                text = "\n\n".join(sorted("\n".join([head, *sorted(entries)]) for head, entries in _blocks(text)))
        if self.tool == TRANSACTIONS:
            text = self._transaction_tables(text)
        for rule in self.rules:
            if rule.mode in (SORT, BLOCKS):
                continue

            def replace(match: re.Match, rule=rule) -> str:
                if rule.mode == DELETE:
                    return ""
                value = match.group(rule.group)
                new = self.placeholder(rule.name, value) if rule.mode == SAME else f"<{rule.name}>"
                start, end = match.start(rule.group) - match.start(), match.end(rule.group) - match.start()
                whole = match.group(0)
                return whole[:start] + new + whole[end:]
            text = re.sub(rule.pattern, replace, text, flags=re.MULTILINE)
        return text

    def _transaction_tables(self, text: str) -> str:
        """kafka-transactions.sh's tables: tab-separated cells padded to each column's widest value,
        a header row naming the columns. Cells are compared without the padding (the widths follow
        the values normalised here) and by column: TABLE_COLUMNS."""
        out = []
        header: list[str] | None = None
        for line in text.split("\n"):
            if "\t" not in line:
                header = None
                out.append(line)
                continue
            cells = [cell.rstrip(" ") for cell in line.split("\t")]
            if header is None:
                header = cells
                out.append("\t".join(cells))
                continue
            for i, cell in enumerate(cells):
                column = header[i] if i < len(header) else ""
                rule = TABLE_COLUMNS.get(column)
                if rule is not None and cell not in ("", "-1", "None"):
                    cells[i] = self.placeholder(rule.name, cell) if rule.mode == SAME else f"<{rule.name}>"
            out.append("\t".join(cells))
        return "\n".join(out)


def _blocks(text: str) -> list[tuple[str, list[str]]]:
    """A listing's blocks: a heading line and the tab-indented lines under it."""
    blocks: list[tuple[str, list[str]]] = []
    for line in text.split("\n"):
        if line.startswith("\t") and blocks:
            blocks[-1][1].append(line)
        elif line.strip():
            blocks.append((line, []))
    return blocks


# Columns of kafka-transactions.sh's tables whose values legitimately differ (cells padded to the
# widest value in the column: padding is not compared there).
TABLE_COLUMNS: dict[str, Rule] = {
    "ProducerId": Rule("producer_id", "", SAME, "each cluster allocates producer ids its own way (Kafka: blocks "
                                                "from the controller); which rows share one is compared"),
    "LastTimestamp": Rule("timestamp", "", DROP, "the producer's clock when it wrote its last batch"),
    "CurrentTransactionStartTimeMs": Rule("timestamp", "", DROP, "the coordinator's clock when the transaction began"),
    "TransactionDurationMs": Rule("duration", "", DROP, "the time between the transaction's start and the describe"),
    "Duration(min)": Rule("duration", "", DROP, "minutes since the hanging transaction began"),
}


# --- running the tools ----------------------------------------------------------------------------

@dataclass(frozen=True)
class ToolRun:
    """One run of a tool: its exit status and output, as printed."""
    exit: int
    stdout: str
    stderr: str
    millis: int = 0


@dataclass(frozen=True)
class Outcome:
    """A run normalised: what is compared."""
    exit: int
    stdout: str
    stderr: str


def normalised(tool: str, args: tuple[str, ...], run: ToolRun) -> Outcome:
    normaliser = Normaliser(tool, args)  # one numbering for both streams
    return Outcome(run.exit, normaliser.text(run.stdout), normaliser.text(run.stderr))


@dataclass
class Comparison:
    """The same invocation against Kafka and against kafka-wire."""
    tool: str
    args: tuple[str, ...]
    kafka_run: ToolRun
    ours_run: ToolRun
    kafka: Outcome = field(init=False)
    ours: Outcome = field(init=False)

    def __post_init__(self):
        self.kafka = normalised(self.tool, self.args, self.kafka_run)
        self.ours = normalised(self.tool, self.args, self.ours_run)

    @property
    def same(self) -> bool:
        return self.kafka == self.ours

    def diff(self) -> str:
        """What differs once normalised: exit statuses, then unified diffs of stdout and stderr (Kafka's first)."""
        name = self.tool.rsplit(".", 1)[-1]
        parts = [f"{name} {' '.join(self.args)}"]
        if self.kafka.exit != self.ours.exit:
            parts.append(f"exit status: Kafka {self.kafka.exit}, kafka-wire {self.ours.exit}")
        for stream in ("stdout", "stderr"):
            lines = list(difflib.unified_diff(getattr(self.kafka, stream).splitlines(),
                                              getattr(self.ours, stream).splitlines(),
                                              f"Kafka {stream}", f"kafka-wire {stream}", lineterm=""))
            parts += lines
        return "\n".join(parts)


class ToolSessionFailure(AssertionError):
    """The tool JVM died or a tool did not finish in time."""


_COMPILING = threading.Lock()  # one javac of ToolSession.java at a time


class ToolSession:
    """One JVM that runs Kafka `version`'s tools on request (compat/reference/ToolSession.java)."""

    def __init__(self, version: str = KAFKA_4, build_dir: Path | None = None):
        self.version = version
        self.build_dir = build_dir
        self.process: subprocess.Popen | None = None
        self._answers: list[str] = []
        self._answered = threading.Condition()

    def _classes(self) -> Path:
        """ToolSession.java compiled against this Kafka's jars (once per source and version; sessions
        started from several threads at once compile it once)."""
        source = SESSION_SOURCE.read_bytes()
        digest = hashlib.sha256(source + self.version.encode()).hexdigest()[:16]
        classes = self.build_dir or (libs_dir(self.version).parent / "tool-session" / digest)
        with _COMPILING:
            if not (classes / "ToolSession.class").is_file():
                classes.mkdir(parents=True, exist_ok=True)
                javac = Path(java()).with_name("javac")
                done = subprocess.run([str(javac), "-nowarn", "-d", str(classes), "-cp",
                                       str(libs_dir(self.version) / "*"), str(SESSION_SOURCE)],
                                      capture_output=True, text=True, timeout=180)
                if done.returncode != 0:
                    raise ToolSessionFailure(f"ToolSession.java does not compile:\n{done.stdout}{done.stderr}")
        return classes

    def start(self) -> None:
        from testing.processes import die_with_parent

        install(self.version)
        classpath = f"{self._classes()}:{libs_dir(self.version) / '*'}"
        command = [java(), *TOOL_JVM_OPTIONS, f"-Dlog4j2.configurationFile={TOOLS_LOG4J_CONFIG}", "-cp", classpath,
                   "ToolSession"]
        # The tools' own stderr is captured per run (ToolSession.java); the JVM's is not needed.
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, text=True, encoding="utf-8",
                                        start_new_session=True, preexec_fn=die_with_parent)
        self._answers = []
        threading.Thread(target=self._read, args=(self.process,), daemon=True).start()
        self._next_answer(120.0)  # {"ready": true}

    def _read(self, process: subprocess.Popen) -> None:
        for line in process.stdout:
            with self._answered:
                self._answers.append(line)
                self._answered.notify_all()
        with self._answered:
            self._answered.notify_all()

    def _next_answer(self, timeout: float) -> dict:
        with self._answered:
            if not self._answered.wait_for(lambda: self._answers or self.process.poll() is not None, timeout):
                self.stop()
                raise ToolSessionFailure(f"no answer from the tool JVM within {timeout:.0f}s (stopped; restarts "
                                         "on the next run)")
            if not self._answers:
                raise ToolSessionFailure(f"the tool JVM exited with status {self.process.returncode}")
            return json.loads(self._answers.pop(0))

    def run(self, main_class: str, *args: str, input: str | None = None, timeout: float = 120.0) -> ToolRun:
        """Runs `main_class` with `args` (and `input` as its standard input) in the session's JVM."""
        if self.process is None or self.process.poll() is not None:
            self.start()
        request = json.dumps({"main": main_class, "args": list(args), "stdin": input})
        self.process.stdin.write(request + "\n")
        self.process.stdin.flush()
        answer = self._next_answer(timeout)
        return ToolRun(answer["exit"], answer["stdout"], answer["stderr"], answer.get("millis", 0))

    def compare(self, kafka_bootstrap: str, ours_bootstrap: str, main_class: str, *args: str,
                input: str | None = None, timeout: float = 120.0) -> Comparison:
        """The same invocation against Kafka, then against kafka-wire (BOOTSTRAP in `args` is each one's)."""
        kafka = self.run(main_class, *(a.replace(BOOTSTRAP, kafka_bootstrap) for a in args), input=input,
                         timeout=timeout)
        ours = self.run(main_class, *(a.replace(BOOTSTRAP, ours_bootstrap) for a in args), input=input,
                        timeout=timeout)
        return Comparison(main_class, tuple(args), kafka, ours)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.stdin.close()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def __enter__(self) -> ToolSession:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
