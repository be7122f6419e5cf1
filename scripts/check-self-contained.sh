#!/usr/bin/env bash
# Fails when anything the test suite runs names the project's shared folder beside the
# repository: a user's clone has no such folder, so a test, benchmark self-check or test
# script that reads it passes in CI and fails for everyone else. Test inputs are copied
# into the repository (testdata/, tests/data/) instead.
set -euo pipefail
cd "$(dirname "$0")/.."
pattern='\.\./shared'
suite=(src crates tests benches fuzz .ci scripts/test.sh scripts/test-clients.sh scripts/soak.sh
  scripts/setup-system.sh scripts/fetch-model.sh scripts/demo.sh)
if hits=$(git ls-files -z -- "${suite[@]}" | xargs -0 grep -n -- "$pattern"); then
  echo "check-self-contained: the test suite must not read the shared folder outside the repository:" >&2
  echo "$hits" >&2
  exit 1
fi
echo "check-self-contained: nothing the suite runs names the shared folder"
