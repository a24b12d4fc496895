# The two commands README.md gives: `make run` and `make test`.
GO ?= go

.PHONY: run test build bench web test-go test-ui test-unit bench-tool

# npm ci's record, in each package tree, of what it installed: the stamps
# of the rules that install the UI's packages and its tests' (below).
WEB_MODULES := web/node_modules/.package-lock.json
TEST_MODULES := web/test/node_modules/.package-lock.json

# Run the server with its defaults (http://127.0.0.1:8080), UI included.
# Flags go in ARGS: make run ARGS='--addr 127.0.0.1:9000 --agent shell'.
# At a terminal the server runs as a job of an interactive shell, which
# gives it the terminal: Ctrl+C reaches the server alone, which shuts down
# cleanly, and make exits with its status (make itself, interrupted,
# would always fail).
run: build
	@if [ -t 0 ]; then \
		exec bash --norc --noprofile -ic 'bin/agentmux "$$@"; exit $$? 2>/dev/null' agentmux $(ARGS); \
	else \
		exec bin/agentmux $(ARGS); \
	fi

# Build the browser UI into web/dist, which the server embeds. Bundling
# takes about a second; installing the packages takes longer, so it
# happens only when needed (below).
web: $(WEB_MODULES)
	cd web && npm run build

# npm packages are installed when the lockfile is newer than npm's own
# record of the last install (node_modules/.package-lock.json, written by
# npm ci), or when there is no node_modules at all, as in a fresh clone.
$(WEB_MODULES): web/package-lock.json web/package.json
	@echo "make: installing the UI's npm packages (web/package-lock.json changed or never installed)"
	cd web && npm ci --no-audit --no-fund

$(TEST_MODULES): web/test/package-lock.json web/test/package.json
	@echo "make: installing the UI tests' npm packages, among them the agents' CLIs (web/test/package-lock.json changed or never installed)"
	cd web/test && npm ci --no-audit --no-fund

# The whole test suite, as CI runs it: the Go tests, the UI's (its
# models' unit tests in node, then the browser tests in a headless
# Chromium, Debian's /usr/bin/chromium), then the Kubernetes manifests'
# checks. Each runs whatever the others did; each says how it
# ended, and the suite fails if any failed.
test:
	@go_status=0; ui_status=0; deploy_status=0; \
	$(MAKE) --no-print-directory test-go || go_status=$$?; \
	$(MAKE) --no-print-directory test-ui || ui_status=$$?; \
	$(MAKE) --no-print-directory test-deploy || deploy_status=$$?; \
	echo "make test: Go tests $$( [ $$go_status = 0 ] && echo passed || echo FAILED ), UI tests $$( [ $$ui_status = 0 ] && echo passed || echo FAILED ), deploy tests $$( [ $$deploy_status = 0 ] && echo passed || echo FAILED )"; \
	[ $$go_status = 0 ] && [ $$ui_status = 0 ] && [ $$deploy_status = 0 ]

test-go:
	@echo "make: compiling and running the Go tests (the first time on a machine, compiling takes a few minutes)"
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 15m ./...

test-ui: web $(TEST_MODULES)
	cd web && npm run typecheck
	$(MAKE) --no-print-directory test-unit
	cd web/test && npm test

# The unit tests of the UI's DOM-free parts (web/unit: the models, the
# terminal stream), in node without a browser: a few seconds.
test-unit: $(WEB_MODULES)
	cd web && npm run test:unit

# Go caches what it compiles: the first build on a machine compiles every
# dependency (about 4 minutes on a small machine), later ones take seconds.
build: web
	@echo "make: building bin/agentmux (the first build on a machine compiles every dependency and takes a few minutes; later builds take seconds)"
	$(GO) build -o bin/agentmux ./cmd/server

# Benchmarks behind the figures in docs/performance.md (not part of `make test`).
bench:
	$(GO) test -run '^$$' -bench . -benchtime 5x ./ws/
	$(GO) test -run '^$$' -bench . ./sessions/
	$(GO) test -run '^$$' -bench . -benchtime 200x ./watcher/
	$(GO) test -run '^$$' -bench . -benchtime 20x ./changes/

# The protocol-level benchmark (cmd/agentmux-bench, not part of `make
# test`): a freshly built server, driven over HTTP and its WebSocket from
# another process; the raw figures go to bin/bench.json. The server is
# built as the image builds it (static, stripped): its memory figures are
# the shipped binary's, without a C library mapped in beside it.
# TTYD=/path/to/ttyd measures ttyd beside it (cmd/agentmux-bench/README.md).
bench-tool:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w" -o bin/agentmux-bench-server ./cmd/server
	$(GO) run ./cmd/agentmux-bench --server-bin bin/agentmux-bench-server --json bin/bench.json $(if $(TTYD),--ttyd $(TTYD))

# The Kubernetes manifests in deploy/kubernetes (docs/kubernetes.md),
# rendered with kustomize and checked offline against the Dockerfile and
# the flags the server prints (agentmux --print-config). deploy/ is a Go
# module of its own, which `go test ./...` at the top does not enter; its
# dependencies download on first use.
.PHONY: test-deploy
test-deploy:
	cd deploy && $(GO) vet ./... && $(GO) test -count=1 ./...

# The container end to end, with a real Docker engine (not part of `make
# test`): builds the image, runs it with docker-compose.yml, creates two
# sessions, stops and starts the container, and checks that both are
# listed, show their screens and resume. Base images that cannot be pulled
# are made locally as stand-ins. What it needs: docs/container.md.
.PHONY: container-test
container-test:
	scripts/container/test.sh
