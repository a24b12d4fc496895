#!/usr/bin/env bash
# make container-test: the container, end to end, with a real Docker engine.
#
#  1. makes sure the Dockerfile's base images are present (standins.sh:
#     pulled, or made here as local STAND-INS when Docker Hub is out of
#     reach: debian:bookworm-slim from debootstrap, node and golang from
#     it plus this machine's own Node and Go, each with this machine's CA
#     certificates and registry settings so that `npm ci` and `go mod
#     download` in the build reach the registries this machine reaches.
#     An image built on stand-ins is a test of this tree, not the image
#     the official bases would give; the output says which were used);
#  2. builds the image from this tree (tag agentmux:container-test);
#  3. starts it with docker-compose.yml, under a compose project of its
#     own (own container and volumes, a temporary workspace, a free port),
#     and waits for the health check;
#  4. creates two sessions and waits for their output on their screens;
#  5. `docker stop`s the container (timed; agentmux must exit 0) and
#     `docker start`s it again; after each start it reports how long until
#     `agentmux health` passes and until Docker says healthy (about one
#     health-check interval, 5s; a NOTE when it takes longer);
#  6. checks that both sessions are listed as idle with running: false, that
#     their saved screens replay over the WebSocket, and that they resume
#     (POST /api/sessions/<id>/resume: 200, running again, a live shell);
#  7. moves the port three ways, and checks that the container turns
#     healthy each time: --addr in the compose service's command (the
#     same project, recreated), AGENTMUX_ADDR, and AGENTMUX_ADDR=[::]:PORT
#     (asked on 127.0.0.1, so it works without IPv6 in the container);
#     the compose container, published on 127.0.0.1, must log "without
#     --token" as information, and those started by hand (docker run,
#     without AGENTMUX_PUBLISHED_HOST) as a warning;
#  8. builds the image with docker-compose 1.x as the README documents it
#     (`docker-compose build`: the legacy builder, no BuildKit) and starts
#     it until healthy; skipped, and said, without docker-compose 1.x;
#  9. starts the image on a workspace that is a git repository owned by
#     another uid (4242, as a bind mount from a host user who is not the
#     agent), and checks that a session's diff answers 200 and that a
#     worktree session starts. This needs agentmux to trust a workspace
#     owned by another uid (issue 28's workspace-trust change); without
#     it git refuses the repository and this step fails. It comes last,
#     so everything before it has been checked by then.
#
# It removes the containers and volumes it made on exit, whatever happens;
# it keeps the image (so the next build is warm) and the stand-ins.
#
# Needs: a Docker engine (BuildKit is used when there is one: the buildx
# plugin, or a docker CLI older than 23 with DOCKER_BUILDKIT=1; else the
# legacy builder), `docker compose` or docker-compose, Node 20 or later,
# git, and, where base images must be made here, root and debootstrap.
# See docs/container.md.
#
# Environment: CONTAINER_TEST_IMAGE (tag to build, default
# agentmux:container-test), CONTAINER_TEST_DOCKERFILE (default Dockerfile),
# STANDIN_PULL=0 (do not try to pull missing base images).

set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$here/../.."
image=${CONTAINER_TEST_IMAGE:-agentmux:container-test}
dockerfile=${CONTAINER_TEST_DOCKERFILE:-Dockerfile}

start=$EPOCHREALTIME
failed_step=
image_v1=
current_step=
step() {
	current_step=$*
	printf '\n== %s\n' "$*"
}
info() { printf '   %s\n' "$*"; }
fail() {
	failed_step=$current_step
	printf '\ncontainer-test: FAILED: %s\n' "$*" >&2
	exit 1
}
# Seconds since $1 (an $EPOCHREALTIME), with one decimal.
since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }

logdir=$(mktemp -d "${TMPDIR:-/tmp}/agentmux-container-test.XXXXXX")
project=agentmux-ctest-$$
workspace=$logdir/workspace
compose=()
compose_started=
extra_containers=()
v1_compose=()
standins=
summary=()

