# ratesweep — see README.md. `make run` runs the main job, `make test` the tests.
GO      ?= go
BIN     := bin/ratesweep
export GOFLAGS := -buildvcs=false

.PHONY: all build run tables test test-browser vet bench clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/ratesweep

# The main job on the embedded default: the sweep, then its report
# (out/default/report/index.html).
run: build
	./$(BIN) run --force && ./$(BIN) report out/default

# The lesson's tables.
tables: build
	./$(BIN) tables

vet:
	$(GO) vet ./...

test: vet
	$(GO) test ./...

# The report page in a real browser (installs Debian's chromium if missing).
test-browser: build
	scripts/test-browser.sh $(BIN)

clean:
	rm -rf bin
