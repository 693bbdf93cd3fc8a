"""Command-line arguments the pipelines share: where the broker is, what to read, how to run Spark."""

from __future__ import annotations

import argparse
import sys

from pipelines.kafka_options import OptionError, client_options, parse_key_values, subscription_options
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
    values = parser.add_argument_group("value format")
    values.add_argument("--value-format", choices=["json", "avro"], default="json",
                        help="json (default): each value a JSON order; avro: Avro in the Schema Registry's wire "
                             "format (Confluent's serializers), decoded with Spark's from_avro")
    values.add_argument("--schema-registry-url", metavar="URL",
                        help="the Schema Registry the avro format reads the schemas from, e.g. "
                             "http://127.0.0.1:8081 (kafka-wire's schema.registry.port, or Confluent's)")
    values.add_argument("--schema-registry-basic-auth", metavar="USER:PASSWORD",
                        help="HTTP basic credentials for the registry (Confluent's basic.auth.user.info)")
    values.add_argument("--value-subject", metavar="SUBJECT",
                        help="the subject of the values' schemas (default: <topic>-value, the TopicNameStrategy)")
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


def value_schemas(args: argparse.Namespace):
    """With --value-format avro, the subject's schemas from the registry (pipelines/avro_orders.py),
    fetched before Spark starts; None for JSON. Raises OptionError or SchemaRegistryError."""
    from pipelines import avro_orders

    if args.value_format != "avro":
        if args.schema_registry_url or args.value_subject:
            raise OptionError("--schema-registry-url and --value-subject go with --value-format avro")
        return None
    if not args.schema_registry_url:
        raise OptionError("--value-format avro needs --schema-registry-url")
    subject = args.value_subject
    if subject is None:
        if not args.topic or "," in args.topic:
            raise OptionError("--value-format avro reading several topics or a pattern needs --value-subject")
        subject = avro_orders.value_subject(args.topic)
    return avro_orders.fetch_value_schemas(args.schema_registry_url, subject,
                                           basic_auth=args.schema_registry_basic_auth)


def order_decoder(schemas):
    """The column pipelines/orders.py decodes each value with: None (JSON) or from_avro's."""
    if schemas is None:
        return None
    from pipelines import avro_orders

    return avro_orders.order_column(schemas)


def fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2
