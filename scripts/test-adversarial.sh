#!/usr/bin/env bash
# make test-adversarial: the ownership, lock, symlink, escaping and forgery
# tests (forged rows and manifests, impossible metrics, named pipes in a
# run, shard counts, short error excerpts, commands that must end on a
# signal), a small kill campaign (SIGKILL, then --resume / merge again), the
# corrupt-part flips and a seeded campaign of random bit flips
# (RATESWEEP_FLIPS), the memory budgets' soak test (RATESWEEP_SOAK: a
# 16 GiB gzip of many members generated on the fly, an endless standard
# input; about two minutes), all with their temporary directories under one fresh
# TMPDIR; then asserts that nothing outside it changed: a sentinel directory
# beside it and the repository's work tree.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
root=$(mktemp -d "${TMPDIR:-/tmp}/ratesweep-adversarial.XXXXXX")
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/tmp" "$root/sentinel/points" "$root/sentinel/report"
# What a careless writer would hit: a project directory beside the runs.
printf 'name: q3\n' >"$root/sentinel/spec.yaml"
printf '# Q3\n' >"$root/sentinel/report/q3.md"
printf 'a,b\n1,2\n' >"$root/sentinel/points/mydata.csv"
printf 'mine\n' >"$root/sentinel/notes.txt"
snapshot() {
  (cd "$1" && find . -printf '%p %y %m %s\n' | LC_ALL=C sort && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum)
}
before_sentinel=$(snapshot "$root/sentinel")
before_tree=$(git status --porcelain --untracked-files=all 2>/dev/null || true)
export TMPDIR="$root/tmp" RATESWEEP_CRASH_KILLS=${RATESWEEP_CRASH_KILLS:-3} RATESWEEP_FLIPS=${RATESWEEP_FLIPS:-120} RATESWEEP_SOAK=${RATESWEEP_SOAK:-1}

$GO test -count=1 ./internal/runfs ./internal/textsafe ./internal/yamlx
$GO test -count=1 -run 'TestForce|TestRunRefusesLinkedTable|TestCancelThenResume|TestRunRefusals|TestGridSizeBeforeAllocation|TestRunSpillsPastItsBudget' ./sweep
$GO test -count=1 -run 'TestBudget' ./ingest
$GO test -count=1 -run 'TestUpdateBaseline|TestMarkdownInjection' ./check
$GO test -count=1 -run 'TestMarkdownEscapesNamesAndKeys' ./recommend
$GO test -count=1 -run 'FuzzTableWriters|FuzzClientsFigureSVG' ./report
$GO test -count=1 -run 'TestZonesReadBackFromYAML|TestShadowMaxMemory' ./export
$GO test -count=1 -timeout 40m -run 'TestAdversarial|TestCorruptPart|TestCheckRefusesWhatItCannotTrust|TestInputFilesBounded|TestPanicIsOneLine|TestErrorsEchoExcerpts|TestStdoutEscapesControlCharacters|TestReadersRefuse|TestNamedPipeInRunRefused|TestShardCountsBounded|TestErrorsQuoteShortExcerpts|TestSignalEndsBlockedCommand' ./cmd/ratesweep
$GO test -count=1 -tags crash -run 'TestCrashResume|TestCrashCompact' ./cmd/ratesweep

after_sentinel=$(snapshot "$root/sentinel")
after_tree=$(git status --porcelain --untracked-files=all 2>/dev/null || true)
fail=0
if [ "$before_sentinel" != "$after_sentinel" ]; then
  echo "test-adversarial: the sentinel directory beside the runs changed:" >&2
  diff <(echo "$before_sentinel") <(echo "$after_sentinel") >&2 || true
  fail=1
fi
if [ "$before_tree" != "$after_tree" ]; then
  echo "test-adversarial: the work tree changed:" >&2
  diff <(echo "$before_tree") <(echo "$after_tree") >&2 || true
  fail=1
fi
[ "$fail" = 0 ] && echo "test-adversarial: ok; nothing outside the test directories changed"
exit "$fail"
