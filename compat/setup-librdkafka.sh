#!/usr/bin/env bash
# Builds librdkafka's own integration test suite (tests/test-runner) from Debian's `librdkafka`
# source package, into .deps/librdkafka/, for `kafka-wire compat` and tests/integration/test_compat.py.
#
# Steps: enable deb-src in the apt sources (a file of ours under /etc/apt/sources.list.d/),
# `apt-get source librdkafka`, install the package's Build-Depends, then librdkafka's own
# `./configure && make libs && make -C tests build`. The test binary links against the
# librdkafka built beside it (the suite's run-test.sh sets LD_LIBRARY_PATH=../src:../src-cpp,
# and so does compat/librdkafka_suite.py).
#
# Idempotent and cached: when .deps/librdkafka/BUILT names a test-runner that exists, nothing
# is done. A build from scratch takes about a minute and a half on 2 cores.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT="$PWD"
DEST="$ROOT/.deps/librdkafka"
STAMP="$DEST/BUILT"   # one line: the source directory whose tests/test-runner is built
SOURCES_FILE=/etc/apt/sources.list.d/kafka-wire-deb-src.sources
# Debian's Build-Depends of librdkafka (less debhelper, which only the .deb packaging uses),
# plus what any C/C++ build needs and dpkg-source for `apt-get source`.
BUILD_DEPS=(build-essential pkg-config dpkg-dev python3 liblz4-dev libsasl2-dev libssl-dev libzstd-dev
            rapidjson-dev zlib1g-dev)

log() { echo "setup-librdkafka.sh: $*"; }

if [ -f "$STAMP" ] && [ -x "$(cat "$STAMP")/tests/test-runner" ]; then
    exit 0
fi

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"
    elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo "$@"
    else log "cannot run as root: $*"; return 1
    fi
}

mkdir -p "$DEST/logs"
# Runs a noisy step with its output in .deps/librdkafka/logs/NAME.log; shows the end of it on failure.
quietly() {
    local name="$1"; shift
    local out="$DEST/logs/$name.log" rc=0
    "$@" >"$out" 2>&1 || rc=$?
    if [ "$rc" -ne 0 ]; then
        tail -n 60 "$out" >&2
        log "step '$name' failed (exit $rc); full output in $out"
    fi
    return "$rc"
}

# Writes deb-src twins of the machine's Debian deb entries (deb822 .sources files, or one-line
# entries in sources.list), so `apt-get source` can find the source package.
enable_deb_src() {
    local tmp
    tmp="$(mktemp)"
    python3 - "$tmp" <<'PY'
import glob, re, sys
out = []
for path in sorted(glob.glob("/etc/apt/sources.list.d/*.sources")):
    if path.endswith("kafka-wire-deb-src.sources"):
        continue
    for stanza in re.split(r"\n\s*\n", open(path).read()):
        fields = dict(re.findall(r"^([A-Za-z-]+):\s*(.*)$", stanza, re.M))
        if "deb" in fields.get("Types", "").split() and "debian" in fields.get("URIs", "") \
                and "Enabled: no" not in stanza:
            lines = [f"{key}: {value}" for key, value in fields.items() if key != "Types"]
            out.append("Types: deb-src\n" + "\n".join(lines))
one_line = []
for path in ["/etc/apt/sources.list", *sorted(glob.glob("/etc/apt/sources.list.d/*.list"))]:
    try:
        text = open(path).read()
    except OSError:
        continue
    for line in text.splitlines():
        if re.match(r"^deb\s", line) and "debian" in line:
            one_line.append("deb-src" + line[3:])
if one_line:  # deb822 cannot hold one-line entries: keep them as written, in a .list twin
    open(sys.argv[1] + ".list", "w").write("\n".join(one_line) + "\n")
open(sys.argv[1], "w").write("\n\n".join(out) + ("\n" if out else ""))
PY
    if [ -s "$tmp" ]; then as_root cp "$tmp" "$SOURCES_FILE"; fi
    if [ -s "$tmp.list" ]; then as_root cp "$tmp.list" "${SOURCES_FILE%.sources}.list"; fi
    rm -f "$tmp" "$tmp.list"
}

started=$SECONDS
if ! apt-cache showsrc librdkafka 2>/dev/null | grep -q '^Package: librdkafka'; then
    log "enabling deb-src in the apt sources ($SOURCES_FILE)"
    enable_deb_src
    quietly apt-update as_root env DEBIAN_FRONTEND=noninteractive apt-get update
fi

missing=()
for package in "${BUILD_DEPS[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ "${#missing[@]}" -gt 0 ]; then
    log "installing build dependencies: ${missing[*]}"
    quietly apt-install as_root env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y --no-install-recommends "${missing[@]}"
fi

log "apt-get source librdkafka"
work="$DEST/source.partial"
rm -rf "$work"
mkdir -p "$work"
# apt drops root privileges to _apt for downloads; _apt cannot write into the project tree.
chmod 0777 "$work" 2>/dev/null || true
(cd "$work" && quietly apt-source apt-get source librdkafka)
src="$(find "$work" -mindepth 1 -maxdepth 1 -type d -name 'librdkafka-*' | head -n 1)"
[ -n "$src" ] || { log "apt-get source produced no librdkafka-* directory"; exit 1; }
version="$(basename "$src")"
final="$DEST/$version"
rm -rf "$final"
mv "$src" "$final"
rm -rf "$work"

jobs="$(nproc 2>/dev/null || echo 2)"
log "building $version and its tests/ (make -j$jobs; logs in $DEST/logs/)"
# --disable-curl: Debian builds the package without libcurl (not in its Build-Depends).
(cd "$final" && quietly configure ./configure --disable-curl)
(cd "$final" && quietly make-libs make -j"$jobs" libs)
(cd "$final/tests" && quietly make-tests make -j"$jobs" build)
[ -x "$final/tests/test-runner" ] || { log "no tests/test-runner after the build"; exit 1; }
echo "$final" > "$STAMP"
log "built $final/tests/test-runner in $((SECONDS - started))s"
