# ratesweep — see README.md. `make run` runs the main job, `make test` the tests.
GO      ?= go
BIN     := bin/ratesweep
export GOFLAGS := -buildvcs=false

.PHONY: all build run test vet unit check baseline bench clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/ratesweep

# The main job on the embedded default.
run: build
	./$(BIN) tables

vet:
	$(GO) vet ./...

unit:
	$(GO) test ./...

test: vet unit check

# Regression check: run the baseline's spec and compare it with the committed
# baseline (exit 1 when a number moved). `make baseline` accepts an intended
# change by rewriting configs/baselines/lesson/ from a fresh run.
CHECK_OUT ?= out/check-baseline-lesson
check: build
	./$(BIN) run configs/baseline-lesson.yaml --out $(CHECK_OUT) --force --quiet
	./$(BIN) check --baseline configs/baselines/lesson $(CHECK_OUT)

baseline: build
	./$(BIN) run configs/baseline-lesson.yaml --out $(CHECK_OUT) --force --quiet
	./$(BIN) check --update --baseline configs/baselines/lesson $(CHECK_OUT)

clean:
	rm -rf bin
