# The two commands README.md gives: `make run` and `make test`.
GO ?= go

.PHONY: run test build bench

# Run the server with its defaults (http://127.0.0.1:8080).
run:
	$(GO) run ./cmd/server

# The whole test suite, as CI runs it.
test:
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 15m ./...

build:
	$(GO) build -o bin/agentmux ./cmd/server

# Benchmarks behind the figures in README.md (not part of `make test`).
bench:
	$(GO) test -run '^$$' -bench . -benchtime 5x ./ws/
	$(GO) test -run '^$$' -bench . ./sessions/
	$(GO) test -run '^$$' -bench . -benchtime 200x ./watcher/
