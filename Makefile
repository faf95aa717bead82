# ratesweep — see README.md. `make run` runs the main job, `make test` the tests.
GO      ?= go
BIN     := bin/ratesweep
export GOFLAGS := -buildvcs=false

.PHONY: all build run test vet bench clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/ratesweep

# The main job on the embedded default.
run: build
	./$(BIN) tables

vet:
	$(GO) vet ./...

test: vet
	$(GO) test ./...

# ratesweep vs the peers (../shared/peers) on the bench and large grids, one
# table; installs numpy and GNU time if missing. BENCHFLAGS e.g. -repeat 5.
bench: build
	bash bench/setup.sh
	$(GO) build -o bin/ratesweep-bench ./bench
	./bin/ratesweep-bench $(BENCHFLAGS)

clean:
	rm -rf bin
