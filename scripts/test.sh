#!/usr/bin/env bash
# The whole test suite: system packages, then every test target.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup-system.sh
cargo test --all-targets "$@"
