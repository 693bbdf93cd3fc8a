#!/usr/bin/env bash
# kafka-topics.sh for librdkafka's test suite, which runs "$KAFKA_PATH/bin/kafka-topics.sh
# --bootstrap-server $BROKERS --create|--alter|--delete ..." to set up topics its admin API
# cannot (compat/librdkafka_suite.py points KAFKA_PATH here). Kafka's command line, carried out
# by `kafka-wire topics`, whose options are kafka-topics.sh's.
set -euo pipefail
action=""
args=()
for arg in "$@"; do
    case "$arg" in
        --create|--alter|--delete|--list|--describe) action="${arg#--}" ;;
        *) args+=("$arg") ;;
    esac
done
if [ -z "$action" ]; then
    echo "kafka-topics.sh: one of --create, --alter, --delete, --list, --describe is required" >&2
    exit 1
fi
exec "${KAFKA_WIRE_PYTHON:-python3}" -m cli topics "$action" "${args[@]}"
