"""kcat (librdkafka's command-line client) runs the client acceptance sequence against a broker.

Usage: python kcat_check.py HOST:PORT [--kcat PATH] [--records N] [--codecs none,gzip,...]
Exit status 0 when every check passed; 1 with the reason otherwise.

kcat has no admin API, so where the other clients create and delete the topic through admin
requests, kcat creates it by producing to it (broker-side auto-creation, as with Kafka's default
auto.create.topics.enable=true) and leaves it in place. kcat cannot set a record's timestamp
either: each codec's records get the producer's clock, so the by-timestamp checks use the time
taken just before each codec's run, which must find that run's first offset.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time

from acceptance import AcceptancePlan, CheckFailed, ReceivedRecord, argument_parser, run_program, wait_until

CLIENT = "kcat"


def main() -> None:
    parser = argument_parser(__doc__.splitlines()[0])
    parser.add_argument("--kcat", default=shutil.which("kcat"), help="path of the kcat binary")
    args = parser.parse_args()
    run_program(CLIENT, lambda progress: check(progress, args))


class Kcat:
    def __init__(self, path: str, bootstrap: str, timeout: float):
        self.path = path
        self.bootstrap = bootstrap
        self.timeout = timeout

    def run(self, *args: str, stdin: bytes = b"") -> str:
        # -m bounds metadata waits; message.timeout.ms bounds delivery, so a broker that never
        # answers fails the step instead of hanging it.
        command = [self.path, "-b", self.bootstrap, "-m", str(int(self.timeout)),
                   "-X", f"message.timeout.ms={int(self.timeout * 1000)}", *args]
        try:
            done = subprocess.run(command, input=stdin, capture_output=True, timeout=self.timeout + 15)
        except subprocess.TimeoutExpired as expired:
            raise CheckFailed(f"`{' '.join(command)}` did not finish in {self.timeout + 15:.0f}s; "
                              f"stderr: {(expired.stderr or b'').decode(errors='replace')[-2000:]}") from None
        if done.returncode != 0:
            raise CheckFailed(f"`{' '.join(command)}` exited {done.returncode}; "
                              f"stderr: {done.stderr.decode(errors='replace')[-2000:]}")
        return done.stdout.decode()

    def query_offset(self, topic: str, partition: int, timestamp: int) -> int:
        """kcat -Q: ListOffsets for a timestamp (-1 latest, -2 earliest, as on the wire)."""
        answer = json.loads(self.run("-Q", "-J", "-t", f"{topic}:{partition}:{timestamp}"))
        entry = answer[topic][str(partition)]
        if "error" in entry:
            raise CheckFailed(f"offset query {topic}:{partition}:{timestamp} answered {entry['error']}")
        return entry["offset"]


def now_ms() -> int:
    return int(time.time() * 1000)


def check(progress, args) -> None:
    if not args.kcat:
        raise CheckFailed("kcat is not installed (scripts/setup-tests.sh installs it)")
    kcat = Kcat(args.kcat, args.bootstrap, args.timeout)
    version = subprocess.run([args.kcat, "-V"], capture_output=True, text=True).stdout
    progress.say(next((line.strip() for line in version.splitlines() if "Version" in line), args.kcat))
    plan = AcceptancePlan(CLIENT, args.codecs.split(","), records_per_codec=args.records, partitions=1,
                          explicit_timestamps=False, index_header=False)
    progress.say(f"topic {plan.topic}, {plan.total} records, codecs {','.join(plan.codecs)}")

    # started[k]: a clock reading before codec k's records were produced; the last entry is
    # after everything was produced. Each run's records carry timestamps within its window.
    started: list[int] = []
    for codec in plan.codecs:
        records = plan.for_codec(codec)
        action = "produce (auto-creates the topic)" if not started else "produce"
        with progress.step(f"{action} {len(records)} records, compression {codec}", [f"produce:{codec}"]):
            # A line without the key delimiter is produced with a null key.
            lines = b"".join((record.key + b"\t" if record.key is not None else b"") + record.value + b"\n"
                             for record in records)
            time.sleep(0.005)  # distinct milliseconds between one run's last record and the next run
            started.append(now_ms())
            compression = [] if codec == "none" else ["-z", codec]
            kcat.run("-P", "-t", plan.topic, "-p", "0", *compression, "-K", r"\t", "-H", f"codec={codec}",
                     stdin=lines)
    time.sleep(0.005)
    started.append(now_ms())

    with progress.check("metadata (-L)", ["metadata"]):
        def listed():
            metadata = json.loads(kcat.run("-L", "-J", "-t", plan.topic))
            topics = [t for t in metadata["topics"] if t["topic"] == plan.topic]
            if topics and "error" not in topics[0] and topics[0]["partitions"]:
                return topics[0]
            return None
        topic = wait_until(listed, args.timeout, "the topic in metadata")
        partitions = topic["partitions"]
        progress.say(f"{len(partitions)} partition(s), leaders {[p['leader'] for p in partitions]}")
        if any(p["leader"] < 0 or "error" in p for p in partitions):
            raise CheckFailed(f"partition without a leader or with an error: {partitions}")

    with progress.check("read back everything (-C -o beginning -e, no group)", ["fetch"]):
        output = kcat.run("-C", "-t", plan.topic, "-o", "beginning", "-e", "-J")
        received = []
        problems = []
        for line in output.splitlines():
            if not line.strip():
                continue
            message = json.loads(line)
            raw_headers = message.get("headers") or []
            headers = tuple((raw_headers[i], None if raw_headers[i + 1] is None else raw_headers[i + 1].encode())
                            for i in range(0, len(raw_headers), 2))
            got = ReceivedRecord(message["partition"], message["offset"],
                                 None if message["key"] is None else message["key"].encode(),
                                 None if message["payload"] is None else message["payload"].encode(),
                                 headers, message["ts"])
            received.append(got)
            if message.get("tstype") != "create":
                problems.append(f"offset {got.offset}: timestamp type {message.get('tstype')}, expected create")
            planned = [r for r in plan.records if (r.partition, r.offset) == (got.partition, got.offset)]
            if planned:
                k = plan.codecs.index(planned[0].codec)
                if not started[k] <= got.timestamp <= started[k + 1]:
                    problems.append(f"offset {got.offset}: timestamp {got.timestamp} outside its producer run "
                                    f"[{started[k]}, {started[k + 1]}]")
        progress.say(f"read {len(received)} of {plan.total} records")
        plan.check_received(received)
        if problems:
            raise CheckFailed("timestamps:\n  " + "\n  ".join(problems[:20]))

    with progress.check("offsets: earliest (-Q ...:-2)", ["list-offsets"]):
        plan.check_offsets("earliest", {0: kcat.query_offset(plan.topic, 0, -2)}, {0: 0})
    with progress.check("offsets: latest (-Q ...:-1)", ["list-offsets"]):
        plan.check_offsets("latest", {0: kcat.query_offset(plan.topic, 0, -1)}, plan.log_end_offsets)
    with progress.check("offsets: by timestamp (-Q ...:<ts>)", ["list-offsets"]):
        for k, codec in enumerate(plan.codecs):
            first = plan.for_codec(codec)[0].offset
            plan.check_offsets(f"timestamp {started[k]} (start of the {codec} run)",
                               {0: kcat.query_offset(plan.topic, 0, started[k])}, {0: first})
        plan.check_offsets("after the last record",
                           {0: kcat.query_offset(plan.topic, 0, started[-1] + 60_000)}, {0: -1})

    progress.say(f"kcat has no admin API: topic {plan.topic} is left in place")


if __name__ == "__main__":
    main()
