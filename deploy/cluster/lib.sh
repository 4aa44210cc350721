# deploy/cluster/lib.sh holds what deploy/cluster/run and deploy/cluster/chaos share:
# installing the tools, building the server, migrating the database and starting the
# processes of the cluster on loopback. Source it after setting any of these (defaults):
# PORT (8080), PGBOUNCER_PORT (6432), REDIS_PORT (6390), CLUSTER_DATABASE (payments_cluster),
# API_PROCESSES (3), HTTP_REUSE (safe: HAProxy's http-reuse), FRESH_DATABASE (empty; set,
# prepare drops the database first), PGBOUNCER_MAX_PREPARED_STATEMENTS (empty; see prepare),
# PGBOUNCER_POOL_MODE (transaction, or session: see below),
# LISTEN_HOST (127.0.0.1; deploy/ha runs the cluster in a network namespace of its own, where
# HAProxy listens on every address).

# Go is installed under /usr/local/go on our machines, which sudo's secure_path leaves out.
if ! command -v go >/dev/null && [[ -x /usr/local/go/bin/go ]]; then
	export PATH="$PATH:/usr/local/go/bin"
fi

PORT=${PORT:-8080}
LISTEN_HOST=${LISTEN_HOST:-127.0.0.1}
PGBOUNCER_PORT=${PGBOUNCER_PORT:-6432}
REDIS_PORT=${REDIS_PORT:-6390}
DATABASE=${CLUSTER_DATABASE:-payments_cluster}
# API_PROCESSES (1 to 3, default 3) behind HAProxy: docs/scaling.md compares them.
API_PROCESSES=${API_PROCESSES:-3}
if [[ ! $API_PROCESSES =~ ^[1-3]$ ]]; then
	echo "API_PROCESSES=$API_PROCESSES: want 1, 2 or 3" >&2
	exit 2
fi
# HTTP_REUSE is HAProxy's http-reuse: when a request may go on an idle connection to an API
# process that another client's request opened.
HTTP_REUSE=${HTTP_REUSE:-safe}
if [[ ! $HTTP_REUSE =~ ^(never|safe|aggressive|always)$ ]]; then
	echo "HTTP_REUSE=$HTTP_REUSE: want never, safe, aggressive or always" >&2
	exit 2
fi
# PGBOUNCER_POOL_MODE is PgBouncer's pool_mode. In transaction pooling (the default) a server
# connection is lent for one transaction, so the processes' 20 connections each share
# PgBouncer's 20 and nothing may stay on one: no prepared statement (POOLED_EXEC_MODE in
# deploy/cluster/run). In session pooling a process's connection keeps its server connection
# while it is open, prepared statements with it, so pgx's default exec mode works and
# PostgreSQL plans a statement once per connection; each process then opens at most
# SESSION_POOL_CONNS (10) connections, and one more for /readyz's ping (an API's), and
# PgBouncer may open one for each of them.
PGBOUNCER_POOL_MODE=${PGBOUNCER_POOL_MODE:-transaction}
if [[ ! $PGBOUNCER_POOL_MODE =~ ^(transaction|session)$ ]]; then
	echo "PGBOUNCER_POOL_MODE=$PGBOUNCER_POOL_MODE: want transaction or session" >&2
	exit 2
fi
# pooled_query is the query of the processes' DATABASE_URL through PgBouncer, and
# pooler_prepared their DATABASE_POOLER_PREPARED_STATEMENTS (run and chaos pass them on).
SESSION_POOL_CONNS=10
if [[ $PGBOUNCER_POOL_MODE == session ]]; then
	pgbouncer_pool_size=$(((API_PROCESSES + 2) * (SESSION_POOL_CONNS + 1))) # the APIs and the two workers
	pooled_query="default_query_exec_mode=${POOLED_EXEC_MODE:-cache_statement}&pool_max_conns=$SESSION_POOL_CONNS"
	pooler_prepared=true
else
	pgbouncer_pool_size=20
	pooled_query="default_query_exec_mode=${POOLED_EXEC_MODE:-simple_protocol}"
	pooler_prepared=false
	if [[ -n ${PGBOUNCER_MAX_PREPARED_STATEMENTS:-} ]]; then
		pooler_prepared=true
	fi
fi
DEMO_KEY=sk_test_demo
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
direct_url="postgres://postgres@127.0.0.1:5432/$DATABASE?sslmode=disable"

# Stopped in two steps, apps first: a draining process still needs PgBouncer and Redis.
infra_pids=()
app_pids=()
stop_all() {
	stop_pids "${app_pids[@]}"
	stop_pids "${infra_pids[@]}"
	echo "logs kept in $dir"
}

# stop_pids PID...: SIGTERM, up to 10 s to drain, then SIGKILL.
stop_pids() {
	(($#)) || return 0
	kill -TERM "$@" 2>/dev/null || true
	for _ in $(seq 50); do
		kill -0 "$@" 2>/dev/null || break
		sleep 0.2
	done
	kill -KILL "$@" 2>/dev/null || true
	wait "$@" 2>/dev/null || true
}

# ensure_installed BINARY PACKAGE: apt-get installs PACKAGE when BINARY is missing.
apt_updated=
ensure_installed() {
	if [[ -x /usr/sbin/$1 || -x /usr/bin/$1 ]]; then
		return
	fi
	if [[ -z $apt_updated ]]; then
		apt-get update -qq
		apt_updated=1
	fi
	echo "installing $2"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2"
}

# start NAME COMMAND...: runs COMMAND in the background, its output in $dir/NAME.log.
start() {
	local name=$1
	shift
	"$@" >"$dir/$name.log" 2>&1 &
	case $name in
	redis | pgbouncer) infra_pids+=($!) ;;
	*) app_pids+=($!) ;;
	esac
}

