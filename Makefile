# ratesweep — see README.md. `make run` runs the main job, `make test` the tests.
GO      ?= go
BIN     := bin/ratesweep
export GOFLAGS := -buildvcs=false

.PHONY: all build run test vet bench clean test-crash test-slurm

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

# SIGKILL at 20 random moments, --resume each time: same bytes as an
# uninterrupted run (cmd/ratesweep/crash_test.go; RATESWEEP_CRASH_SEED=N).
test-crash:
	$(GO) vet -tags crash ./cmd/ratesweep
	$(GO) test -tags crash -run TestCrashResume -count=1 -v ./cmd/ratesweep

# examples/slurm on a one-node Slurm cluster on localhost (root; installs
# slurm-wlm and munge with apt-get if missing): merged == single run.
test-slurm:
	scripts/test-slurm.sh

clean:
	rm -rf bin
