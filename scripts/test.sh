#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine, builds FreeToken (CUDA backend too when nvcc is present) with
# warnings as errors, and runs the whole test suite. Ends with ctest's summary line.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
jobs=$(nproc)
cmake --preset ci
cmake --build --preset ci -j "$jobs"
ctest --preset ci -j "$jobs"
