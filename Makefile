# ratesweep — see README.md. `make run` runs the main job, `make test` the tests.
GO      ?= go
BIN     := bin/ratesweep
export GOFLAGS := -buildvcs=false

.PHONY: all build run tables test vet unit docs golden duckdb check baseline cross test-windows dist actionlint bench bench-ingest bench-events bench-reactions bench-check bench-month test-redis test-browser clean test-crash test-slurm test-proxies fuzz-smoke test-limits test-race test-adversarial test-fail2ban traefik-recordings

all: build

# The commit a build from a clone names in --version and in every file's
# ratesweep.version (GOFLAGS turns Go's own VCS stamping off; git may be
# missing: the version then says so).
COMMIT   := $(shell git rev-parse HEAD 2>/dev/null)
MODIFIED := $(shell git status --porcelain --untracked-files=no 2>/dev/null | grep -q . && echo true)
LDFLAGS  := -X github.com/ratesweep/ratesweep/internal/version.commit=$(COMMIT) -X github.com/ratesweep/ratesweep/internal/version.modified=$(MODIFIED)

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/ratesweep

# The main job on the embedded default: the sweep, then its report
# (out/default/report/index.html).
run: build
	./$(BIN) run --force && ./$(BIN) report out/default

# The lesson's tables.
tables: build
	./$(BIN) tables

# go vet for this machine's platform (make cross vets the others).
vet:
	$(GO) vet ./...

# Refresh every golden file (export's configurations, recommend's
# renderings, the commands' help) and what docs generates: review the diff
# before committing it.
golden: docs
	$(GO) test ./export ./recommend ./cmd/ratesweep -count=1 -update

# Rewrite what is generated from the code: the tables in docs/
# (compatibility.md, algorithms.md) and the JSON Schemas in configs/.
docs:
	$(GO) test ./sweep -run TestCompatibilityDoc -count=1 -update-docs
	$(GO) run ./cmd/ratesweep schema spec > configs/ratesweep.schema.json
	$(GO) run ./cmd/ratesweep schema scenario > configs/scenario.schema.json

# Every package's tests, a line per package as it finishes and a "still
# running" line for one silent for 60 s (scripts/testprogress); vet runs
# in make vet, not again here. The long tests are in make test-long.
unit:
	$(GO) run ./scripts/testprogress -go $(GO) -vet=off ./...

# The tests that take minutes, in files tagged long (each package's
# long_test.go): large randomized differential tests (model: the fast
# paths, streamed workloads and lockstep batches against Run; sweep: log
# replays against the reference interpreter), key shards merged against
# every example log, every point of every committed grid, and a build
# from a fresh clone.
.PHONY: test-long
LONG_PKGS := ./model ./sweep ./cmd/ratesweep
test-long:
	$(GO) vet -tags long $(LONG_PKGS)
	$(GO) run ./scripts/testprogress -go $(GO) -tags long -vet=off -count=1 \
	  -run '^(TestRunFastEqualsRun|TestStreamedEqualsCompiled|TestRunLockstepEqualsRun|TestReferenceLogReplay|TestKeyShardsMergeEqualsWholeLog|TestGridPolicies|TestVersionNamesCommitOfClone)$$' \
	  -timeout 30m $(LONG_PKGS)

# ratesweep vs the peers (bench/peers: Node and numpy) on the bench and large grids,
# interleaved for 5 rounds (the Parquet runs 3 times a round: -ratio-runs;
# medians, minima, CPU beside wall, load average),
# with the pqarrow floor, a 10M-request log replay over 1,000 points and a
# day-long scenario, one table; installs numpy and GNU time if missing.
# Run it on a quiet machine. Smoke test: BENCHFLAGS=-quick (or
# RATESWEEP_BENCH_QUICK=1); others: -rounds N, -grids bench, -skip node.
bench: build
	bash bench/setup.sh
	$(GO) build -o bin/ratesweep-bench ./bench
	./bin/ratesweep-bench $(BENCHFLAGS)
	$(MAKE) --no-print-directory bench-ingest bench-events

