"""The pipelines' option handling, without Spark: what each job hands Spark's Kafka source and sink."""

from __future__ import annotations

import pytest

from pipelines import order_totals_replay, order_totals_stream
from pipelines.kafka_options import (
    EARLIEST,
    LATEST,
    OptionError,
    client_options,
    offsets_json,
    parse_partition_json,
    range_options,
    subscription_options,
)
from pipelines import spark_session
from pipelines.spark_session import (
    JARS_ENV,
    checkout_connector_folder,
    connector_coordinates,
    connector_jars,
    is_missing_kafka_source,
    missing_connector_jars,
    session_config,
    session_jars,
)

# --- offset ranges ---------------------------------------------------------------------------


def test_offsets_json_is_the_connectors_format():
    text = offsets_json({"orders": {1: LATEST, 0: 23}, "clicks": {0: EARLIEST}})
    assert text == '{"clicks":{"0":-2},"orders":{"0":23,"1":-1}}'
    assert parse_partition_json(text, "x") == {"clicks": {0: -2}, "orders": {0: 23, 1: -1}}


@pytest.mark.parametrize("text", ["", "[]", "{}", '{"orders": 5}', '{"orders": {}}', '{"orders": {"x": 1}}',
                                  '{"orders": {"0": "5"}}', '{"orders": {"0": 1.5}}', '{"orders": {"0": true}}'])
def test_malformed_partition_json_is_refused(text):
    with pytest.raises(OptionError):
        parse_partition_json(text, "startingOffsets")


def test_batch_range_by_offsets():
    assert range_options(batch=True, starting_offsets='{"orders":{"0":5,"1":-2}}',
                         ending_offsets='{"orders":{"0":9,"1":-1}}') == {
        "startingOffsets": '{"orders":{"0":5,"1":-2}}', "endingOffsets": '{"orders":{"0":9,"1":-1}}'}
    assert range_options(batch=True) == {}  # the connector's defaults: earliest .. latest


@pytest.mark.parametrize("kwargs", [
    {"starting_offsets": "latest"},                       # a batch starting at latest reads nothing
    {"ending_offsets": "earliest"},
    {"starting_offsets": '{"orders":{"0":-1}}'},          # -1 (latest) as a batch start
    {"ending_offsets": '{"orders":{"0":-2}}'},            # -2 (earliest) as a batch end
    {"starting_offsets": '{"orders":{"0":-3}}'},
    {"starting_offsets": "earliest", "starting_timestamp": "1000"},   # one way per side
    {"ending_timestamp": "1000", "ending_offsets_by_timestamp": '{"orders":{"0":5}}'},
    {"starting_timestamp": "yesterday"},
    {"starting_offsets_by_timestamp": '{"orders":{"0":-5}}'},
])
def test_batch_ranges_the_connector_would_refuse(kwargs):
    with pytest.raises(OptionError):
        range_options(batch=True, **kwargs)


def test_batch_range_by_timestamp():
    assert range_options(batch=True, starting_timestamp=1000, ending_timestamp="2000") == {
        "startingTimestamp": "1000", "endingTimestamp": "2000"}
    per_partition = '{"orders":{"0":1000,"1":1500}}'
    assert range_options(batch=True, starting_offsets_by_timestamp=per_partition,
                         no_match_starts_at_latest=True) == {
        "startingOffsetsByTimestamp": per_partition, "startingOffsetsByTimestampStrategy": "latest"}


def test_a_stream_starts_anywhere_but_has_no_end():
    assert range_options(batch=False, starting_offsets="latest") == {"startingOffsets": "latest"}
    assert range_options(batch=False, starting_offsets='{"orders":{"0":-1}}')
    with pytest.raises(OptionError, match="no end"):
        range_options(batch=False, ending_offsets="latest")


def test_subscription_is_a_topic_list_or_a_pattern():
    assert subscription_options(topic=" orders, clicks ,") == {"subscribe": "orders,clicks"}
    assert subscription_options(pattern="orders-.*") == {"subscribePattern": "orders-.*"}
    for kwargs in ({}, {"topic": "a", "pattern": "b"}, {"topic": " , "}):
        with pytest.raises(OptionError):
            subscription_options(**kwargs)


def test_client_options_get_the_kafka_prefix_and_connector_managed_ones_are_refused():
    assert client_options("h:1", {"isolation.level": "read_committed", "kafka.security.protocol": "SSL"}) == {
        "kafka.bootstrap.servers": "h:1", "kafka.isolation.level": "read_committed",
        "kafka.security.protocol": "SSL"}
    for managed in ("auto.offset.reset", "kafka.enable.auto.commit", "key.deserializer", "value.serializer"):
        with pytest.raises(OptionError, match="manages"):
            client_options("h:1", {managed: "x"})
    with pytest.raises(OptionError):
        client_options("  ")


# --- the jobs' command lines ------------------------------------------------------------------


