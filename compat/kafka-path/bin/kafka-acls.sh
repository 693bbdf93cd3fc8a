#!/usr/bin/env bash
# kafka-acls.sh for librdkafka's test suite (0109, 0115, 0119 run "$KAFKA_PATH/bin/kafka-acls.sh
# --bootstrap-server $BROKERS --add|--remove ..."): Kafka's command line, carried out by
# `kafka-wire acls`, whose options are kafka-acls.sh's.
set -euo pipefail
exec "${KAFKA_WIRE_PYTHON:-python3}" -m cli acls "$@"