# check on 10M points in bounded memory: time and peak RSS of `ratesweep
# check` on bench/10m.yaml against itself, an extended and a reordered grid
# (fails above a peak RSS of 500 MB). Writes three 10M-point runs under out/ once.
bench-check: build
	bash bench/check.sh

# A synthetic month (1e9 requests, 1M Zipf keys, 500 points) as 8 key
# shards one after another, beside the unsharded replay of a log that fits:
# peak RSS, CPU-s, decisions per CPU-second (hours and ~7 GB of disk; a
# smoke test: REQUESTS=200000 KEYS=5000 SPAN=86400 PER=10 FIT_REQUESTS=100000).
bench-month:
	bash bench/month.sh

# Event simulation speed in request decisions/s: the lesson scenario with
# Poisson arrivals under every algorithm, one key per client.
bench-events:
	$(GO) test ./model -run '^$$' -bench 'BenchmarkRun/poisson' -benchtime 300x
	$(MAKE) --no-print-directory bench-reactions

# Clients that react, at full size: a 3,600 s, 1,000-client
# scenario over 1,000 policies with reactions and, interleaved (A B A B), the
# open-loop event simulation of the same traffic and grid; median decisions/s
# of each and the load average, one core. REACT_ROUNDS rounds (default 2);
# REACT_POLICIES=100 runs an even fraction of the grid.
REACT_ROUNDS ?= 2
REACT_POLICIES ?= 1000
bench-reactions:
	$(GO) test ./model -run '^$$' -bench 'BenchmarkReactionsHour' -benchtime $(REACT_ROUNDS)x -timeout 0 -v -args -react-policies $(REACT_POLICIES)

# Interop: DuckDB (npm @duckdb/node-api) reads the Parquet output and a SQL
# GROUP BY reproduces the lesson's summary table.
duckdb: build
	cd scripts/duckdb && npm ci --no-audit --no-fund --loglevel=error
	rm -rf $(CURDIR)/out/.duckdb-lesson
	./$(BIN) run configs/lesson-sweep.yaml --out $(CURDIR)/out/.duckdb-lesson --quiet
	rm -rf $(CURDIR)/out/.duckdb-cost
	./$(BIN) run scripts/duckdb/cost-sweep.yaml --out $(CURDIR)/out/.duckdb-cost --quiet
	node scripts/duckdb/check.mjs $(CURDIR)/out/.duckdb-lesson $(CURDIR)/configs/baselines/lesson $(CURDIR)/out/.duckdb-cost

test: vet unit duckdb check

# Regression check: run the baseline's spec and compare it with the committed
# baseline (exit 1 when a number moved). `make baseline` accepts an intended
# change by rewriting configs/baselines/lesson/ from a fresh run.
CHECK_OUT ?= out/check-baseline-lesson
check: build
	./$(BIN) run configs/baseline-lesson.yaml --out $(CHECK_OUT) --force --quiet
	./$(BIN) check --baseline configs/baselines/lesson $(CHECK_OUT)

# Idempotent: when the fresh run passes the check without a metric new in the
# run, the committed files (whose metadata names the commit that wrote them)
# are left as they are.
baseline: build
	./$(BIN) run configs/baseline-lesson.yaml --out $(CHECK_OUT) --force --quiet
	@if out=$$(./$(BIN) check --baseline configs/baselines/lesson $(CHECK_OUT) 2>&1) && ! printf '%s' "$$out" | grep -q 'is new in the run'; then \
	  echo "baseline: configs/baselines/lesson already matches this tree's run; nothing rewritten"; \
	else ./$(BIN) check --update --baseline configs/baselines/lesson $(CHECK_OUT); fi

# docs/cloudflare.md and docs/cloudflare.png: sliding window counter vs exact
# sliding window on the three real logs, against Cloudflare's published 0.003%.
.PHONY: cloudflare
cloudflare:
	$(GO) run ./scripts/cloudflare -out docs

# Log ingest speed in lines/s: the real Combined logs repeated to 1M lines
# (parse only, streaming Reader, whole Build).
bench-ingest:
	$(GO) test ./ingest -run '^$$' -bench . -benchtime 5x

