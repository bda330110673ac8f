#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine, builds ft (CPU preset) and runs the main job on the bundled tiny model.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake --preset cpu
cmake --build --preset cpu -j "$(nproc)"
exec ./build/cpu/ft run --model tests/data/models/qwen3_moe --tokens 1,2,3,4,5 --max-tokens 16 "$@"
