#!/usr/bin/env bash
# Makes sure every base image the Dockerfile names is in the local image
# store, for a machine that cannot reach Docker Hub.
#
#   scripts/container/standins.sh [Dockerfile]
#   scripts/container/standins.sh --list [Dockerfile]   only names them
#
# For each base image (the FROM lines, with the Dockerfile's ARG defaults
# filled in): one already present is used as it is; a missing one is
# pulled; when the pull fails, the image is made here as a local STAND-IN
# with the same name, from this machine's own software:
#
#   debian:bookworm[-slim]   debootstrap --variant=minbase bookworm, from
#                            this machine's Debian mirror, imported with
#                            `docker import`
#   node:<N>-bookworm[-slim] the debian stand-in plus this machine's node
#                            and npm, laid out as in the official image
#   golang:<V>-bookworm      the debian stand-in plus this machine's Go
#
# Each stand-in also gets this machine's CA certificates and its registry
# settings (npm's registry and cafile, GOPROXY, GOSUMDB, GOFLAGS...), so
# that `npm ci` and `go mod download` in a build reach the registries this
# machine reaches. A stand-in is NOT the official image: it has a
# different version of Node or Go when this machine's differs from the
# tag (this script says so), and none of the official images' extras. Each
# carries the label org.agentmux.standin saying what it is, e.g.
#   docker image inspect --format '{{index .Config.Labels "org.agentmux.standin"}}' debian:bookworm-slim
# (images built FROM a stand-in inherit the label, so a label filter on
# `docker image ls` lists those too). Remove them (docker rmi) before
# building against the real images. They are made once and kept: the
# next run finds them present.
#
# Environment: STANDIN_PULL=0 skips the pull attempts; DEBIAN_MIRROR
# overrides the mirror read from /etc/apt/sources.list*.

set -euo pipefail

list_only=
if [ "${1:-}" = --list ]; then
	list_only=1
	shift
fi
dockerfile=${1:-Dockerfile}
[ -f "$dockerfile" ] || { echo "standins: no $dockerfile" >&2; exit 1; }