# Fuzz smoke run (CI): each target for a fixed number of executions from
# its committed corpus (testdata/fuzz/), about 20-60 s each on a 2-core
# machine; one go test line per target. Counts, not durations: with
# -fuzztime as a duration, Go's fuzzing coordinator can end a run that
# found nothing with "context deadline exceeded" on a loaded machine.
fuzz-smoke:
	$(GO) test ./ingest -run '^$$' -fuzz '^FuzzJSONL$$' -fuzztime 250000x
	$(GO) test ./ingest -run '^$$' -fuzz '^FuzzW3C$$' -fuzztime 150000x
	$(GO) test ./sweep -run '^$$' -fuzz '^FuzzParseSpec$$' -fuzztime 15000x
	$(GO) test ./model -run '^$$' -fuzz '^FuzzParseScenario$$' -fuzztime 60000x
	$(GO) test ./model -run '^$$' -fuzz '^FuzzPolicyLabel$$' -fuzztime 300000x
	$(GO) test ./report -run '^$$' -fuzz '^FuzzTableWriters$$' -fuzztime 30000x
	$(GO) test ./report -run '^$$' -fuzz '^FuzzFigureText$$' -fuzztime 30000x
	$(GO) test ./report -run '^$$' -fuzz '^FuzzClientsFigureSVG$$' -fuzztime 12000x

# Redis for real (docs/keys.md): the Lua scripts agree with the model decision
# by decision; nodes sharing one Redis with a sync lag. Installs redis-server
# if missing, starts it on a free loopback port, stops it by PID.
test-redis:
	bash scripts/test-redis.sh

# export for real (docs/deploy.md): nginx and HAProxy started on free
# loopback ports with exported configs agree with the model decision by
# decision on a replayed trace; installs nginx and haproxy if missing. Then
# the exported log_format through nginx read back at millisecond precision,
# and HAProxy's httplog lines with empty and missing fields (captures or
# none, no User-Agent, no Host, bad and aborted requests; raw and syslog).
test-proxies:
	bash scripts/test-proxies.sh
	PATH="$$PATH:/usr/sbin" $(GO) test -tags proxies -count=1 -run '^(TestHAProxyRateLive|TestPenaltyBoxLive|TestFail2banLive|TestHAProxyShadowLive)$$' -v ./export
	PATH="$$PATH:/usr/sbin" $(GO) test -tags proxies -count=1 -run 'TestProxiesNginxMsecReplay|TestProxiesHAProxyEmptyFields' -v ./ingest

# The fail2ban algorithm against fail2ban (Debian's package) alone, in real
# time (also part of test-proxies): bans start and end at the model's to the
# millisecond of the log's times, addresses that come back after a ban or
# whose count fail2ban rescales included, applied within 5 s.
test-fail2ban:
	PATH="$$PATH:/usr/sbin" $(GO) test -tags proxies -count=1 -run '^TestFail2banLive$$' -v ./export

# Traefik's own rateLimit middleware (github.com/traefik/traefik/v3
# v3.6.12) in virtual time on hostile traces: rewrites the recordings the
# model's traefik is checked against in make test (TestTraefikRecordings).
# A module of its own (scripts/traefik-oracle): a cold build fetches ~2.6 GB
# of modules and takes ~10 minutes.
traefik-recordings:
	cd scripts/traefik-oracle && $(GO) test -count=1 -timeout 30m -run '^TestRecord$$' -v . -args -out $(CURDIR)/model/testdata/traefik-recordings.csv.gz
	$(GO) test -count=1 -run '^TestTraefikRecordings$$' -v ./model

# The report page in a real browser (installs Debian's chromium if missing).
test-browser: build
	scripts/test-browser.sh $(BIN)

# SIGKILL at 20 random moments, --resume each time: same bytes as an
# uninterrupted run (cmd/ratesweep/crash_test.go; RATESWEEP_CRASH_SEED=N).
test-crash:
	$(GO) vet -tags crash ./cmd/ratesweep
	$(GO) test -tags crash -run "TestCrashResume|TestCrashCompact" -count=1 -v ./cmd/ratesweep

