"""Batch replay job: recompute the order-totals view over a bounded slice of the orders topic ("fix and replay").

    # the whole history, into a new changelog topic, after fixing the parser or the aggregation
    python -m pipelines.order_totals_replay --bootstrap-servers localhost:9092 --topic orders \\
        --changelog-topic order-totals-v2

    # one day, by record timestamp; or exact offsets per partition
    python -m pipelines.order_totals_replay ... --starting-timestamp 1718841600000 --ending-timestamp 1718928000000
    python -m pipelines.order_totals_replay ... --starting-offsets '{"orders":{"0":1200,"1":-2}}' \\
        --ending-offsets '{"orders":{"0":5000,"1":-1}}'

Reads with spark.read.format("kafka") from startingOffsets (inclusive) to endingOffsets
(exclusive), each given as offsets (JSON per partition: -2 earliest, -1 latest), one timestamp
for all partitions (startingTimestamp/endingTimestamp), or timestamps per partition
(startingOffsetsByTimestamp/endingOffsetsByTimestamp; the broker answers the first offset at or
after each). It applies the same transformation as the streaming job (pipelines/orders.py) and
writes the recomputed view as a changelog with Spark's Kafka sink (--changelog-topic), as JSON
files (--output-path), or prints it. It also reports the records the parser rejected, so a fix
can be checked before it is replayed into a topic.

Needs Spark's Kafka connector: see pipelines/spark_session.py or `--help`.
"""

from __future__ import annotations

import argparse
import sys

from pipelines import orders
from pipelines.changelog_topic import ChangelogTopicError, ensure_compacted_topic
from pipelines.avro_orders import SchemaRegistryError
from pipelines.command_line import (
    add_common_arguments,
    fail,
    kafka_client_options,
    order_decoder,
    subscription,
    value_schemas,
)
from pipelines.kafka_options import OptionError, range_options
from pipelines.spark_session import (
    build_session,
    is_missing_avro,
    is_missing_kafka_source,
    missing_avro_help,
    missing_connector_help,
)

SOURCE_DEFAULTS = {"isolation.level": "read_committed"}


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m pipelines.order_totals_replay",
                                     description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_arguments(parser)
    start = parser.add_mutually_exclusive_group()
    start.add_argument("--starting-offsets", help='earliest (default) or JSON {"orders":{"0":12,"1":-2}}')
    start.add_argument("--starting-timestamp", metavar="EPOCH_MS", help="every partition from this time")
    start.add_argument("--starting-offsets-by-timestamp", metavar="JSON",
                       help='per partition from a time: {"orders":{"0":1700000000000,...}}')
    end = parser.add_mutually_exclusive_group()
    end.add_argument("--ending-offsets", help='latest (default) or JSON {"orders":{"0":500,"1":-1}} (exclusive)')
    end.add_argument("--ending-timestamp", metavar="EPOCH_MS", help="every partition up to this time (exclusive)")
    end.add_argument("--ending-offsets-by-timestamp", metavar="JSON", help="per partition up to a time")
    parser.add_argument("--no-match-starts-at-latest", action="store_true",
                        help="a partition with no record at or after the starting timestamp starts at its "
                             "latest offset instead of failing the job (startingOffsetsByTimestampStrategy)")
    parser.add_argument("--allow-data-loss", action="store_true",
                        help="skip offsets that were deleted instead of failing (failOnDataLoss=false)")
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--changelog-topic", help="write the recomputed view to this (compacted) topic")
    output.add_argument("--output-path", help="write the recomputed view as JSON files to this folder")
    parser.add_argument("--changelog-partitions", type=int, default=1,
                        help="partitions of the changelog topic when this job creates it (default: 1)")
    parser.add_argument("--show", type=int, default=20, metavar="N",
                        help="print N rows of the view and of the rejected records (default: 20; 0: none)")
    return parser.parse_args(argv)


def source_options(args: argparse.Namespace) -> dict[str, str]:
    options = kafka_client_options(args, SOURCE_DEFAULTS)
    options.update(subscription(args))
    options.update(range_options(
        batch=True, starting_offsets=args.starting_offsets, ending_offsets=args.ending_offsets,
        starting_timestamp=args.starting_timestamp, ending_timestamp=args.ending_timestamp,
        starting_offsets_by_timestamp=args.starting_offsets_by_timestamp,
        ending_offsets_by_timestamp=args.ending_offsets_by_timestamp,
        no_match_starts_at_latest=args.no_match_starts_at_latest))
    options["failOnDataLoss"] = "false" if args.allow_data_loss else "true"
    return options


def read_slice(spark, args: argparse.Namespace):
    reader = spark.read.format("kafka")
    for key, value in source_options(args).items():
        reader = reader.option(key, value)
    return reader.load()


def replay(spark, args: argparse.Namespace, schemas=None) -> dict[str, int]:
    """Runs the replay; returns counts (records read, rejected, customers in the view). `schemas`:
    the Avro value schemas (`value_schemas`), None for JSON values."""
    records = read_slice(spark, args).cache()  # read from Kafka once, used three times
    try:
        order = order_decoder(schemas)
        changelog = orders.order_totals_changelog(records, order).cache()
        rejected = orders.rejected_records(records, order)
        counts = {"records": records.count(), "rejected": rejected.count(), "customers": changelog.count()}
        if args.show:
            orders.parse_changelog(changelog).orderBy("customer").show(args.show, truncate=False)
            if counts["rejected"]:
                rejected.orderBy("topic", "partition", "offset").show(args.show, truncate=False)
        if args.changelog_topic:
            writer = changelog.write.format("kafka").option("topic", args.changelog_topic)
            for key, value in kafka_client_options(args).items():
                writer = writer.option(key, value)
            writer.save()
        elif args.output_path:
            orders.parse_changelog(changelog).write.mode("errorifexists").json(args.output_path)
        return counts
    finally:
        records.unpersist()


def main(argv: list[str] | None = None) -> int:
    args = parse_arguments(argv)
    try:
        source_options(args), kafka_client_options(args)  # fail before Spark starts
        schemas = value_schemas(args)
    except (OptionError, SchemaRegistryError) as error:
        return fail(str(error))
    if args.changelog_topic:
        try:
            ensure_compacted_topic(args.bootstrap_servers, args.changelog_topic, args.changelog_partitions)
        except (ChangelogTopicError, OSError) as error:
            return fail(str(error))
    spark = build_session(app_name="kafka-wire order_totals_replay", master=args.master, packages=args.packages)
    try:
        counts = replay(spark, args, schemas)
    except Exception as error:  # Spark raises AnalysisException, from py4j; its type varies by version
        if is_missing_kafka_source(error):
            return fail(missing_connector_help())
        if is_missing_avro(error):
            return fail(missing_avro_help())
        raise
    where = (f" -> {args.changelog_topic}" if args.changelog_topic
             else f" -> {args.output_path}" if args.output_path else "")
    print(f"replayed {counts['records']} records: {counts['customers']} customers{where}, "
          f"{counts['rejected']} records rejected by the parser", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
