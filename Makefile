# ratesweep — see README.md. `make run` runs the main job, `make test` the tests.
GO      ?= go
BIN     := bin/ratesweep
export GOFLAGS := -buildvcs=false

.PHONY: all build run tables test vet unit duckdb bench clean test-redis

all: build

build:
	$(GO) build -o $(BIN) ./cmd/ratesweep

# The main job: the embedded default sweep into out/default.
run: build
	./$(BIN) run --force

# The lesson's tables (shared/SPEC.md).
tables: build
	./$(BIN) tables

vet:
	$(GO) vet ./...

unit:
	$(GO) test ./...

# Interop: DuckDB (npm @duckdb/node-api) reads the Parquet output and a SQL
# GROUP BY reproduces the lesson's summary table.
duckdb: build
	cd scripts/duckdb && npm ci --no-audit --no-fund --loglevel=error
	rm -rf $(CURDIR)/out/.duckdb-lesson
	./$(BIN) run configs/lesson-sweep.yaml --out $(CURDIR)/out/.duckdb-lesson --quiet
	node scripts/duckdb/check.mjs $(CURDIR)/out/.duckdb-lesson

test: vet unit duckdb

# Redis for real (docs/keys.md): the Lua scripts agree with the model decision
# by decision; nodes sharing one Redis with a sync lag. Installs redis-server
# if missing, starts it on a free loopback port, stops it by PID.
test-redis:
	bash scripts/test-redis.sh

clean:
	rm -rf bin out/.duckdb-lesson
