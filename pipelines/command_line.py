"""Command-line arguments the pipelines share: where the broker is, what to read, how to run Spark."""

from __future__ import annotations

import argparse
import sys

from pipelines.kafka_options import client_options, parse_key_values, subscription_options
from pipelines.spark_session import JARS_ENV, connector_coordinates


def add_common_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bootstrap-servers", required=True, metavar="HOST:PORT[,...]",
                        help="the broker(s) to read from and write to")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--topic", help="topic(s) of orders to read, comma-separated (Spark's subscribe)")
    source.add_argument("--topic-pattern", metavar="REGEX",
                        help="read every topic whose name matches (Spark's subscribePattern); topics "
                             "created later are picked up")
    parser.add_argument("--kafka-option", action="append", metavar="KEY=VALUE", default=[],
                        help="a Kafka client property for the source and sink, e.g. security.protocol=SSL "
                             "(repeatable; 'kafka.' is added)")
    parser.add_argument("--master", help="Spark master URL (default: spark-submit's, else local[*])")
    parser.add_argument("--packages", metavar="COORDINATES", nargs="?", const=connector_coordinates(),
                        help=f"Maven coordinates for spark.jars.packages; bare --packages means the Kafka "
                             f"connector for this pyspark ({connector_coordinates()}). Alternatively set "
                             f"{JARS_ENV} to local jars.")


def kafka_client_options(args: argparse.Namespace, defaults: dict[str, str] | None = None) -> dict[str, str]:
    extra = dict(defaults or {})
    extra.update(parse_key_values(args.kafka_option, "--kafka-option"))
    return client_options(args.bootstrap_servers, extra)


def subscription(args: argparse.Namespace) -> dict[str, str]:
    return subscription_options(topic=args.topic, pattern=args.topic_pattern)


def fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2
