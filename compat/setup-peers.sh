#!/usr/bin/env bash
# Resolves Kafka's heaviest clients from Maven Central for tests/integration/test_peers_*.py: Kafka
# Streams, the Connect runtime with connect-file, and MirrorMaker 2 (connect-mirror), at each reference
# version (compat/reference_kafka.py's REFERENCE_VERSIONS), from compat/peers/pom.xml into
# .deps/peers-<version>/libs; then compiles compat/peers/src/*.java (the Streams application, and
# the KafkaShareConsumer member of tests/integration/test_share_java.py) against them into
# .deps/peers-<version>/app.
#
# Idempotent: .deps/peers-<version>/BUILT holds a hash of the pom and the sources; when it matches,
# nothing is done.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT="$PWD"

log() { echo "setup-peers.sh: $*"; }

want="$(cat compat/peers/pom.xml compat/peers/src/*.java | sha256sum | cut -d' ' -f1)"
for version in $(.venv/bin/python -c 'from compat.reference_kafka import REFERENCE_VERSIONS; print(*REFERENCE_VERSIONS)'); do
    dest="$ROOT/.deps/peers-$version"
    if [ "$(cat "$dest/BUILT" 2>/dev/null || true)" = "$want" ]; then
        continue
    fi
    log "resolving Kafka Streams, Connect and MirrorMaker 2 $version (Maven Central) into $dest"
    rm -rf "$dest.part" && mkdir -p "$dest.part"
    if ! mvn -B -q --no-transfer-progress -f compat/peers/pom.xml -Dkafka.version="$version" \
            dependency:copy-dependencies -DoutputDirectory="$dest.part/libs" >"$dest.part/mvn.log" 2>&1; then
        tail -40 "$dest.part/mvn.log" >&2
        log "WARNING: Kafka Streams/Connect/MirrorMaker $version could not be resolved"
        exit 1
    fi
    javac -nowarn -d "$dest.part/app" -cp "$dest.part/libs/*" compat/peers/src/*.java
    echo "$want" > "$dest.part/BUILT"
    rm -rf "$dest" && mv "$dest.part" "$dest"  # a half-built folder never looks installed
done
