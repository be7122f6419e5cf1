#!/usr/bin/env bash
# The whole test suite: system packages, the sentence model the semantic tests
# need (scripts/fetch-model.sh, cached outside the repository), then every test
# target. The semantic tests fail rather than skip here (QUARRY_REQUIRE_MODEL).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup-system.sh
QUARRY_TEST_MODEL_DIR=$(./scripts/fetch-model.sh)
export QUARRY_TEST_MODEL_DIR QUARRY_REQUIRE_MODEL=1
cargo test --all-targets "$@"
