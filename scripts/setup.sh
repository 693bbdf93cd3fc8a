#!/usr/bin/env bash
# Sets up the broker: a virtualenv at .venv with this package installed editable.
# Idempotent: when pyproject.toml has not changed since the last install it only checks and exits.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PYTHON="${PYTHON:-python3}"
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    echo "setup.sh: $PYTHON is $("$PYTHON" --version 2>&1); kafka-wire needs Python >= 3.11" >&2
    exit 1
fi

if [ ! -x .venv/bin/python ]; then
    echo "setup.sh: creating .venv"
    "$PYTHON" -m venv .venv
fi

# Reinstall when pyproject.toml changed since the last install (the stamp holds its hash, so a
# fresh clone of the same pyproject does not reinstall) or the venv no longer has what it asks for.
stamp=.venv/.kafka-wire-setup
want="$(sha256sum pyproject.toml | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null || true)" != "$want" ] || [ ! -x .venv/bin/kafka-wire ] \
        || ! .venv/bin/python scripts/venv_is_current.py >/dev/null; then
    echo "setup.sh: pip install -e ."
    # Its output is kept in .venv/ and shown only when the install fails.
    if ! .venv/bin/python -m pip install --disable-pip-version-check -e . >.venv/setup.log 2>&1; then
        cat .venv/setup.log >&2
        exit 1
    fi
    echo "$want" > "$stamp"
fi