# wait_for NAME COMMAND...: polls COMMAND for up to WAIT_SECONDS (30).
wait_for() {
	local name=$1
	shift
	for _ in $(seq $((5 * ${WAIT_SECONDS:-30}))); do
		if "$@" >/dev/null 2>&1; then
			return
		fi
		sleep 0.2
	done
	echo "$name did not come up; its log is in $dir" >&2
	exit 1
}

# render FILE: FILE with its ${...} filled in from the variables above.
render() {
	sed -e "s|\${LISTEN_HOST}|$LISTEN_HOST|g" -e "s|\${PORT}|$PORT|g" \
		-e "s|\${PGBOUNCER_PORT}|$PGBOUNCER_PORT|g" -e "s|\${DATABASE}|$DATABASE|g" \
		-e "s|\${CONFIG_DIR}|$dir|g" -e "s|\${HTTP_REUSE}|$HTTP_REUSE|g" -e "s|\${API1_PORT}|$((PORT + 1))|g" \
		-e "s|\${API2_PORT}|$((PORT + 2))|g" -e "s|\${API3_PORT}|$((PORT + 3))|g" \
		-e "s|\${POOL_MODE}|$PGBOUNCER_POOL_MODE|g" -e "s|\${POOL_SIZE}|$pgbouncer_pool_size|g" "$1"
}

# prepare: the tools installed, $dir made (removed of its processes on exit), payments-api
# built into it, the database created and migrated straight on PostgreSQL before any process
# starts, and PgBouncer's configuration written.
prepare() {
	ensure_installed haproxy haproxy
	ensure_installed pgbouncer pgbouncer
	ensure_installed redis-server redis-server
	ensure_installed pg_isready postgresql-client
	if ! pg_isready -q -h 127.0.0.1 -p 5432; then
		echo "PostgreSQL does not answer on 127.0.0.1:5432" >&2
		exit 1
	fi
	if [[ -n ${FRESH_DATABASE:-} ]]; then # psql comes with pg_isready
		psql -q -h 127.0.0.1 -U postgres -d postgres -c "DROP DATABASE IF EXISTS \"$DATABASE\" WITH (FORCE)"
	fi
	dir=$(mktemp -d -t payments-cluster.XXXXXX)
	chmod 755 "$dir" # PgBouncer drops root for the postgres user and must read its files
	trap stop_all EXIT
	trap 'exit 130' INT TERM # through the EXIT trap
	echo "logs and configuration in $dir"

	echo "building payments-api"
	(cd "$repo" && go build -o "$dir/payments-api" ./cmd/payments-api)
	DATABASE_URL=$direct_url "$dir/payments-api" migrate up

	render "$here/pgbouncer.ini" >"$dir/pgbouncer.ini"
	if [[ -n ${PGBOUNCER_MAX_PREPARED_STATEMENTS:-} ]]; then
		# PgBouncer 1.21 and later keep each client's named prepared statements, which lets the
		# API keep pgx's default exec mode; Debian 12's 1.18 refuses to start on the setting.
		echo "max_prepared_statements = $PGBOUNCER_MAX_PREPARED_STATEMENTS" >>"$dir/pgbouncer.ini"
	fi
	echo '"postgres" ""' >"$dir/userlist.txt"
	chmod 644 "$dir/pgbouncer.ini" "$dir/userlist.txt"
	pgbouncer_cmd=("$(command -v pgbouncer || echo /usr/sbin/pgbouncer)")
	if ((EUID == 0)); then
		pgbouncer_cmd+=(-u postgres) # PgBouncer refuses to run as root
	fi
	pgbouncer_cmd+=("$dir/pgbouncer.ini")
}

start_redis() {
	start redis redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --save "" --appendonly no
	wait_for Redis redis-cli -p "$REDIS_PORT" ping
}

start_pgbouncer() {
	start pgbouncer "${pgbouncer_cmd[@]}"
	wait_for PgBouncer pg_isready -q -h 127.0.0.1 -p "$PGBOUNCER_PORT" -U postgres -d "$DATABASE"
}

# start_haproxy: HAProxy on PORT in front of the APIs on PORT+1..API_PROCESSES; it does not
# wait for them.
start_haproxy() {
	local drop=() i
	for ((i = API_PROCESSES + 1; i <= 3; i++)); do
		drop+=(-e "/^ *server api$i /d")
	done
	render "$here/haproxy.cfg" | sed -e '' "${drop[@]}" >"$dir/haproxy.cfg"
	cp "$here/unavailable.http" "$dir/"
	start haproxy "$(command -v haproxy || echo /usr/sbin/haproxy)" -db -f "$dir/haproxy.cfg"
}
