#!/usr/bin/env bash
# Runs the test suite (the README's test command): installs what tests need, then pytest.
# Arguments go to pytest unchanged, e.g. `scripts/test.sh tests/unit -q`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup-tests.sh
exec .venv/bin/python -m pytest "$@"
