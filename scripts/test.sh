#!/usr/bin/env bash
# The whole test suite: system packages, every test target, quarry under real MCP
# clients (the Python SDK and the MCP Inspector), and a short soak: 16 socket clients
# for 5 s plus 2 kill -9 trials each during rebuild and serve, on the fixture data.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup-system.sh
cargo test --all-targets "$@"
./scripts/test-clients.sh
SOAK_PROFILE=debug SOAK_DATA=fixtures SOAK_PIPELINE_DEPTH=20 SOAK_KILL_TRIALS=2 ./scripts/soak.sh 16 5
