"""Streaming job: orders topic -> per-customer totals -> compacted changelog topic (a materialized view).

    python -m pipelines.order_totals_stream --bootstrap-servers localhost:9092 --topic orders \\
        --changelog-topic order-totals --checkpoint-dir /var/lib/pipelines/order-totals

Reads the orders topic with Spark's Kafka source (spark.readStream.format("kafka")), keeps the
totals per customer in Spark's state store, and after each micro-batch writes the customers whose
totals changed to the changelog topic with Spark's Kafka sink (output mode "update"). The
changelog topic is created with cleanup.policy=compact, so any consumer rebuilds the current view
by reading it from the start and keeping the last value per key.

The checkpoint directory holds the offsets of each micro-batch and the state of the totals: a job
stopped or killed at any point and started again with the same directory resumes exactly where
it stopped. A micro-batch that was written but not yet committed when the job died is run again
on the same offsets and writes the same values again (the sink is at-least-once), which leaves
the compacted view unchanged. --starting-offsets and friends apply only to the first start; after
that the checkpoint decides. Starting over means a new checkpoint directory (and, usually, a new
changelog topic).

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

# The view must never count a write that a transactional producer aborted.
SOURCE_DEFAULTS = {"isolation.level": "read_committed"}


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m pipelines.order_totals_stream",
                                     description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_arguments(parser)
    parser.add_argument("--changelog-topic", default="order-totals",
                        help="compacted topic the view is written to (default: %(default)s)")
    parser.add_argument("--checkpoint-dir", required=True,
                        help="Spark checkpoint location: offsets and state; keep it to resume")
    parser.add_argument("--changelog-partitions", type=int, default=1,
                        help="partitions of the changelog topic when this job creates it (default: 1)")
    parser.add_argument("--no-create-changelog-topic", action="store_true",
                        help="do not create or check the changelog topic (e.g. no permission to)")
    start = parser.add_mutually_exclusive_group()
    start.add_argument("--starting-offsets", default=None,
                       help='first start only: earliest (default), latest, or JSON {"orders":{"0":12,"1":-2}}')
    start.add_argument("--starting-timestamp", metavar="EPOCH_MS",
                       help="first start only: every partition from its first record at or after this time")
    start.add_argument("--starting-offsets-by-timestamp", metavar="JSON",
                       help='first start only: {"orders":{"0":1700000000000,...}} per partition')
    parser.add_argument("--max-offsets-per-trigger", type=int,
                        help="at most this many records per micro-batch (spread over partitions)")
    parser.add_argument("--trigger", default="continuous",
                        help="'continuous' (default: next micro-batch as soon as the last one is done), "
                             "'available-now' (process what is there now, in micro-batches, then stop), "
                             "or an interval such as '10 seconds'")
    parser.add_argument("--allow-data-loss", action="store_true",
                        help="go on when offsets the checkpoint expects were deleted (retention, "
                             "DeleteRecords) instead of failing (Spark's failOnDataLoss=false)")
    parser.add_argument("--query-name", default="order_totals")
    return parser.parse_args(argv)


def source_options(args: argparse.Namespace) -> dict[str, str]:
    """Everything the Kafka source is given (pure: checked without Spark)."""
    options = kafka_client_options(args, SOURCE_DEFAULTS)
    options.update(subscription(args))
    starting = args.starting_offsets
    if starting is None and args.starting_timestamp is None and args.starting_offsets_by_timestamp is None:
        starting = "earliest"  # a view is built from the whole topic (Spark's stream default is latest)
    options.update(range_options(batch=False, starting_offsets=starting,
                                 starting_timestamp=args.starting_timestamp,
                                 starting_offsets_by_timestamp=args.starting_offsets_by_timestamp))
    if args.max_offsets_per_trigger is not None:
        if args.max_offsets_per_trigger <= 0:
            raise OptionError("--max-offsets-per-trigger must be positive")
        options["maxOffsetsPerTrigger"] = str(args.max_offsets_per_trigger)
    options["failOnDataLoss"] = "false" if args.allow_data_loss else "true"
    return options


def sink_options(args: argparse.Namespace) -> dict[str, str]:
    """Everything the Kafka sink is given: the topic and the same client properties (without
    the consumer-only isolation.level)."""
    options = kafka_client_options(args)
    options["topic"] = args.changelog_topic
    options["checkpointLocation"] = args.checkpoint_dir
    return options


def trigger_arguments(trigger: str) -> dict:
    """--trigger -> keyword arguments of DataStreamWriter.trigger (empty: Spark's default)."""
    if trigger == "continuous":
        return {}
    if trigger == "available-now":
        return {"availableNow": True}
    if trigger.split()[0].isdigit():
        return {"processingTime": trigger}
    raise OptionError(f"--trigger: expected continuous, available-now or an interval like '10 seconds', "
                      f"got {trigger!r}")


def start_query(spark, args: argparse.Namespace, schemas=None):
    """Starts the streaming query: Kafka source -> orders.order_totals_changelog -> Kafka sink.
    `schemas`: the Avro value schemas (`value_schemas`), None for JSON values."""
    reader = spark.readStream.format("kafka")
    for key, value in source_options(args).items():
        reader = reader.option(key, value)
    changelog = orders.order_totals_changelog(reader.load(), order_decoder(schemas))
    writer = changelog.writeStream.format("kafka").outputMode("update").queryName(args.query_name)
    for key, value in sink_options(args).items():
        writer = writer.option(key, value)
    trigger = trigger_arguments(args.trigger)
    if trigger:
        writer = writer.trigger(**trigger)
    return writer.start()


def main(argv: list[str] | None = None) -> int:
    from pyspark.errors import StreamingQueryException

    args = parse_arguments(argv)
    try:
        source_options(args), sink_options(args), trigger_arguments(args.trigger)  # fail before Spark starts
        schemas = value_schemas(args)
    except (OptionError, SchemaRegistryError) as error:
        return fail(str(error))
    if not args.no_create_changelog_topic:
        try:
            created = ensure_compacted_topic(args.bootstrap_servers, args.changelog_topic, args.changelog_partitions)
        except (ChangelogTopicError, OSError) as error:
            return fail(str(error))
        print(f"changelog topic {args.changelog_topic}: {'created' if created else 'exists'}, compacted",
              file=sys.stderr)
    spark = build_session(app_name=f"kafka-wire {args.query_name}", master=args.master, packages=args.packages)
    try:
        query = start_query(spark, args, schemas)
    except Exception as error:  # Spark raises AnalysisException, from py4j; its type varies by version
        if is_missing_kafka_source(error):
            return fail(missing_connector_help())
        if is_missing_avro(error):
            return fail(missing_avro_help())
        raise
    print(f"query {args.query_name} started (checkpoint {args.checkpoint_dir}); "
          f"writing the view to {args.changelog_topic}", file=sys.stderr)
    try:
        query.awaitTermination()
    except KeyboardInterrupt:
        query.stop()  # a clean stop; the next start resumes from the checkpoint
    except StreamingQueryException as error:
        print(f"error: the query failed: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