def test_streaming_job_options():
    args = order_totals_stream.parse_arguments([
        "--bootstrap-servers", "b:9092", "--topic", "orders", "--checkpoint-dir", "/ck",
        "--max-offsets-per-trigger", "1000", "--kafka-option", "client.id=view"])
    assert order_totals_stream.source_options(args) == {
        "kafka.bootstrap.servers": "b:9092", "kafka.isolation.level": "read_committed",
        "kafka.client.id": "view", "subscribe": "orders", "startingOffsets": "earliest",
        "maxOffsetsPerTrigger": "1000", "failOnDataLoss": "true"}
    assert order_totals_stream.sink_options(args) == {
        "kafka.bootstrap.servers": "b:9092", "kafka.client.id": "view", "topic": "order-totals",
        "checkpointLocation": "/ck"}


def test_streaming_job_start_by_timestamp_replaces_the_earliest_default():
    args = order_totals_stream.parse_arguments([
        "--bootstrap-servers", "b:9092", "--topic-pattern", "orders-.*", "--checkpoint-dir", "/ck",
        "--starting-timestamp", "1700000000000", "--allow-data-loss",
        "--kafka-option", "isolation.level=read_uncommitted"])
    options = order_totals_stream.source_options(args)
    assert options["startingTimestamp"] == "1700000000000" and "startingOffsets" not in options
    assert options["subscribePattern"] == "orders-.*" and options["failOnDataLoss"] == "false"
    assert options["kafka.isolation.level"] == "read_uncommitted"  # the user's choice wins


def test_streaming_job_refuses_two_starts_and_bad_triggers(capsys):
    with pytest.raises(SystemExit):
        order_totals_stream.parse_arguments(["--bootstrap-servers", "b:1", "--topic", "t", "--checkpoint-dir", "c",
                                             "--starting-offsets", "earliest", "--starting-timestamp", "5"])
    assert order_totals_stream.trigger_arguments("continuous") == {}
    assert order_totals_stream.trigger_arguments("available-now") == {"availableNow": True}
    assert order_totals_stream.trigger_arguments("10 seconds") == {"processingTime": "10 seconds"}
    with pytest.raises(OptionError):
        order_totals_stream.trigger_arguments("sometimes")


def test_streaming_job_reports_option_errors_before_starting_spark(capsys):
    status = order_totals_stream.main(["--bootstrap-servers", "b:1", "--topic", "t", "--checkpoint-dir", "c",
                                       "--starting-offsets", '{"t":{"0":"x"}}'])
    assert status == 2
    assert "startingOffsets" in capsys.readouterr().err


def test_replay_job_options():
    args = order_totals_replay.parse_arguments([
        "--bootstrap-servers", "b:9092", "--topic", "orders",
        "--starting-offsets-by-timestamp", '{"orders":{"0":1000}}', "--ending-timestamp", "5000",
        "--no-match-starts-at-latest", "--changelog-topic", "order-totals-v2"])
    assert order_totals_replay.source_options(args) == {
        "kafka.bootstrap.servers": "b:9092", "kafka.isolation.level": "read_committed", "subscribe": "orders",
        "startingOffsetsByTimestamp": '{"orders":{"0":1000}}', "endingTimestamp": "5000",
        "startingOffsetsByTimestampStrategy": "latest", "failOnDataLoss": "true"}
    with pytest.raises(SystemExit):  # one output at most
        order_totals_replay.parse_arguments(["--bootstrap-servers", "b", "--topic", "t",
                                             "--changelog-topic", "x", "--output-path", "y"])


# --- the Spark session and the connector's jars ---------------------------------------------------


def test_connector_coordinates_follow_the_installed_pyspark():
    import pyspark

    assert connector_coordinates() == f"org.apache.spark:spark-sql-kafka-0-10_2.13:{pyspark.__version__}"
    assert connector_coordinates("4.0.0") == "org.apache.spark:spark-sql-kafka-0-10_2.13:4.0.0"


def test_connector_jars_from_files_and_folders(tmp_path, monkeypatch):
    folder = tmp_path / "jars"
    folder.mkdir()
    for name in ("spark-sql-kafka-0-10_2.13-4.0.0.jar", "kafka-clients-3.9.0.jar", "notes.txt"):
        (folder / name).write_text("x")
    single = tmp_path / "commons-pool2-2.12.0.jar"
    single.write_text("x")
    monkeypatch.setenv(JARS_ENV, f"{folder},{single}")
    jars = connector_jars()
    assert [j.rsplit("/", 1)[1] for j in jars] == [
        "kafka-clients-3.9.0.jar", "spark-sql-kafka-0-10_2.13-4.0.0.jar", "commons-pool2-2.12.0.jar"]
    assert missing_connector_jars(jars) == ["spark-token-provider-kafka-0-10"]
    with pytest.raises(FileNotFoundError, match="does not exist"):
        connector_jars(str(tmp_path / "nope.jar"))
    assert connector_jars("") == []


