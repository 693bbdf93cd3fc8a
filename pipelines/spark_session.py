"""The SparkSession the pipelines run in, with Spark's Kafka connector on its classpath.

Spark's Kafka source and sink live in the connector spark-sql-kafka-0-10, which pyspark does not
ship. Four ways to provide it, the first that applies wins:

1. spark-submit --packages org.apache.spark:spark-sql-kafka-0-10_2.13:<pyspark version> ...
   (or --jars): Spark resolves it before the job starts; nothing to do here.
2. KAFKA_WIRE_SPARK_JARS: local jar files (or folders of jars), separated by commas or the
   path separator, put on the classpath through spark.jars. The connector needs four:
   spark-sql-kafka-0-10_2.13-<v>.jar, spark-token-provider-kafka-0-10_2.13-<v>.jar,
   kafka-clients-<the version the connector was built on>.jar, commons-pool2-<v>.jar.
   Set to an empty value, it turns 4. off.
3. --packages on the pipeline's command line: Maven coordinates set as spark.jars.packages;
   Spark downloads them (with their dependencies) from Maven Central on first use.
4. In a checkout: .deps/java/spark-kafka-<pyspark version>/, the jars --packages would add,
   which scripts/setup-tests.sh resolves from Maven Central (pipelines/connector/pom.xml).
"""

from __future__ import annotations

import os
from pathlib import Path

JARS_ENV = "KAFKA_WIRE_SPARK_JARS"
CHECKOUT_DEPS = Path(__file__).resolve().parent.parent / ".deps"
SCALA_BINARY_VERSION = "2.13"  # pyspark 4 is built for Scala 2.13 only


def connector_coordinates(spark_version: str | None = None) -> str:
    """Maven coordinates of the Kafka connector matching the installed pyspark."""
    if spark_version is None:
        import pyspark

        spark_version = pyspark.__version__
    return f"org.apache.spark:spark-sql-kafka-0-10_{SCALA_BINARY_VERSION}:{spark_version}"


def checkout_connector_folder(spark_version: str | None = None) -> Path:
    """Where scripts/setup-tests.sh resolves the connector's jars for this pyspark (they need not be there)."""
    if spark_version is None:
        import pyspark

        spark_version = pyspark.__version__
    return CHECKOUT_DEPS / "java" / f"spark-kafka-{spark_version}"


def connector_jars(value: str | None = None) -> list[str]:
    """The jar files KAFKA_WIRE_SPARK_JARS (or `value`) names; a folder stands for the jars in it.
    With the variable unset, the jars setup-tests.sh resolved into this checkout, if any.
    FileNotFoundError names what is missing, so a typo is not a "kafka source not found" later."""
    if value is None:
        value = os.environ.get(JARS_ENV)
        if value is None:
            folder = checkout_connector_folder()
            return sorted(str(jar) for jar in folder.glob("*.jar")) if folder.is_dir() else []
    jars: list[str] = []
    for item in (part.strip() for part in value.replace(os.pathsep, ",").split(",")):
        if not item:
            continue
        path = Path(item).expanduser()
        if path.is_dir():
            found = sorted(str(jar.resolve()) for jar in path.glob("*.jar"))
            if not found:
                raise FileNotFoundError(f"{JARS_ENV}: folder {path} holds no .jar file")
            jars += found
        elif path.is_file():
            jars.append(str(path.resolve()))
        else:
            raise FileNotFoundError(f"{JARS_ENV}: {path} does not exist")
    return jars


def missing_connector_jars(jars: list[str]) -> list[str]:
    """Which of the connector's four jars are not among `jars` (by file-name prefix)."""
    names = [Path(jar).name for jar in jars]
    needed = ["spark-sql-kafka-0-10_", "spark-token-provider-kafka-0-10_", "kafka-clients-", "commons-pool2-"]
    return [prefix.rstrip("_-") for prefix in needed if not any(name.startswith(prefix) for name in names)]


def session_config(*, app_name: str, master: str | None = None, packages: str | None = None,
                   jars: list[str] | None = None, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The Spark settings the pipelines ask for (pure; `build_session` applies them)."""
    config = {"spark.app.name": app_name}
    if master:
        config["spark.master"] = master
    if jars:
        config["spark.jars"] = ",".join(jars)
    if packages:
        config["spark.jars.packages"] = packages
    config.update(extra or {})
    return config


def build_session(*, app_name: str, master: str | None = None, packages: str | None = None,
                  extra: dict[str, str] | None = None):
    """A SparkSession (the running one under spark-submit) with the connector jars from
    KAFKA_WIRE_SPARK_JARS and the `packages` given; with neither, and not under spark-submit
    (which brings its own), the jars setup-tests.sh resolved into this checkout."""
    from pyspark.sql import SparkSession

    builder = SparkSession.builder
    for key, value in session_config(app_name=app_name, master=master, packages=packages,
                                     jars=session_jars(packages), extra=extra).items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def session_jars(packages: str | None = None) -> list[str]:
    """The jars for spark.jars: KAFKA_WIRE_SPARK_JARS's when set; else the checkout's, unless
    --packages or spark-submit provides the connector."""
    if JARS_ENV in os.environ or not (packages or under_spark_submit()):
        return connector_jars()
    return []


def under_spark_submit() -> bool:
    """spark-submit (or the pyspark shell) started this Python and its JVM: pyspark connects to
    that JVM through the gateway port it was given, and spark.jars is spark-submit's to set."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def is_missing_kafka_source(error: BaseException) -> bool:
    """Spark's answer when format("kafka") is used without the connector on the classpath."""
    text = str(error)
    return "kafka" in text.lower() and ("DATA_SOURCE_NOT_FOUND" in text or "Failed to find" in text)


def avro_coordinates(spark_version: str | None = None) -> str:
    """Maven coordinates of Spark's Avro module (from_avro) matching the installed pyspark."""
    return connector_coordinates(spark_version).replace(f"spark-sql-kafka-0-10_{SCALA_BINARY_VERSION}",
                                                        f"spark-avro_{SCALA_BINARY_VERSION}")


def is_missing_avro(error: BaseException) -> bool:
    """Spark's answer when from_avro is used without spark-avro on the classpath."""
    return "AVRO_NOT_LOADED" in str(error)


def missing_avro_help() -> str:
    return (f"Spark's Avro module (from_avro) is not on the classpath. Add {avro_coordinates()} to\n"
            f"--packages (comma-separated, beside the Kafka connector) or its jar to {JARS_ENV};\n"
            f"in a checkout, scripts/setup-tests.sh resolves it into {checkout_connector_folder()}.")


def missing_connector_help() -> str:
    return (f"Spark's Kafka connector is not on the classpath. Run with\n"
            f"  spark-submit --packages {connector_coordinates()} ...\n"
            f"or add --packages {connector_coordinates()} to this command (Spark downloads it from Maven Central),\n"
            f"or set {JARS_ENV} to the connector's jars (spark-sql-kafka-0-10, spark-token-provider-kafka-0-10,\n"
            f"kafka-clients, commons-pool2), comma-separated files or a folder,\n"
            f"or, in a checkout, run scripts/setup-tests.sh: it resolves them into {checkout_connector_folder()}.")
