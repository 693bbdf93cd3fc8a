"""PySpark pipelines that run on the broker through Spark's own Kafka source and sink.

- `orders`: the order-totals view as pure DataFrame transformations (testable on static data).
- `order_totals_stream`: streaming job, orders topic -> compacted changelog topic, checkpointed.
- `order_totals_replay`: batch job that recomputes the view over an offset or time range.
- `kafka_options`, `spark_session`, `changelog_topic`, `command_line`: what the jobs share.

Run a job with `python -m pipelines.<job> --help`; they need Spark's Kafka connector
(spark-sql-kafka-0-10), see `spark_session`.
"""