say() { printf 'standins: %s\n' "$*"; }
die() { printf 'standins: error: %s\n' "$*" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/agentmux-standins.XXXXXX")
trap 'rm -rf "$work"' EXIT

# ------------------------------------------------------------ base images
# FROM lines in order, skipping earlier stages and scratch. Global ARGs
# (those before the first FROM) fill in ${VAR} and $VAR.
base_images() {
	local line seen_from=0 img alias name val
	declare -A args=() stages=()
	while IFS= read -r line || [ -n "$line" ]; do
		line=${line%%#*}
		read -r -a w <<<"$line" || true
		[ ${#w[@]} -gt 0 ] || continue
		case "${w[0]^^}" in
		ARG)
			[ $seen_from = 0 ] || continue
			name=${w[1]%%=*}
			val=
			[[ ${w[1]} == *=* ]] && val=${w[1]#*=}
			val=${val%\"}; val=${val#\"}
			args[$name]=$val
			;;
		FROM)
			seen_from=1
			img= alias=
			for ((i = 1; i < ${#w[@]}; i++)); do
				case "${w[i]}" in
				--*) ;;
				[Aa][Ss]) alias=${w[i + 1]:-}; break ;;
				*) [ -z "$img" ] && img=${w[i]} ;;
				esac
			done
			for name in "${!args[@]}"; do
				img=${img//\$\{$name\}/${args[$name]}}
				img=${img//\$$name/${args[$name]}}
			done
			if [ "$img" != scratch ] && [ -z "${stages[$img]:-}" ]; then
				echo "$img"
			fi
			[ -n "$alias" ] && stages[$alias]=1
			;;
		esac
	done <"$dockerfile"
}

# ------------------------------------------------ this machine's settings
debian_mirror() {
	if [ -n "${DEBIAN_MIRROR:-}" ]; then echo "$DEBIAN_MIRROR"; return; fi
	local f uri
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		uri=$(awk '/^URIs:/ { for (i = 2; i <= NF; i++) if ($i ~ /\/debian\/?$/) { print $i; exit } }' "$f")
		[ -n "$uri" ] && { echo "${uri%/}"; return; }
	done
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -f "$f" ] || continue
		uri=$(awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^https?:\/\/.*\/debian\/?$/) { print $i; exit } }' "$f")
		[ -n "$uri" ] && { echo "${uri%/}"; return; }
	done
	echo http://deb.debian.org/debian
}

# The CA bundle this machine trusts (it may hold a proxy's CA).
ca_bundle() {
	local f
	for f in "${SSL_CERT_FILE:-}" /etc/ssl/certs/ca-certificates.crt; do
		[ -n "$f" ] && [ -s "$f" ] && { echo "$f"; return; }
	done
}

# npm settings that decide where packages come from; never auth tokens.
npm_settings() {
	command -v npm >/dev/null || return 0
	local key val
	for key in registry cafile strict-ssl proxy https-proxy noproxy; do
		val=$(npm config get "$key" 2>/dev/null) || continue
		case "$val" in "" | null | undefined) continue ;; esac
		# Defaults need not be written; the cafile is copied to the
		# image's own bundle path below.
		[ "$key" = registry ] && [ "$val" = https://registry.npmjs.org/ ] && continue
		[ "$key" = strict-ssl ] && [ "$val" = true ] && continue
		[ "$key" = cafile ] && val=/etc/ssl/certs/ca-certificates.crt
		echo "$key=$val"
	done
}

# ENV lines for Go's module settings and proxy variables set here.
go_env_lines() {
	local key val
	for key in GOPROXY GOSUMDB GONOSUMDB GONOPROXY GOPRIVATE GOINSECURE GOFLAGS; do
		val=$(go env "$key" 2>/dev/null) || continue
		[ -n "$val" ] && env_line "$key" "$val"
	done
	return 0
}

proxy_env_lines() {
	local key
	for key in HTTP_PROXY HTTPS_PROXY NO_PROXY http_proxy https_proxy no_proxy; do
		[ -n "${!key:-}" ] && env_line "$key" "${!key}"
	done
	return 0
}

label() { printf 'org.agentmux.standin="%s"' "$*"; }

# An ENV line with the value in double quotes.
env_line() {
	local v=${2//\\/\\\\}
	printf 'ENV %s="%s"\n' "$1" "${v//\"/\\\"}"
}

# ---------------------------------------------------------------- recipes
make_debian() { # debian:bookworm-slim
	local ref=$1 mirror rootfs bundle f
	command -v debootstrap >/dev/null || die "$ref: debootstrap is not installed (apt-get install debootstrap)"
	[ "$(id -u)" = 0 ] || die "$ref: debootstrap needs root"
	mirror=$(debian_mirror)
	rootfs=$work/rootfs
	say "$ref: debootstrap --variant=minbase bookworm from $mirror (about a minute)"
	if ! debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >"$work/debootstrap.log" 2>&1; then
		tail -n 20 "$work/debootstrap.log" >&2
		die "$ref: debootstrap failed"
	fi
	# apt sources as in the official image: the release, its updates and
	# security updates, all from this machine's mirror host.
	rm -f "$rootfs/etc/apt/sources.list"
	cat >"$rootfs/etc/apt/sources.list.d/debian.sources" <<-EOF
		Types: deb
		URIs: $mirror
		Suites: bookworm bookworm-updates
		Components: main
		Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

		Types: deb
		URIs: ${mirror%/debian}/debian-security
		Suites: bookworm-security
		Components: main
		Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
	EOF
	# This machine's CAs: the bundle for programs that read it (Go, npm
	# with cafile), and the local certificates, which the ca-certificates
	# package adds to its bundle when an image installs it.
	bundle=$(ca_bundle)
	if [ -n "$bundle" ]; then
		install -D -m 0644 "$bundle" "$rootfs/etc/ssl/certs/ca-certificates.crt"
	fi
	if compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
		mkdir -p "$rootfs/usr/local/share/ca-certificates"
		for f in /usr/local/share/ca-certificates/*.crt; do
			install -m 0644 "$f" "$rootfs/usr/local/share/ca-certificates/"
		done
	fi
	rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/log/*.log
	tar -C "$rootfs" --numeric-owner -c . | docker import \
		-c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
		-c 'CMD ["bash"]' \
		-c "LABEL $(label "debootstrap minbase bookworm from $mirror, with this machine's CA certificates")" \
		- "$ref" >/dev/null
	rm -rf "$rootfs"
}

ensure_debian() {
	docker image inspect debian:bookworm-slim >/dev/null 2>&1 || ensure debian:bookworm-slim
}

build_standin() { # ref context-dir
	if ! docker build -t "$1" "$2" >"$work/build.log" 2>&1; then
		tail -n 30 "$work/build.log" >&2
		die "$1: building the stand-in failed"
	fi
}

# warn_version <ref> <tool> <version> <bare version> <wanted>: the stand-in
# runs this machine's tool whatever its tag says; say so when the version
# is neither the one the tag names nor a release of it (20 takes 20.x.y).
warn_version() {
	local ref=$1 tool=$2 have=$3 bare=$4 want=$5
	if [ "$bare" != "$want" ] && [ "$bare" = "${bare#"$want".}" ]; then
		say "$ref: WARNING: this machine's $tool is $have, not $want; the stand-in tagged $ref runs $have"
	fi
}

make_node() { # node:<N>-bookworm[-slim]
	local ref=$1 want node npmdir have ctx
	want=${ref#node:}; want=${want%%-*}
	node=$(command -v node) || die "$ref: no node on this machine"
	node=$(readlink -f "$node")
	npmdir=$(npm root -g 2>/dev/null)/npm
	[ -f "$npmdir/bin/npm-cli.js" ] || die "$ref: npm not found at $npmdir"
	have=$("$node" -v)
	ensure_debian
	warn_version "$ref" Node "$have" "${have#v}" "$want"
	say "$ref: debian:bookworm-slim + this machine's node $have ($node) and npm $(npm -v)"
	ctx=$work/node
	mkdir -p "$ctx"
	cp "$node" "$ctx/node"
	cp -a "$npmdir" "$ctx/npm"
	npm_settings >"$ctx/npmrc"
	{
		echo 'FROM debian:bookworm-slim'
		echo 'COPY node /usr/local/bin/node'
		echo 'COPY npm /usr/local/lib/node_modules/npm'
		echo 'COPY npmrc /usr/local/etc/npmrc'
		echo 'RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \'
		echo ' && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx \'
		echo ' && node -v && npm -v'
		echo "ENV NODE_VERSION=${have#v} NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt"
		proxy_env_lines
		echo "LABEL $(label "node $have and npm from this machine on the debian:bookworm-slim stand-in")"
		echo 'CMD ["node"]'
	} >"$ctx/Dockerfile"
	build_standin "$ref" "$ctx"
	rm -rf "$ctx"
}

make_golang() { # golang:<V>-bookworm
	local ref=$1 want goroot have ctx
	want=${ref#golang:}; want=${want%%-*}
	command -v go >/dev/null || die "$ref: no go on this machine"
	goroot=$(go env GOROOT)
	have=$(go env GOVERSION)
	ensure_debian
	warn_version "$ref" Go "$have" "${have#go}" "$want"
	say "$ref: debian:bookworm-slim + this machine's $have ($goroot)"
	ctx=$work/golang
	mkdir -p "$ctx"
	cp -a "$goroot" "$ctx/go"
	{
		echo 'FROM debian:bookworm-slim'
		echo 'COPY go /usr/local/go'
		echo 'ENV GOLANG_VERSION='"${have#go}"' GOTOOLCHAIN=local GOPATH=/go \'
		echo '    PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
		go_env_lines
		proxy_env_lines
		echo 'RUN mkdir -p /go/src /go/bin && chmod -R 1777 /go && go version'
		echo 'WORKDIR /go'
		echo "LABEL $(label "$have from this machine on the debian:bookworm-slim stand-in")"
	} >"$ctx/Dockerfile"
	build_standin "$ref" "$ctx"
	rm -rf "$ctx"
}

ensure() {
	local ref=$1
	if docker image inspect "$ref" >/dev/null 2>&1; then
		local what
		what=$(docker image inspect --format '{{ index .Config.Labels "org.agentmux.standin" }}' "$ref" 2>/dev/null || true)
		say "$ref: present${what:+ (a stand-in: $what)}"
		return
	fi
	if [ "${STANDIN_PULL:-1}" != 0 ]; then
		if timeout 300 docker pull -q "$ref" >"$work/pull.log" 2>&1; then
			say "$ref: pulled"
			return
		fi
		say "$ref: cannot pull ($(tail -n 1 "$work/pull.log" | cut -c1-160)); making a local stand-in"
	fi
	local t0=$SECONDS
	case "$ref" in
	debian:bookworm-slim | debian:bookworm) make_debian "$ref" ;;
	node:*-bookworm-slim | node:*-bookworm) make_node "$ref" ;;
	golang:*-bookworm) make_golang "$ref" ;;
	*) die "$ref: not present, cannot be pulled, and there is no stand-in recipe for it" ;;
	esac
	say "$ref: stand-in made in $((SECONDS - t0))s"
}

mapfile -t images < <(base_images)
[ ${#images[@]} -gt 0 ] || die "no FROM lines found in $dockerfile"
if [ -n "$list_only" ]; then
	printf '%s\n' "${images[@]}"
	exit 0
fi
say "base images of $dockerfile: ${images[*]}"
for ref in "${images[@]}"; do
	ensure "$ref"
done