# Out of memory and out of disk with the real binary: a week of
# 5,000 clients under prlimit --as, and a sweep into a small tmpfs (root)
# resumed once space is freed.
test-limits:
	$(GO) vet -tags limits ./cmd/ratesweep
	$(GO) test -tags limits -run 'TestWeekUnderMemoryLimit|TestDiskFull' -count=1 -v ./cmd/ratesweep

# Adversarial inputs at a small size (a few minutes): --force beside user
# files, a second writer against a held lock, links out of the run
# directory, forged manifests under check --update, injected markup and
# control characters in every output, foreign files named by a spec, corrupt
# parts, 3 SIGKILLs of run and of merge --compact; then asserts that nothing
# outside the test directories changed (RATESWEEP_CRASH_KILLS=N for more).
test-adversarial:
	bash scripts/test-adversarial.sh

# The tests of the packages that start goroutines (the sweep's workers,
# writers and merge, the log replay's workers, recommend's streams, the
# command's signal watcher and its runs cancelled mid-way, testprogress's
# watcher) under the race detector; the other packages run on one goroutine.
RACE_PKGS := ./sweep ./ingest ./recommend ./cmd/ratesweep ./scripts/testprogress
test-race:
	$(GO) run ./scripts/testprogress -go $(GO) -race -vet=off -count=1 -timeout 30m $(RACE_PKGS)

# examples/slurm on a one-node Slurm cluster on localhost (root; installs
# slurm-wlm and munge with apt-get if missing): merged == single run.
test-slurm:
	scripts/test-slurm.sh

# Every release platform: go build for each, and go vet (which
# type-checks the tests too) for each but this machine's (make test vets it).
PLATFORMS := linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64
HOST       = $(shell $(GO) env GOOS)/$(shell $(GO) env GOARCH)
cross:
	@for p in $(PLATFORMS); do echo "cross: $$p"; \
	  if [ "$$p" != "$(HOST)" ]; then GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) vet ./... || exit 1; fi; \
	  GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) build ./... || exit 1; done

# The unit tests of the packages that need no Unix tools, built for
# windows/amd64 and run under Wine. Needs a Wine with bcryptprimitives.dll
# (Go 1.24+ binaries call ProcessPrng): Debian bookworm's Wine 8.0 has none,
# so CI vets and builds windows/amd64 only (make cross).
WINDOWS_TEST_PKGS ?= ./model ./sweep ./check ./recommend
test-windows:
	GOOS=windows GOARCH=amd64 $(GO) test -count=1 -exec wine $(WINDOWS_TEST_PKGS)

# The GitHub Actions example, linted by actionlint (go run: no install).
ACTIONLINT := github.com/rhysd/actionlint/cmd/actionlint@v1.7.12
actionlint:
	$(GO) run $(ACTIONLINT) examples/github-actions/ratesweep-check.yml

# Release archives under dist/: a stripped, reproducible binary per
# platform with LICENSE, NOTICE and README.md (tar.gz; zip for Windows),
# SHA256SUMS and a CycloneDX SBOM; then the linux/amd64 archive's binary is
# unpacked and run (--version, tables). Entries carry the commit's time.
RELEASE           := $(shell sed -n 's/^const release = "\(.*\)"/\1/p' internal/version/version.go)
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
CYCLONEDX         := github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@v1.10.0
dist:
	SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) $(GO) run ./scripts/dist -version $(RELEASE) -commit "$(COMMIT)" \
	  $(if $(MODIFIED),-dirty) -out dist -sbom "$(GO) run $(CYCLONEDX)" -platforms "$(PLATFORMS)"
	RATESWEEP_DIST_DIR=$(CURDIR)/dist RATESWEEP_DIST_PLATFORMS="$(PLATFORMS)" $(GO) test -count=1 -run TestArchive ./scripts/dist

clean:
	rm -rf bin dist out/.duckdb-lesson out/.duckdb-cost

# explore.html in headless Chromium, in real time, on 100,000 clients: file
# size, first render (budget 1 s) and a slider drag step (budget 100 ms).
# Run it on a quiet machine; CLIENTS=N ROUNDS=N KEEP=DIR (reuse a run);
# SETTINGS=50000: 50,090 settings of the lesson's scenario instead.
.PHONY: bench-explore
bench-explore: build
	scripts/bench-explore.sh $(BIN)
