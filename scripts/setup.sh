#!/usr/bin/env bash
# Installs every Debian package FreeToken's build, tests and benchmarks need (idempotent), plus the
# npm reference clients used by the tests (into tests/node_modules).
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake ninja-build pkg-config git ca-certificates
  nlohmann-json3-dev libgtest-dev libgmock-dev libbenchmark-dev
  libpcre2-dev libicu-dev libcpp-httplib-dev
  python3 python3-jinja2 curl
)
# Node.js and npm: Debian's, unless the machine already has a node with its own npm.
command -v npm >/dev/null 2>&1 || packages+=(nodejs npm)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Reference clients and tokenizers for the tests (pinned in tests/package.json); reinstalled when
# package.json is newer than what npm last installed.
if [ -f tests/package.json ] && { [ ! -f tests/node_modules/.package-lock.json ] ||
  [ tests/package.json -nt tests/node_modules/.package-lock.json ]; }; then
  (cd tests && npm install --no-audit --no-fund --loglevel=error)
fi
