#!/usr/bin/env bash
# Installs what the fault harness (compat/faults/, `kafka-wire compat faults`,
# tests/integration/test_faults.py) needs beyond ZooKeeper: Debian's iproute2 (ip netns, tc) and
# iptables (partitions and packet loss inside each namespace), fuse3 and libfuse2 with fusepy
# from PyPI (the power-loss filesystem, compat/faults/lazyfs.py). Idempotent: a stamp in
# .deps/stamps names what was installed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
STAMP=".deps/stamps/faults"
PACKAGES=(iproute2 iptables fuse3 libfuse2)
FUSEPY="fusepy==3.0.1"

log() { echo "setup-faults.sh: $*"; }

if [ "$(cat "$STAMP" 2>/dev/null || true)" = "${PACKAGES[*]} $FUSEPY" ] && command -v iptables >/dev/null \
        && command -v ip >/dev/null && .venv/bin/python -c "import fuse" 2>/dev/null; then
    exit 0
fi

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"
    elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo "$@"
    else log "cannot run as root: $*"; return 1
    fi
}

missing=()
for package in "${PACKAGES[@]}"; do
    dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
if [ "${#missing[@]}" -gt 0 ]; then
    log "installing ${missing[*]} (apt)"
    mkdir -p .deps/logs
    if ! { as_root env DEBIAN_FRONTEND=noninteractive apt-get update \
            && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"; \
          } >.deps/logs/setup-faults.log 2>&1; then
        tail -20 .deps/logs/setup-faults.log >&2
        exit 1
    fi
fi
if ! .venv/bin/python -c "import fuse" 2>/dev/null; then
    log "pip install $FUSEPY"
    .venv/bin/python -m pip install --disable-pip-version-check -q "$FUSEPY" >.deps/logs/setup-faults-pip.log 2>&1 \
        || { tail -20 .deps/logs/setup-faults-pip.log >&2; exit 1; }
fi
mkdir -p .deps/stamps
echo "${PACKAGES[*]} $FUSEPY" > "$STAMP"
