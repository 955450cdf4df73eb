# kvlab — see README.md. `make` alone lists the targets.
GO      ?= go
# bash with pipefail, so `make bench`'s `go test | tee` fails when the tests do.
SHELL       := /bin/bash
.SHELLFLAGS := -o pipefail -c
BIN     := bin/labserver
WASMDIR := static/wasm

.PHONY: help run test wasm build dist e2e bench crash mutate fuzz lint clean

help:
	@echo "kvlab targets:"
	@echo "  make run     build everything and serve the course on http://127.0.0.1:8080 (ARGS=\"-addr ...\" for serve's flags)"
	@echo "  make test    vet, unit, crash, wasm (node) and browser tests"
	@echo "  make wasm    build the in-browser Go interpreter into $(WASMDIR)/"
	@echo "  make build   build $(BIN)"
	@echo "  make dist    release archives for Linux, macOS and Windows (amd64, arm64) with SHA256SUMS, in dist/"
	@echo "  make e2e     only the headless-Chromium tests; refreshes the README's screenshots in docs/"
	@echo "  make bench   Go benchmarks and kv vs bbolt vs pebble (ratios measured in one run)"
	@echo "  make crash   hundreds of SIGKILL and power-loss crash trials, and a crash after every filesystem operation of every configuration, each followed by a second crash"
	@echo "  make mutate  apply each durability mutant to a copy of the engine (and each crash-verdict mutant to the crash tool) and report which test kills it"
	@echo "  make fuzz    fuzz every Fuzz target (record decoder, recovery, hints, quiz expressions) for FUZZTIME=20s each"
	@echo "  make lint    gofmt, go vet for Linux, macOS and Windows, and a Windows build"
	@echo "  make clean   remove build output"

