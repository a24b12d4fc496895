# The agentmux image. How to build, run and upgrade it: docs/container.md.
#
#   docker build -t agentmux:local .
#   docker build -t agentmux:local --build-arg AGENT_CLI=@anthropic-ai/claude-code .
#
# Stages: web (UI assets) and build (the Go binary, embedding them);
# agent-cli (an optional npm-distributed agent CLI with its own Node);
# then the runtime image, which takes only their results.
#
# Builds with BuildKit and with the legacy builder alike, so docker-compose
# 1.x and a docker CLI without the buildx plugin build it as they are. So
# there is no RUN --mount: the npm and Go downloads stay cached because the
# layers that make them come before the source is copied, and the Go
# standard library is compiled in a layer of its own. Any engine's built-in
# Dockerfile frontend builds it (HEALTHCHECK below avoids --start-interval,
# which builders before Engine 25 refuse). There is deliberately no
# `# syntax=` line: it would make every build fetch the frontend image from
# Docker Hub, so offline and mirror-only builds would fail at line 1.

# Node major version for the agent CLI (not for the UI build). Current agent
# CLIs want a recent one: @anthropic-ai/claude-code requires Node >= 22.
ARG AGENT_NODE_VERSION=24

# ---------------------------------------------------------------- web
# Builds the browser UI into web/dist, which the Go code embeds (go:embed
# in web/web.go); web/static is the page served when there is no build.
FROM node:20-bookworm-slim AS web
WORKDIR /src/web
# The dependencies first, so that editing the UI does not download them
# again. The source does not replace node_modules: .dockerignore leaves
# every node_modules out of the build context.
COPY web/package.json web/package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY web/ ./
RUN set -eu; \
    npm run build; \
    test -f dist/index.html

# ---------------------------------------------------------------- build
FROM golang:1.26-bookworm AS build
# The standard library, compiled once per base image with the flags of the
# build below (CGO_ENABLED=0, -trimpath), so that its build cache entries
# serve every later build: most of what a build compiles is the standard
# library (the build below takes 5s with it cached, 24s without, on two
# CPUs), and without BuildKit's cache mounts nothing else keeps it.
ENV CGO_ENABLED=0
RUN go build -trimpath std
WORKDIR /src
# Modules first, so that editing the code does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# Replace, not merge: files the UI build no longer produces must not linger.
RUN rm -rf web/dist
COPY --from=web /src/web/dist ./web/dist
# Late, so that a new version string reuses every layer above.
ARG VERSION=dev
RUN go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" \
        -o /out/agentmux ./cmd/server

# ---------------------------------------------------------------- agent-cli
# AGENT_CLI names one or more npm packages (space-separated, versions
# allowed), e.g. "@anthropic-ai/claude-code" or "@openai/codex". They are
# installed under /opt/node together with the Node and npm they run on,
# taken from this official Node image: bookworm's own nodejs is 18, too old
# for Claude Code, and its npm package brings hundreds of others. The
# image is bookworm like the runtime, so the copied node finds the same
# libraries there. With AGENT_CLI empty, /opt/node stays empty and the
# image has no Node at all.
FROM node:${AGENT_NODE_VERSION}-bookworm-slim AS agent-cli
ARG AGENT_CLI=""
RUN set -eu; \
    mkdir -p /opt/node; \
    if [ -n "$AGENT_CLI" ]; then \
        mkdir -p /opt/node/bin /opt/node/lib/node_modules; \
        cp /usr/local/bin/node /opt/node/bin/node; \
        cp -a /usr/local/lib/node_modules/npm /opt/node/lib/node_modules/npm; \
        ln -s ../lib/node_modules/npm/bin/npm-cli.js /opt/node/bin/npm; \
        ln -s ../lib/node_modules/npm/bin/npx-cli.js /opt/node/bin/npx; \
        PATH="/opt/node/bin:$PATH" npm install --global --prefix /opt/node \
            --no-audit --no-fund $AGENT_CLI; \
    fi

# ---------------------------------------------------------------- runtime
FROM debian:bookworm-slim

# The agent user's ids. Keep the defaults unless your host user's ids
# differ, on Linux: the workspace is a bind mount, and the agent can only
# write files its uid may write (see docs/container.md).
ARG AGENT_UID=1000
ARG AGENT_GID=1000

