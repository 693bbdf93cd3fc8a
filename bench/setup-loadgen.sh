#!/usr/bin/env bash
# Builds bench/loadgen (franz-go, the release compat/franz-go pins, from the Go module proxy) into
# .deps/bench/loadgen: the load of bench/fanout.py's rows (1..1,000 producer connections, 100
# consumer groups) from one compiled process. Go's caches live under .deps/go, shared with
# compat/setup-franz-go.sh, so after that script this is a link step (seconds).
#
# Idempotent: when .deps/bench/loadgen.BUILT holds the hash of the sources and the binary exists,
# nothing is done.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT="$PWD"
SOURCE="$ROOT/bench/loadgen"
BINARY="$ROOT/.deps/bench/loadgen"
STAMP="$BINARY.BUILT"

want="$(cat "$SOURCE/go.mod" "$SOURCE/go.sum" "$SOURCE"/*.go | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$STAMP" 2>/dev/null || true)" = "$want" ] && [ -x "$BINARY" ]; then
    exit 0
fi
if ! command -v go >/dev/null; then
    echo "setup-loadgen.sh: no go toolchain on PATH; bench/loadgen cannot be built" >&2
    exit 1
fi
export GOPATH="$ROOT/.deps/go"
export GOMODCACHE="$GOPATH/pkg/mod"
export GOCACHE="$GOPATH/cache"
export GOFLAGS="-mod=readonly -buildvcs=false"
export GOTOOLCHAIN=local
mkdir -p "$(dirname "$BINARY")"
started=$SECONDS
(cd "$SOURCE" && go build -o "$BINARY.part" .)
mv "$BINARY.part" "$BINARY"
echo "$want" > "$STAMP"
echo "setup-loadgen.sh: built $BINARY in $((SECONDS - started))s"
