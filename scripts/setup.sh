#!/usr/bin/env bash
# Installs everything icount and its test suite need on a fresh Debian machine,
# then the icount package itself (editable, with the test extra).
#   bash scripts/setup.sh            # system packages (when missing) + python package
#   ICOUNT_SKIP_APT=1 bash scripts/setup.sh   # python package only
set -euo pipefail
cd "$(dirname "$0")/.."

# What each package is for:
#   valgrind        callgrind backend (icount run/serve/inline)
#   linux-perf      perf backend (real counts only where the PMU is exposed)
#   gcc, g++, binutils  test programs, servers and C++ fixtures; readelf/nm as reference tools
#   clang lld llvm  Mach-O fixtures (clang -target ...-apple-macos, ld64.lld, llvm-lipo,
#                   llvm-objdump, llvm-size) for icount size tests; wasm-ld for
#                   fixtures/size/build_wasm.sh, llvm-readobj and llvm-dwarfdump as the
#                   Wasm and DWARF reference tools
#   nginx-light     bundled nginx target for icount serve
#   nodejs          bundled Node http target for icount serve
#   nghttp2-client  h2load load generator; apache2-utils: ab; wrk: wrk
#   util-linux      setarch (ASLR off), taskset
#   time            GNU time: the peak RSS of --memory's native runs, and the tests' reference
#   chromium        headless browser that renders icount report pages in the tests
#                   (as root it needs --no-sandbox; tests/report/browser.py passes it)
#   rustc, golang-go  Rust and Go hello-worlds for icount size, and the go-http target
#                   (only when no rustc/go is on PATH: a rustup toolchain is used as it is)
#   npm             the express and bun targets' packages (only when no npm is on PATH)
#   default-jdk-headless  java and javac for the jvm-http target (only when no javac is on
#                   PATH; Debian's OpenJDK 17 here)
APT_PACKAGES=(valgrind linux-perf gcc g++ binutils clang lld llvm nginx-light nodejs
              nghttp2-client apache2-utils wrk util-linux procps time chromium
              lighttpd apache2-bin php-cli caddy)

command -v rustc >/dev/null || APT_PACKAGES+=(rustc)
command -v go >/dev/null || APT_PACKAGES+=(golang-go)
command -v npm >/dev/null || APT_PACKAGES+=(npm)
command -v javac >/dev/null || APT_PACKAGES+=(default-jdk-headless)

missing=()
if [[ -z "${ICOUNT_SKIP_APT:-}" ]]; then
  for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
fi
if ((${#missing[@]})); then
  echo "setup: installing system packages: ${missing[*]}"
  SUDO=""
  [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

PY=${PYTHON:-python3}
if ! $PY -m pip --version >/dev/null 2>&1; then
  echo "setup: installing pip for $PY"
  SUDO=""
  [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q python3-pip
fi
PIP_ARGS=(-q --disable-pip-version-check)
# Debian's own python3 refuses pip installs outside a virtual environment (PEP 668);
# icount is a command-line tool meant to be on PATH, so install it into that python anyway.
stdlib=$($PY -c 'import sysconfig; print(sysconfig.get_path("stdlib"))')
if [[ -f "$stdlib/EXTERNALLY-MANAGED" && -z "${VIRTUAL_ENV:-}" ]]; then
  PIP_ARGS+=(--break-system-packages)
fi
echo "setup: installing the icount package ($($PY --version))"
$PY -m pip install "${PIP_ARGS[@]}" -e '.[test]'
if ! command -v icount >/dev/null 2>&1; then
  # pip fell back to a user install (not root): its bin folder is often not on PATH yet
  echo "setup: the icount command is not on PATH; add $($PY -m site --user-base)/bin to PATH, or run '$PY -m icount'" >&2
fi

# The bundled targets' own packages, at the versions their adapters pin, fetched once into
# npm's and pip's caches: each `icount serve` session builds them into its own build
# folder (npm ci, a virtual environment), offline from these caches.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "setup: fetching the bundled targets' packages (express and bun from npm, uvicorn and gunicorn from PyPI)"
cp adapters/express/package.json adapters/express/package-lock.json "$tmp/"
npm ci --prefix "$tmp" --omit=dev --no-audit --no-fund --loglevel=error >/dev/null \
  || echo "setup: npm could not fetch express; icount serve will name it as not built"
mkdir "$tmp/bun"
cp adapters/bun-http/package.json adapters/bun-http/package-lock.json "$tmp/bun/"
npm ci --prefix "$tmp/bun" --omit=dev --no-audit --no-fund --loglevel=error >/dev/null \
  || echo "setup: npm could not fetch bun; icount serve bun-http will name it as not built"
$PY -m pip download -q --disable-pip-version-check -d "$tmp/wheels" \
  -r adapters/uvicorn/requirements.txt -r adapters/gunicorn/requirements.txt \
  || echo "setup: pip could not fetch uvicorn/gunicorn; icount serve will name them as not built"
echo "setup: done; try 'icount doctor'"