cleanup() {
	local rc=$?
	set +e
	trap - EXIT INT TERM
	if [ $rc != 0 ] && [ -n "$compose_started" ]; then
		"${compose[@]}" logs --no-color >"$logdir/compose.log" 2>&1
		printf '\n   last lines of the container log (all of it: %s):\n' "$logdir/compose.log" >&2
		tail -n 25 "$logdir/compose.log" | sed 's/^/   | /' >&2
	fi
	step "cleanup"
	for c in "${extra_containers[@]}"; do
		docker rm -f -v "$c" >/dev/null 2>&1 && info "removed container $c and its volume"
	done
	if [ ${#v1_compose[@]} != 0 ]; then
		"${v1_compose[@]}" down -v --remove-orphans >"$logdir/down-v1.log" 2>&1 &&
			info "removed the docker-compose 1.x project $project-v1"
	fi
	if [ -n "$compose_started" ]; then
		if "${compose[@]}" down -v --remove-orphans >"$logdir/down.log" 2>&1; then
			info "removed compose project $project: its container, network and volumes"
		else
			info "could not remove compose project $project (see $logdir/down.log); remove it with:"
			info "  docker ps -a --filter label=com.docker.compose.project=$project; docker volume ls --filter label=com.docker.compose.project=$project"
		fi
	fi
	# The workspace may hold files the container's uid made.
	for w in workspace workspace-v1 workspace-foreign; do
		rm -rf "${logdir:?}/$w" 2>/dev/null || docker run --rm -v "$logdir:/w" --user 0 --entrypoint rm "$image" -rf "/w/$w" >/dev/null 2>&1
	done
	if [ $rc = 0 ]; then
		rm -rf "$logdir"
		info "kept: images $image${image_v1:+ and $image_v1}, and the base images${standins:+ (stand-ins: $standins)}"
	else
		info "logs kept in $logdir"
	fi
	if [ ${#summary[@]} != 0 ]; then
		step "summary${failed_step:+ (up to the failure)}"
		printf '   %s\n' "${summary[@]}"
	fi
	if [ $rc = 0 ]; then
		printf '\ncontainer-test: PASSED in %ss\n' "$(since "$start")"
	else
		printf '\ncontainer-test: FAILED after %ss%s\n' "$(since "$start")" "${failed_step:+, at: $failed_step}" >&2
	fi
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ------------------------------------------------------------ preflight
step "preflight"
command -v docker >/dev/null || fail "no docker command"
docker info >/dev/null 2>"$logdir/info.err" || fail "no Docker engine answers: $(tail -n 1 "$logdir/info.err")"
client=$(docker version --format '{{.Client.Version}}')
engine=$(docker version --format '{{.Server.Version}}')
info "docker CLI $client, engine $engine"

# BuildKit when there is one, as most people build; the Dockerfile needs
# none of its features, and step 8 builds it with the legacy builder.
if docker buildx version >/dev/null 2>&1; then
	build=(docker buildx build --load --progress=plain)
	info "builder: BuildKit through buildx ($(docker buildx version | head -n 1))"
elif [ "${client%%.*}" -lt 23 ] 2>/dev/null; then
	build=(env DOCKER_BUILDKIT=1 docker build --progress=plain)
	info "builder: BuildKit through DOCKER_BUILDKIT=1 (docker CLI $client has it built in)"
else
	build=(env DOCKER_BUILDKIT=0 docker build)
	info "builder: the legacy builder (docker CLI $client has no buildx plugin, and refuses DOCKER_BUILDKIT=1 without it)"
fi

if docker compose version >/dev/null 2>&1; then
	compose=(docker compose)
elif command -v docker-compose >/dev/null; then
	compose=(docker-compose)
else
	fail "neither \`docker compose\` nor docker-compose is installed"
fi
info "compose: ${compose[*]} ($("${compose[@]}" version --short 2>/dev/null || "${compose[@]}" version | head -n 1))"

command -v git >/dev/null || fail "git is needed to make the workspace owned by another uid (step 9)"
command -v node >/dev/null || fail "node is needed for the session checks (Node 20 or later)"
node_cmd=(node)
if ! node -e 'process.exit(typeof WebSocket === "function" ? 0 : 1)' 2>/dev/null; then
	node_cmd=(node --no-warnings --experimental-websocket)
	"${node_cmd[@]}" -e 'process.exit(typeof WebSocket === "function" ? 0 : 1)' 2>/dev/null ||
		fail "node $(node -v) has no WebSocket; use Node 22, or Node 20.10 or later"
fi
info "node $(node -v) for the HTTP and WebSocket checks"

# ---------------------------------------------------------- base images
step "base images"
scripts/container/standins.sh "$dockerfile" 2>&1 | sed -u 's/^standins: /   /' ||
	fail "base images missing (above)"
# Stand-ins carry this label; images built FROM them inherit it, so ask
# each base image rather than `docker image ls --filter label=...`.
for ref in $(scripts/container/standins.sh --list "$dockerfile"); do
	if [ -n "$(docker image inspect --format '{{ index .Config.Labels "org.agentmux.standin" }}' "$ref" 2>/dev/null)" ]; then
		standins="${standins:+$standins }$ref"
	fi
done
if [ -n "$standins" ]; then
	info "NOTE: built on local stand-ins for $standins, not on the official images"
	summary+=("base images: local stand-ins for $standins (scripts/container/standins.sh)")
fi

# ---------------------------------------------------------------- build
step "build $image"
t=$EPOCHREALTIME
if ! "${build[@]}" -f "$dockerfile" -t "$image" \
	--build-arg AGENT_CLI= --build-arg AGENT_UID=1000 --build-arg AGENT_GID=1000 \
	--build-arg VERSION=container-test . >"$logdir/build.log" 2>&1; then
	tail -n 40 "$logdir/build.log" | sed 's/^/   | /'
	fail "docker build failed (whole log: $logdir/build.log)"
fi
# BuildKit says CACHED, the legacy builder "Using cache".
cached=$(grep -c -e ' CACHED$' -e 'Using cache' "$logdir/build.log" || true)
info "built in $(since "$t")s ($cached steps cached); $(docker image inspect --format '{{.Size}}' "$image" | awk '{ printf "%.0f MB", $1 / 1e6 }')"
healthcheck=$(docker image inspect --format '{{json .Config.Healthcheck}}' "$image")
info "HEALTHCHECK: $healthcheck"
# Its interval and start period in seconds (as JSON they are nanoseconds;
# 0 is Docker's default, 30s and 0s).
check_interval=$(docker image inspect --format '{{json .Config.Healthcheck.Interval}}' "$image" | awk '{ print ($1 ? $1 / 1e9 : 30) }')
check_start_period=$(docker image inspect --format '{{json .Config.Healthcheck.StartPeriod}}' "$image" | awk '{ print $1 / 1e9 }')
info "health check every ${check_interval}s, start period ${check_start_period}s"
new_check=
if grep -q '"agentmux","health"\|"/usr/local/bin/agentmux","health"' <<<"$healthcheck"; then
	new_check=1
	# An agentmux without the subcommand takes "health" for a stray
	# argument: the container would never become healthy.
	out=$(docker run --rm --entrypoint /usr/local/bin/agentmux "$image" health 2>&1 || true)
	if grep -q 'unexpected arguments' <<<"$out"; then
		fail "the image's HEALTHCHECK runs \`agentmux health\`, but this agentmux has no health subcommand (it says: $out)"
	fi
	info "agentmux health with no server: $out"
fi

# ----------------------------------------------------------- up (compose)
step "start with compose (project $project)"
port=$(node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })')
base=http://127.0.0.1:$port
mkdir -p "$workspace"
chmod 0755 "$logdir" "$workspace"
printf 'services:\n  agentmux:\n    image: %s\n' "$image" >"$logdir/compose.test.yml"
: >"$logdir/empty.env"
# Only this test's settings: no .env, and none of the caller's agentmux
# variables (a token would make every request here a 401).
unset AGENTMUX_TOKEN AGENTMUX_AGENT AGENTMUX_ALLOWED_ORIGINS AGENTMUX_ALLOWED_HOSTS AGENTMUX_PUBLISHED_HOST ANTHROPIC_API_KEY OPENAI_API_KEY
export AGENTMUX_PORT=$port WORKSPACE=$workspace AGENT_CLI= AGENT_UID=1000 AGENT_GID=1000 AGENTMUX_VERSION=container-test
compose=("${compose[@]}" -p "$project" --env-file "$logdir/empty.env" -f docker-compose.yml -f "$logdir/compose.test.yml")
compose_started=1
"${compose[@]}" up -d --no-build >"$logdir/up.log" 2>&1 || { cat "$logdir/up.log"; fail "compose up failed"; }
cid=$("${compose[@]}" ps -q agentmux)
[ -n "$cid" ] || fail "compose started no agentmux container"
info "container ${cid:0:12}, port 127.0.0.1:$port, workspace $workspace"

# wait_ready <container> <deadline-seconds> <since>: until `agentmux
# health`, run in the container as the HEALTHCHECK runs it, passes.
# Docker's first check, and so `healthy`, comes one interval after the
# start. Sets ready_after: seconds from <since> to agentmux's last
# "agentmux listening" line (its own timestamp; the first probe may come
# later, after a slow compose CLI).
ready_after=
wait_ready() {
	local c=$1 limit=$2 t0=$3 t
	until docker exec "$c" /usr/local/bin/agentmux health >/dev/null 2>&1; do
		if awk -v a="$t0" -v b="$EPOCHREALTIME" -v l="$limit" 'BEGIN { exit !(b - a > l) }'; then
			fail "\`agentmux health\` in ${c:0:12} did not pass within ${limit}s: $(docker exec "$c" /usr/local/bin/agentmux health 2>&1)"
		fi
		sleep 0.1
	done
	t=$(docker logs "$c" 2>&1 | grep 'msg="agentmux listening"' | tail -n 1 | sed -E 's/^time=([^ ]+) .*/\1/')
	ready_after=$(awk -v a="$t0" -v b="$(date -d "$t" +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
	info "agentmux listening ${ready_after}s after start (its log); \`agentmux health\` passes ($(since "$t0")s)"
}

# wait_healthy <container> <deadline-seconds> <since>: until Docker's
# health check passes. Fails when the container stops, turns unhealthy,
# or the deadline passes, showing the health check's last answers. Sets
# healthy_after: seconds from <since> to the end of Docker's first passing
# check, by Docker's own clock, which is when the container turned
# healthy (this loop, behind a slow CLI, may see it later).
wait_healthy() {
	local c=$1 limit=$2 t0=$3 st seen first
	while :; do
		st=$(docker inspect --format '{{.State.Status}} {{if .State.Health}}{{.State.Health.Status}}{{else}}no-healthcheck{{end}}' "$c")
		case $st in
		"running healthy")
			seen=$(since "$t0")
			# The log keeps the checks of earlier runs too: the first
			# passing one that started after this start.
			first=$(docker inspect --format '{{range .State.Health.Log}}{{.ExitCode}} {{.Start.Format "2006-01-02T15:04:05.000000000Z07:00"}} {{.End.Format "2006-01-02T15:04:05.000000000Z07:00"}}{{"\n"}}{{end}}' "$c" |
				while read -r code s e; do
					[ "$code" = 0 ] && awk -v a="$t0" -v b="$(date -d "$s" +%s.%N)" 'BEGIN { exit !(b > a) }' && { echo "$e"; break; }
				done)
			[ -n "$first" ] || fail "container ${c:0:12} is healthy, but its health log has no passing check since the start"
			healthy_after=$(awk -v a="$t0" -v b="$(date -d "$first" +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
			info "Docker says healthy ${healthy_after}s after start (its first passing check; seen here after ${seen}s)"
			return 0
			;;
		"running starting") ;;
		*) health_log "$c"; fail "container ${c:0:12} is $st" ;;
		esac
		if awk -v a="$t0" -v b="$EPOCHREALTIME" -v l="$limit" 'BEGIN { exit !(b - a > l) }'; then
			health_log "$c"
			fail "container ${c:0:12} not healthy within ${limit}s (still $st)"
		fi
		sleep 0.25
	done
}
health_log() {
	echo "   health check's last answers:" >&2
	docker inspect --format '{{if .State.Health}}{{range .State.Health.Log}}   | exit {{.ExitCode}}: {{.Output}}{{"\n"}}{{end}}{{end}}' "$1" >&2 || true
}
# The first check comes one interval after the start; a container not
# healthy by the end of the start period and one more interval (plus some
# slack for a slow machine) will not be.
health_deadline=$(awk -v i="$check_interval" -v p="$check_start_period" 'BEGIN { print p + i + 10 }')
# started <container> <what>: waits for the container to be ready and
# healthy, and adds the times to the summary.
started() {
	local t0
	t0=$(date -d "$(docker inspect --format '{{.State.StartedAt}}' "$1")" +%s.%N)
	if [ -n "$new_check" ]; then
		wait_ready "$1" $health_deadline "$t0"
	fi
	wait_healthy "$1" $health_deadline "$t0"
	if awk -v h="$healthy_after" -v i="$check_interval" 'BEGIN { exit !(h > i + 2) }'; then
		info "NOTE: healthy later than one health-check interval (${check_interval}s) after the start"
		health_log "$1"
	fi
	summary+=("$2: ${new_check:+agentmux listening ${ready_after}s after the start, }Docker said healthy after ${healthy_after}s (check interval ${check_interval}s)")
}
started "$cid" "first start"
info "log: $(docker logs "$cid" 2>&1 | grep -m 1 'agentmux listening' || echo '(no "agentmux listening" line)')"

# no_token_line <container> <level>: the start-up line about listening
# without a token must be there, at this level (INFO or WARN), once.
no_token_line() {
	local lines
	lines=$(docker logs "$1" 2>&1 | grep 'without --token' || true)
	grep -q "level=$2 " <<<"$lines" && [ "$(grep -c . <<<"$lines")" = 1 ] ||
		fail "container ${1:0:12}: want one $2 line about listening without a token; its lines: ${lines:-none}"
	info "${2,,}: $(sed -E 's/.*msg="([^"]*)".*/\1/' <<<"$lines" | cut -c1-150)..."
}
# compose publishes on 127.0.0.1 and says so in AGENTMUX_PUBLISHED_HOST.
no_token_line "$cid" INFO
if [ -n "$new_check" ]; then
	out=$(docker exec "$cid" agentmux health 2>&1) || fail "agentmux health in the running container: $out"
	info "docker exec ... agentmux health: $out (exit 0)"
fi

# ------------------------------------------------------------- sessions
step "create two sessions"
sessions=()
for n in one two; do
	id=$("${node_cmd[@]}" scripts/container/sessions.mjs create "$base" "$n" "hello-$n") ||
		fail "creating session $n"
	sessions+=("$id=hello-$n")
	info "session $n: $id, \"hello-$n\" on its screen"
done

# --------------------------------------------------------- stop, start
step "docker stop, docker start"
t=$EPOCHREALTIME
docker stop "$cid" >/dev/null || fail "docker stop failed"
stop_took=$(since "$t")
info "docker stop took ${stop_took}s (container stop timeout: $(docker inspect --format '{{if .Config.StopTimeout}}{{.Config.StopTimeout}}s{{else}}Docker default, 10s{{end}}' "$cid"))"
code=$(docker inspect --format '{{.State.ExitCode}}' "$cid")
docker logs "$cid" 2>&1 | grep -E 'msg="shutting down"|msg="shut down"|msg=stopped' | sed 's/^/   | /' || true
[ "$code" = 0 ] || fail "agentmux exited with $code on docker stop, not 0"
info "agentmux exited 0"
summary+=("docker stop: ${stop_took}s, agentmux exited 0")
docker start "$cid" >/dev/null || fail "docker start failed"
started "$cid" "docker start"

# ------------------------------------------------- restored and resumed
step "sessions after the restart"
"${node_cmd[@]}" scripts/container/sessions.mjs restored "$base" "${sessions[@]}" || fail "sessions were not restored"
step "resume"
"${node_cmd[@]}" scripts/container/sessions.mjs resume "$base" "${sessions[@]}" || fail "sessions did not resume"

# ------------------------------------------------ health check follows
# `agentmux health` runs as a process of its own, so it cannot see the
# server's flags: it finds the port in /data/agentmux.addr, which the
# server writes once it listens. Each case must turn healthy.
step "health check on a moved port"
moved_port=9091
printf 'services:\n  agentmux:\n    command: ["--addr", "0.0.0.0:%s"]\n' "$moved_port" >"$logdir/compose.moved.yml"
"${compose[@]}" -f "$logdir/compose.moved.yml" up -d --no-build >"$logdir/up-moved.log" 2>&1 ||
	{ cat "$logdir/up-moved.log"; fail "compose up with --addr failed"; }
cid=$("${compose[@]}" ps -q agentmux)
info "compose service recreated with command: --addr 0.0.0.0:$moved_port (AGENTMUX_ADDR still says 0.0.0.0:8080)"
started "$cid" "port moved with --addr in the compose command"
out=$(docker exec "$cid" /usr/local/bin/agentmux health 2>&1) || fail "agentmux health with --addr: $out"
grep -q "127.0.0.1:$moved_port/" <<<"$out" || fail "agentmux health did not ask port $moved_port: $out"
info "agentmux health: $out"

for addr in 0.0.0.0:9090 '[::]:9092'; do
	name=$project-addr${#extra_containers[@]}
	extra_containers+=("$name")
	docker run -d --name "$name" -e AGENTMUX_ADDR="$addr" "$image" >/dev/null || fail "docker run failed"
	info "docker run -e AGENTMUX_ADDR=$addr:"
	started "$name" "port moved with AGENTMUX_ADDR=$addr"
	out=$(docker exec "$name" /usr/local/bin/agentmux health 2>&1) || fail "agentmux health with AGENTMUX_ADDR=$addr: $out"
	info "agentmux health: $out"
	# Started by hand, without saying where it is published: it warns.
	no_token_line "$name" WARN
done
summary+=("without a token: compose's container (published on 127.0.0.1) logs it as information, containers started by hand warn")

# ------------------------------------------------ docker-compose 1.x
# As the README says a docker-compose 1.x user builds: `docker-compose
# build`, which without DOCKER_BUILDKIT=1 uses the legacy builder.
step "build and start with docker-compose 1.x (legacy builder)"
v1_version=
if command -v docker-compose >/dev/null; then
	v1_version=$(docker-compose version --short 2>/dev/null || true)
fi
if [ "${v1_version%%.*}" != 1 ]; then
	info "skipped: no docker-compose 1.x here${v1_version:+ (docker-compose is $v1_version)}"
	summary+=("docker-compose 1.x: skipped, not installed")
else
	image_v1=$image-compose-v1
	port_v1=$(node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })')
	mkdir -p "$logdir/workspace-v1"
	chmod 0755 "$logdir/workspace-v1"
	printf 'services:\n  agentmux:\n    image: %s\n' "$image_v1" >"$logdir/compose.v1.yml"
	v1_compose=(env -u DOCKER_BUILDKIT -u COMPOSE_DOCKER_CLI_BUILD AGENTMUX_PORT="$port_v1" WORKSPACE="$logdir/workspace-v1"
		docker-compose -p "$project-v1" --env-file "$logdir/empty.env" -f docker-compose.yml -f "$logdir/compose.v1.yml")
	t=$EPOCHREALTIME
	if ! "${v1_compose[@]}" build >"$logdir/build-v1.log" 2>&1; then
		tail -n 40 "$logdir/build-v1.log" | sed 's/^/   | /'
		fail "docker-compose $v1_version build failed (whole log: $logdir/build-v1.log)"
	fi
	# The legacy builder numbers its steps; BuildKit does not.
	grep -q '^Step 1/' "$logdir/build-v1.log" || fail "docker-compose build did not use the legacy builder (no \"Step 1/\" in $logdir/build-v1.log)"
	info "docker-compose $v1_version build: legacy builder, $(grep -c '^Step ' "$logdir/build-v1.log") steps ($(grep -c 'Using cache' "$logdir/build-v1.log") cached) in $(since "$t")s; $(docker image inspect --format '{{.Size}}' "$image_v1" | awk '{ printf "%.0f MB", $1 / 1e6 }')"
	"${v1_compose[@]}" up -d --no-build >"$logdir/up-v1.log" 2>&1 || { cat "$logdir/up-v1.log"; fail "docker-compose up failed"; }
	cid_v1=$("${v1_compose[@]}" ps -q agentmux)
	[ -n "$cid_v1" ] || fail "docker-compose started no agentmux container"
	info "container ${cid_v1:0:12}, port 127.0.0.1:$port_v1"
	started "$cid_v1" "docker-compose $v1_version (legacy builder) start"
	no_token_line "$cid_v1" INFO
	curl_out=$(node -e 'fetch(process.argv[1]).then(r => r.text()).then(t => console.log(t))' "http://127.0.0.1:$port_v1/api/health") ||
		fail "GET /api/health on the docker-compose 1.x container"
	info "GET /api/health: $curl_out"
fi

# ------------------------------------ a workspace owned by another uid
# A bind mount whose files belong to a host user who is not the agent
# (uid 1000 here): git refuses such a repository ("dubious ownership")
# unless agentmux trusts the workspace it was given. The files are
# writable by all, so that only git's ownership check stands in the way.
step "workspace owned by uid 4242 (needs issue 28's workspace-trust change)"
foreign=$logdir/workspace-foreign
mkdir -p "$foreign"
git -C "$foreign" init -q -b main
printf 'one\n' >"$foreign/notes.txt"
git -C "$foreign" add notes.txt
git -C "$foreign" -c user.name=test -c user.email=test@example.invalid commit -q -m first
printf 'two\n' >>"$foreign/notes.txt"
chmod -R a+rwX "$foreign"
chown -R 4242:4242 "$foreign"
info "git repository at $foreign, owned by $(stat -c %u:%g "$foreign"), notes.txt changed"
port_foreign=$(node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })')
name=$project-foreign
extra_containers+=("$name")
docker run -d --name "$name" -p "127.0.0.1:$port_foreign:8080" -v "$foreign:/workspace" \
	-e AGENTMUX_PUBLISHED_HOST=127.0.0.1 "$image" >/dev/null || fail "docker run failed"
started "$name" "workspace owned by uid 4242"
if ! "${node_cmd[@]}" scripts/container/sessions.mjs git "http://127.0.0.1:$port_foreign" notes.txt foreign-branch; then
	docker logs "$name" 2>&1 | tail -n 15 | sed 's/^/   | /' >&2
	fail "git in a workspace owned by another uid: the diff or the worktree session failed (above). This is expected until agentmux trusts a workspace owned by another uid (issue 28's workspace-trust change); with that change it must pass"
fi
summary+=("workspace owned by uid 4242: the session's diff answered 200, a worktree session started")
