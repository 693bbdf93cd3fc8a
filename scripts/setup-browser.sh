#!/usr/bin/env bash
# The console's browser tests (tests/console/): Debian's chromium (apt) driven by playwright-core
# (npm, pinned in tests/console/package.json, installed into .deps/playwright). playwright-core
# never downloads a browser; the tests hand it /usr/bin/chromium. Idempotent (stamp in
# .deps/stamps/playwright). Called from scripts/setup-tests.sh.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
DEPS="$PWD/.deps"
mkdir -p "$DEPS/stamps" "$DEPS/logs"
log() { echo "setup-browser.sh: $*"; }
quietly() {
    local out="$DEPS/logs/last-install.log" rc=0
    "$@" >"$out" 2>&1 || rc=$?
    [ "$rc" -eq 0 ] || cat "$out" >&2
    return "$rc"
}
as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"
    elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo "$@"
    else log "cannot run as root: $*"; return 1
    fi
}

if ! command -v chromium >/dev/null; then
    log "installing chromium (apt)"
    quietly as_root env DEBIAN_FRONTEND=noninteractive apt-get update
    quietly as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium fonts-dejavu-core
fi

manifest="tests/console/package.json"
stamp="$DEPS/stamps/playwright"
want="$(sha256sum "$manifest" | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null || true)" != "$want" ] || [ ! -d "$DEPS/playwright/node_modules/playwright-core" ]; then
    log "npm install playwright-core into .deps/playwright"
    mkdir -p "$DEPS/playwright"
    cp "$manifest" "$DEPS/playwright/package.json"
    # PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD: playwright-core downloads nothing, but say it anyway.
    PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 quietly npm install --prefix "$DEPS/playwright" --no-audit --no-fund
    echo "$want" > "$stamp"
fi