def test_connector_jars_default_to_the_ones_setup_resolved_into_the_checkout(tmp_path, monkeypatch):
    monkeypatch.setattr(spark_session, "CHECKOUT_DEPS", tmp_path)
    monkeypatch.delenv(JARS_ENV, raising=False)
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    assert connector_jars() == [] and session_jars() == []  # not resolved: the job says how to add it
    folder = checkout_connector_folder()
    assert folder == tmp_path / "java" / f"spark-kafka-{connector_coordinates().rsplit(':', 1)[1]}"
    folder.mkdir(parents=True)
    for name in ("spark-sql-kafka-0-10_2.13-4.0.0.jar", "kafka-clients-3.9.0.jar"):
        (folder / name).write_text("x")
    resolved = [str(folder / "kafka-clients-3.9.0.jar"), str(folder / "spark-sql-kafka-0-10_2.13-4.0.0.jar")]
    assert connector_jars() == session_jars() == resolved
    assert session_jars("g:a:v") == []  # --packages brings the connector
    monkeypatch.setenv("PYSPARK_GATEWAY_PORT", "4040")
    assert session_jars() == []  # so does spark-submit
    own = tmp_path / "commons-pool2-2.12.0.jar"
    own.write_text("x")
    monkeypatch.setenv(JARS_ENV, str(own))
    assert session_jars() == session_jars("g:a:v") == [str(own)]  # the variable overrides
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT")
    monkeypatch.setenv(JARS_ENV, "")
    assert session_jars() == []  # set but empty: the checkout's jars are not used


def test_session_config():
    assert session_config(app_name="a", jars=["/x.jar", "/y.jar"], packages="g:a:v", master="local[2]") == {
        "spark.app.name": "a", "spark.master": "local[2]", "spark.jars": "/x.jar,/y.jar",
        "spark.jars.packages": "g:a:v"}
    assert session_config(app_name="a") == {"spark.app.name": "a"}  # spark-submit's settings stay


def test_missing_kafka_source_is_recognised():
    assert is_missing_kafka_source(Exception("[DATA_SOURCE_NOT_FOUND] Failed to find the data source: kafka."))
    assert not is_missing_kafka_source(Exception("[DATA_SOURCE_NOT_FOUND] Failed to find the data source: avro."))


# --- the Avro variant's options and schema checks (pipelines/avro_orders.py) --------------------

from pipelines import avro_orders  # noqa: E402
from pipelines.command_line import value_schemas  # noqa: E402


def _replay_args(*extra: str):
    return order_totals_replay.parse_arguments(["--bootstrap-servers", "127.0.0.1:1", *extra])


@pytest.mark.parametrize("extra, message", [
    (["--topic", "orders", "--value-format", "avro"], "--value-format avro needs --schema-registry-url"),
    (["--topic-pattern", "orders-.*", "--value-format", "avro", "--schema-registry-url", "http://127.0.0.1:1"],
     "--value-format avro reading several topics or a pattern needs --value-subject"),
    (["--topic", "a,b", "--value-format", "avro", "--schema-registry-url", "http://127.0.0.1:1"],
     "--value-format avro reading several topics or a pattern needs --value-subject"),
    (["--topic", "orders", "--schema-registry-url", "http://127.0.0.1:1"],
     "--schema-registry-url and --value-subject go with --value-format avro"),
])
def test_avro_options_are_checked_before_anything_starts(extra, message):
    with pytest.raises(OptionError, match=message.replace(".", r"\.").replace("*", r"\*")):
        value_schemas(_replay_args(*extra))


def test_json_values_need_no_registry():
    assert value_schemas(_replay_args("--topic", "orders")) is None


def test_an_unreachable_registry_is_one_line():
    with pytest.raises(avro_orders.SchemaRegistryError) as error:
        value_schemas(_replay_args("--topic", "orders", "--value-format", "avro",
                                   "--schema-registry-url", "http://127.0.0.1:1"))
    assert str(error.value).startswith("http://127.0.0.1:1/subjects/orders-value/versions: ")
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("schema, problem", [
    ('"string"', "is not an Avro record"),
    ("{not json", "is not JSON"),
    ('{"type": "record", "name": "O", "fields": [{"name": "order_id", "type": "string"}]}',
     "has no field amount_cents of type long or int (found None)"),
    ('{"type": "record", "name": "O", "fields": [{"name": "order_id", "type": "int"},'
     ' {"name": "amount_cents", "type": "long"}]}', "has no field order_id of type string (found 'int')"),
])
def test_the_latest_schema_must_describe_an_order(schema, problem):
    with pytest.raises(avro_orders.SchemaRegistryError, match=problem.replace("(", r"\(").replace(")", r"\)")):
        avro_orders.check_order_schema(schema, "orders-value")


def test_an_order_schema_with_more_fields_is_accepted():
    avro_orders.check_order_schema(
        '{"type": "record", "name": "O", "fields": [{"name": "order_id", "type": {"type": "string"}},'
        ' {"name": "amount_cents", "type": "int"}, {"name": "note", "type": ["null", "string"]}]}', "s")


def test_avro_coordinates_follow_pyspark():
    assert spark_session.avro_coordinates("4.0.0") == "org.apache.spark:spark-avro_2.13:4.0.0"
    assert spark_session.is_missing_avro(Exception("[AVRO_NOT_LOADED_SQL_FUNCTIONS_UNUSABLE] Cannot call"))
