#!/usr/bin/env bash
# The whole test suite: a check that nothing it runs reads outside the repository
# (scripts/check-self-contained.sh), system packages, the sentence model the semantic tests
# need (scripts/fetch-model.sh, cached outside the repository; the semantic tests
# fail rather than skip here, QUARRY_REQUIRE_MODEL), every test target, quarry
# under real MCP clients (the Python SDK and the MCP Inspector), and a short soak:
# 16 socket clients for 5 s plus 2 kill -9 trials each during rebuild and serve,
# on the fixture data.
set -euo pipefail
cd "$(dirname "$0")/.."
# A whole-suite run builds once: incremental compilation's caches would only add
# gigabytes of disk (a fresh CI machine has little to spare) and time.
export CARGO_INCREMENTAL=${CARGO_INCREMENTAL:-0}
./scripts/check-self-contained.sh
./scripts/setup-system.sh
QUARRY_TEST_MODEL_DIR=$(./scripts/fetch-model.sh)
export QUARRY_TEST_MODEL_DIR QUARRY_REQUIRE_MODEL=1
# --- remote roots (issue #32) ---
# tests/remote_*.rs and the *_over_http / *_over_s3 / *_over_xrootd tests start nginx,
# xrootd and cmsd (a redirector and data server pair; all three installed above) and moto
# (an S3 server from PyPI, in a cached venv) on loopback ports themselves, with fault
# injectors in front of them, and stop them when they end; a missing nginx, xrootd or cmsd
# fails those tests, and moto is installed here and required so they fail rather than skip.
QUARRY_MOTO_SERVER=$(./scripts/setup-moto.sh)
export QUARRY_MOTO_SERVER QUARRY_REQUIRE_MOTO=1
# --- end remote roots ---
cargo test --workspace --all-targets "$@"
# The reader crates' examples (crates/*/README.md and their docs), as a user copies them.
cargo test --workspace --exclude quarry --doc
# --- slurm (issue 33): the cluster executor's tests on a single-node Slurm, started
# once for them and stopped after (they skip in the run above, which has no cluster).
slurm_dir=$(mktemp -d)
trap './scripts/slurm-local.sh stop "$slurm_dir"; rm -rf "$slurm_dir"' EXIT
./scripts/slurm-local.sh start "$slurm_dir" >/dev/null
SLURM_CONF="$slurm_dir/slurm.conf" QUARRY_SLURM_TESTS=1 cargo test --test integration "$@" cluster_slurm::
./scripts/slurm-local.sh stop "$slurm_dir"
# --- end slurm
# `cargo test` built target/debug/quarry for the integration tests: the clients and the
# soak use that one rather than build it again under the dev profile.
export QUARRY_DEBUG_BUILT=1
./scripts/test-clients.sh
SOAK_PROFILE=debug SOAK_DATA=fixtures SOAK_PIPELINE_DEPTH=20 SOAK_KILL_TRIALS=2 ./scripts/soak.sh 16 5
