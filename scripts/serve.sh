#!/usr/bin/env bash
# Sets up kafka-wire (.venv) and runs a single-node broker on 127.0.0.1:9092 with its data under
# ./data (override with KAFKA_WIRE_DATA), its web console on http://127.0.0.1:9021/ (read-only;
# the broker logs the address as it starts) and its Schema Registry (Confluent's API) on
# http://127.0.0.1:8081/, Confluent's port. Extra arguments go to `kafka-wire serve`, e.g.
# `scripts/serve.sh --set num.partitions=3` or `--set console.read.only=false`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
data="${KAFKA_WIRE_DATA:-$PWD/data}"
echo "kafka-wire: data directory $data"
exec .venv/bin/kafka-wire serve \
    --set listeners=PLAINTEXT://127.0.0.1:9092 \
    --set "log.dirs=$data" \
    --set console.port=9021 \
    --set schema.registry.port=8081 \
    "$@"