# git and bash for the agents; ca-certificates for HTTPS; procps for ps,
# top and kill in the terminals; less as git's pager; tini as PID 1.
#
# Nothing that nobody reads in a container, whatever the base image cleans
# by itself (the official one removes apt's caches, a debootstrapped one
# does not), and in the same RUN as the install, so that no layer keeps it:
# - dpkg leaves out documentation, man and info pages and translations
#   (LANG is C.UTF-8, whose messages are the programs' own) of every
#   package installed here or in an image built FROM this one; only the
#   copyright files stay, as the licences ask;
# - apt keeps no binary caches (pkgcache.bin, srcpkgcache.bin) and no
#   downloaded .deb files, for later installs too; the package lists go
#   at the end, with what the base already had of all these.
RUN set -eu; \
    printf '%s\n' \
        'path-exclude=/usr/share/doc/*' \
        'path-include=/usr/share/doc/*/copyright' \
        'path-exclude=/usr/share/man/*' \
        'path-exclude=/usr/share/info/*' \
        'path-exclude=/usr/share/locale/*' \
        'path-include=/usr/share/locale/locale.alias' \
        'path-exclude=/usr/share/lintian/*' \
        >/etc/dpkg/dpkg.cfg.d/agentmux-slim; \
    printf '%s\n' \
        'Dir::Cache::pkgcache "";' \
        'Dir::Cache::srcpkgcache "";' \
        'APT::Keep-Downloaded-Packages "false";' \
        >/etc/apt/apt.conf.d/agentmux-no-cache; \
    apt-get update; \
    apt-get install -y --no-install-recommends \
        bash ca-certificates git less procps tini; \
    apt-get clean; \
    rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/cache/debconf/*-old \
        /var/lib/dpkg/*-old /var/log/apt/* /var/log/dpkg.log /var/log/alternatives.log

# The group is named agent unless the image already has one with that gid.
# /data holds the session database (and last screens, which can show
# secrets), so only the agent user may read it.
RUN set -eu; \
    if ! getent group "$AGENT_GID" >/dev/null; then \
        groupadd --gid "$AGENT_GID" agent; \
    fi; \
    useradd --uid "$AGENT_UID" --gid "$AGENT_GID" --create-home \
        --home-dir /home/agent --shell /bin/bash agent; \
    install -d -o "$AGENT_UID" -g "$AGENT_GID" -m 0700 /data; \
    install -d -o "$AGENT_UID" -g "$AGENT_GID" -m 0755 /workspace

# The agent user owns the npm prefix, so `npm install -g` works for it and
# an agent CLI can update itself (the update lasts until the container is
# recreated; rebuild the image to keep one). It is kept out of /home/agent
# on purpose: that is a volume, whose old contents would hide a newer CLI
# after an upgrade.
COPY --from=agent-cli --chown=${AGENT_UID}:${AGENT_GID} /opt/node /opt/node
COPY --from=build /out/agentmux /usr/local/bin/agentmux

ENV PATH=/opt/node/bin:$PATH \
    LANG=C.UTF-8 \
    SHELL=/bin/bash \
    AGENTMUX_ADDR=0.0.0.0:8080 \
    AGENTMUX_DATA_DIR=/data \
    AGENTMUX_WORKSPACE=/workspace

WORKDIR /workspace
EXPOSE 8080
# Declared after /data is created and chowned: a new volume starts as a
# copy of the image's directory, owned by the agent user.
VOLUME ["/data"]
USER agent

# `agentmux health` asks the server that uses /data: the server writes the
# address it listens on to /data/agentmux.addr, so the check follows the
# port wherever --addr or AGENTMUX_ADDR moved it (without that file it
# asks AGENTMUX_ADDR). It GETs /api/health (which needs no token), on
# 127.0.0.1 for a wildcard address, and exits 0 for {"status":"ok"}, 1
# otherwise, with one line for `docker inspect`. The path is absolute, as
# in ENTRYPOINT: /opt/node/bin comes first on PATH and belongs to the
# agent user.
# Timing: every 5s, so the container is healthy about 5s after each start
# on every engine (--start-interval would make that a second, but needs
# Engine 25 to build and to run; the check is one local HTTP GET, cheap
# enough to run this often). Failures in the first 20s do not count
# (start-up: opening the database, which waits 2s for another holder,
# and stopping what a killed run left behind take well under that);
# after that, 3 failures in a row (about 15s) make it unhealthy.
HEALTHCHECK --interval=5s --timeout=3s --start-period=20s --retries=3 \
    CMD ["/usr/local/bin/agentmux", "health"]

# agentmux shuts down on SIGTERM: it tells clients, saves every session,
# sends SIGHUP to each agent's process group, SIGKILL after
# --shutdown-grace, and exits 0 within the grace period plus one second.
STOPSIGNAL SIGTERM

# tini is PID 1. It reaps the zombies of orphans re-parented to PID 1 (the
# agents' own go to agentmux, a child subreaper, which reaps those and kills
# them at shutdown), and it forwards signals to agentmux.
#   -s: register as a child subreaper too, so reaping still works when
#       something else is PID 1 (`docker run --init`, compose `init: true`,
#       a dev container's "init": true) instead of tini warning and relying
#       on that other init.
#   no -g: the signal goes to agentmux alone, not to its process group.
#       agentmux must get it first and alone: it is the one that stops the
#       agents, in order, with a grace period. (Agents run in sessions of
#       their own, so a group signal would not reach them anyway.)
# No CMD: arguments after the image name in `docker run` become agentmux
# flags, e.g. `docker run ... agentmux:local --log-level debug`.
ENTRYPOINT ["/usr/bin/tini", "-s", "--", "/usr/local/bin/agentmux"]
