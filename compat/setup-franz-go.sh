#!/usr/bin/env bash
# Downloads franz-go (the release pinned in compat/franz-go/go.mod) from the Go module proxy and
# compiles its pkg/kgo tests, unmodified, into one test binary: .deps/franz-go/kgo.test, for
# `kafka-wire compat franz-go` and tests/integration/test_franz_go.py (compat/franz_go_suite.py).
#
# The module zip holds the `_test.go` files; `go test -c` builds them. Go's module cache, build
# cache and GOPATH live under .deps/go/, so a fresh clone rebuilds everything here and a second
# run reuses it. A build from scratch takes about a minute on 2 cores.
#
# Idempotent: when .deps/franz-go/BUILT holds the hash of go.mod and go.sum and the binary
# exists, nothing is done.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT="$PWD"
MODULE="$ROOT/compat/franz-go"
DEST="$ROOT/.deps/franz-go"
BINARY="$DEST/kgo.test"
STAMP="$DEST/BUILT"

log() { echo "setup-franz-go.sh: $*"; }

want="$(cat "$MODULE/go.mod" "$MODULE/go.sum" | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$STAMP" 2>/dev/null || true)" = "$want" ] && [ -x "$BINARY" ]; then
    exit 0
fi
if ! command -v go >/dev/null; then
    log "no go toolchain on PATH; franz-go's kgo tests cannot be built"
    exit 1
fi

export GOPATH="$ROOT/.deps/go"
export GOMODCACHE="$GOPATH/pkg/mod"
export GOCACHE="$GOPATH/cache"
export GOFLAGS="-mod=readonly -buildvcs=false"
export GOTOOLCHAIN=local
mkdir -p "$DEST/logs"
out="$DEST/logs/build.log"
started=$SECONDS
version="$(awk '$1 == "require" && $2 == "github.com/twmb/franz-go" {print $3}' "$MODULE/go.mod")"
log "building franz-go $version pkg/kgo tests (go test -c; log in $out)"
rc=0
(cd "$MODULE" && go mod download -x github.com/twmb/franz-go \
    && go test -c -o "$BINARY.part" github.com/twmb/franz-go/pkg/kgo) >"$out" 2>&1 || rc=$?
if [ "$rc" -ne 0 ]; then
    tail -n 40 "$out" >&2
    log "build failed (exit $rc); full output in $out"
    exit "$rc"
fi
mv "$BINARY.part" "$BINARY"  # a half-written binary never looks built
echo "$want" > "$STAMP"
log "built $BINARY in $((SECONDS - started))s"
