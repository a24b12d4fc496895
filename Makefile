# The two commands README.md gives: `make run` and `make test`.
GO ?= go

.PHONY: run test build bench web test-go test-ui

# Run the server with its defaults (http://127.0.0.1:8080), UI included.
run: web
	$(GO) run ./cmd/server

# Build the browser UI into web/dist, which the server embeds.
web:
	cd web && npm ci --no-audit --no-fund && npm run build

# The whole test suite, as CI runs it: the Go tests, then the UI's in a
# headless Chromium (Debian's /usr/bin/chromium).
test: test-go test-ui

test-go:
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 15m ./...

test-ui: web
	cd web && npm run typecheck
	cd web/test && npm ci --no-audit --no-fund && npm test

build: web
	$(GO) build -o bin/agentmux ./cmd/server

# Benchmarks behind the figures in README.md (not part of `make test`).
bench:
	$(GO) test -run '^$$' -bench . -benchtime 5x ./ws/
	$(GO) test -run '^$$' -bench . ./sessions/
	$(GO) test -run '^$$' -bench . -benchtime 200x ./watcher/

# The protocol-level benchmark (cmd/agentmux-bench, not part of `make
# test`): a freshly built server, driven over HTTP and its WebSocket from
# another process; the raw figures go to bin/bench.json.
.PHONY: bench-tool
bench-tool:
	$(GO) build -o bin/agentmux-bench-server ./cmd/server
	$(GO) run ./cmd/agentmux-bench --server-bin bin/agentmux-bench-server --json bin/bench.json