# The interpreter is rebuilt only when its Go sources (this module's
# packages it imports), go.mod, go.sum or the Go toolchain change, so `make
# run` after the first build starts in seconds. Only the gzipped file is
# kept: it is what browsers fetch, and the server decompresses it for the
# rare client that refuses gzip (embedding both adds 11 MB to the binary).
GOROOT   := $(shell $(GO) env GOROOT)
WASM_SRC  = $(filter-out %_test.go,$(wildcard $(addsuffix /*.go,$(shell GOOS=js GOARCH=wasm $(GO) list -deps -f '{{if .Module}}{{if eq .Module.Path "kvlab"}}{{.Dir}}{{end}}{{end}}' ./wasm/worker)))) go.mod go.sum $(GOROOT)/VERSION

wasm: $(WASMDIR)/yaegi.wasm.gz $(WASMDIR)/wasm_exec.js

$(WASMDIR)/yaegi.wasm.gz: $(WASM_SRC)
	@mkdir -p $(WASMDIR)
	GOOS=js GOARCH=wasm $(GO) build -trimpath -ldflags='-s -w' -o $(WASMDIR)/yaegi.wasm ./wasm/worker
	gzip -9 -f $(WASMDIR)/yaegi.wasm

$(WASMDIR)/wasm_exec.js: $(GOROOT)/lib/wasm/wasm_exec.js
	@mkdir -p $(WASMDIR)
	cp $< $@

# Built without cgo, as the release archives are: no C compiler is needed,
# and pebble's zstd compiles as pure Go instead of C.
build: wasm
	CGO_ENABLED=0 $(GO) build -o $(BIN) ./labserver

# Release archives: labserver for each OS and architecture with the
# interpreter embedded, so a student needs no Go. DIST_VERSION names them.
DIST_VERSION ?= $(shell date -u +%Y.%m.%d)
dist: wasm
	$(GO) run ./internal/dist/cmd -out dist -version $(DIST_VERSION)

# ARGS go to labserver serve: make run ARGS="-addr 127.0.0.1:8081".
ARGS ?=
run: build
	./$(BIN) serve $(ARGS)

lint:
	@out="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"; \
		if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	@# Students run labserver on their laptops: it must build for macOS and
	@# Windows too (no test runs on Windows here: README, "Windows").
	GOOS=darwin GOARCH=arm64 $(GO) vet ./...
	GOOS=windows GOARCH=amd64 $(GO) vet ./...
	GOOS=windows GOARCH=amd64 $(GO) build -o /dev/null ./labserver

# The lessons' claims are timings on this machine's disk: their package
# runs after the others, alone, so a browser test is not what it measures.
test: wasm lint
	$(GO) test -count=1 -timeout 40m $$($(GO) list ./... | grep -v '/lessons$$')
	$(GO) test -count=1 -timeout 40m ./lessons/

e2e: wasm
	$(GO) test -count=1 -run 'Browser' ./e2e/ -args -docs=$(CURDIR)/docs
	@shots=$$(mktemp -d) && KVLAB_SCREENSHOTS=$$shots $(GO) test -count=1 -run 'Browser' $$($(GO) list ./... | grep -v /e2e$$) && \
		cp $$shots/room-presenter-poll.png docs/presenter-poll.png && rm -r $$shots
	@echo "screenshots for the README saved in docs/ (screenshot.png, screenshot-dark.png, presenter-poll.png)"

bench: build
	@mkdir -p bench-results
	$(GO) test -run '^$$' -bench . -benchmem -count 3 ./engine/ ./harness/... ./internal/server/ ./internal/server/runq/ ./internal/archive/ ./wasm/grader/ ./wasm/wasmtest/ | tee bench-results/go-bench.txt
	./$(BIN) probe | tee bench-results/engines.txt
	./$(BIN) bench -engine kv,bbolt,pebble -sync always -workload fillrandom -ops 3000 -repeat 3 | tee -a bench-results/engines.txt
	./$(BIN) bench -engine kv,bbolt,pebble -sync always -threads 16 -workload fillrandom -ops 3000 -repeat 3 | tee -a bench-results/engines.txt
	./$(BIN) bench -engine kv,bbolt,pebble -sync group -threads 16 -workload fillrandom -ops 10000 -repeat 3 | tee -a bench-results/engines.txt
	./$(BIN) bench -engine kv,bbolt,pebble -sync none -workload fillrandom -ops 100000 -repeat 3 | tee -a bench-results/engines.txt
	./$(BIN) bench -engine kv,bbolt,pebble -sync none -threads 16 -workload fillrandom -ops 100000 -repeat 3 | tee -a bench-results/engines.txt
	./$(BIN) bench -engine kv,bbolt,pebble -sync none -workload readrandom -keys 100000 -ops 200000 -repeat 3 | tee -a bench-results/engines.txt
	./$(BIN) bench -script cart -engine kv,pebble,sqlite -index ordered -sync none -ops 20000 -items 10 -users 1000 | tee -a bench-results/engines.txt
	./$(BIN) bench -script mixed -engine null,kv -index ordered -sync none -ops 200000 | tee -a bench-results/engines.txt
	./$(BIN) bench -engine kv,pebble -workload reopen -keys 1000000 -repeat 3 | tee -a bench-results/engines.txt
	./$(BIN) bench -engine kv -workload reopen -keys 5000000 -repeat 3 | tee -a bench-results/engines.txt
	$(GO) test -count=1 -timeout 60m -run TestQuizBands ./lessons/ -args -bands=3 -bands-report=$(CURDIR)/bench-results/quiz-bands.txt
	$(GO) test -count=1 -timeout 20m -run TestModelPredictsBatch -v ./lessons/ -args -model-check=3 | tee bench-results/model-check.txt
	$(GO) test -count=1 -timeout 30m -run TestPredictionsDependOnTheDisk ./lessons/ -args -disks | tee bench-results/disks.txt
	$(GO) test -count=1 -timeout 60m -run TestCompactionTargets -v ./harness/ -args -compaction-target=3 -compaction-keys=1000000 -compaction-out=$(CURDIR)/bench-results/compaction.txt
	$(GO) test -count=1 -timeout 30m -run TestReplicationModelCheck -v ./harness/peers/ -args -replication-model-check=3 | tee bench-results/replication-model.txt
	@echo "results in bench-results/ (medians of 3; quote them with the probe line); quiz-bands.txt: the quizzes whose band is narrower than this disk's noise; replication-model.txt: the replication model against pg-sync and etcd at 0, 1 and 10 ms (target within 25 % on a quiet machine)"
	@echo "compaction.txt: kv's background compaction targets, as ratios: a 1M-key overwrite (x5, 128 B values, -sync none) keeps bytes on disk within 2x of live bytes; Put p99 compacting within 2x of p99 not compacting (kv with and without background compaction, interleaved rounds, median ratio)"

# KVLAB_CRASH_TRIALS also makes the crash-point tests enumerate in full
# (engine/crashpoints_test.go): every operation of every configuration,
# and a second crash after every first one, where make test samples.
crash:
	KVLAB_CRASH_TRIALS=300 $(GO) test -count=1 -timeout 60m -run 'Crash|PowerLoss' -v ./engine/...

# internal/mutate: one durability mutant at a time (internal/mutate/mutants/),
# go test ./engine/... on each (the crash- mutants of the crash tool's
# verdicts: the harness's crash tests); MUTATE="-run NAME" picks some.
MUTATE ?=
mutate:
	$(GO) run ./internal/mutate/cmd $(MUTATE)

# Every Fuzz function in the module, found with go test -list, so a new one
# is fuzzed without editing this file. FUZZTIME=5m make fuzz for a long run.
FUZZTIME ?= 20s
fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
		for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
			echo "== $$f ($$pkg, $(FUZZTIME))"; \
			$(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg; \
		done; \
	done

clean:
	rm -rf bin dist $(WASMDIR)/*.wasm $(WASMDIR)/*.wasm.gz $(WASMDIR)/wasm_exec.js
