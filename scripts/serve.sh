#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine, builds ft (CPU preset) and serves the bundled tiny Qwen3-MoE model
# (toy tokenizer, Qwen3's chat template) on http://127.0.0.1:1919 — OpenAI and Anthropic APIs.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake --preset cpu
cmake --build --preset cpu -j "$(nproc)"
exec ./build/cpu/ft serve --model tests/data/models/qwen3_moe --served-model-name qwen3-moe-tiny "$@"
