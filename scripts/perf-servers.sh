# scripts/perf-servers.sh is sourced by scripts/perf, scripts/perf-clients, scripts/perf-ab
# and scripts/pgo-profile: it builds what they run and starts the server as they measure it
# (start_api), beside the floor (start_servers). It expects $out (the logs' directory) and
# pids (an array the caller's exit trap kills); build_binaries and start_servers also $bin
# (the binaries' directory) and $server (PostgreSQL's URL without a database).

# ready URL waits up to 30 s for URL to answer at all.
ready() {
	for _ in $(seq 300); do
		curl -s -o /dev/null "$1" && return 0
		sleep 0.1
	done
	echo "$1 did not answer" >&2
	return 1
}

# free PORT fails when something already answers on 127.0.0.1:PORT: a server left from an
# earlier run would answer in place of the one started, which could not listen.
free() {
	if curl -s -m 2 -o /dev/null "http://127.0.0.1:$1/"; then
		echo "127.0.0.1:$1 already answers: stop what listens there first" >&2
		return 1
	fi
}

# build_binaries builds the server, the load tool and the floor into $bin, installs
# stripe-mock v0.197.0 beside them, and starts it on 127.0.0.1:12111.
build_binaries() {
	echo "building into $bin"
	go build -o "$bin/payments-api" ./cmd/payments-api
	go build -o "$bin/payments-load" ./cmd/payments-load
	go build -o "$bin/minimal" ./cmd/payments-load/minimal
	GOBIN=$bin GOFLAGS=-mod=mod go install github.com/stripe/stripe-mock@v0.197.0
	"$bin/stripe-mock" -http-addr 127.0.0.1:12111 -https-addr 127.0.0.1:12112 > /dev/null 2>&1 &
	pids+=($!)
}

# start_api BINARY PORT LOG [VAR=VALUE...] starts BINARY on 127.0.0.1:PORT against $url as a
# user runs the server (validation, the request log at info, metrics, in-memory rate limits),
# with quotas no load reaches and the VAR=VALUE settings added, and waits until it is ready.
# Its process id is the last of pids.
start_api() {
	local binary=$1 port=$2 log=$3
	shift 3
	free "$port"
	env DATABASE_URL="$url" LISTEN_ADDR="127.0.0.1:$port" DEMO_API_KEYS=sk_test_demo \
		RATE_LIMIT_DEFAULT=1000000/1s RATE_LIMIT_WRITES=1000000/1s "$@" "$binary" > "$log" 2>&1 &
	pids+=($!)
	ready "http://127.0.0.1:$port/readyz"
}

# start_servers DB NAME [VAR=VALUE...] starts, on a fresh database DB, the server on
# 127.0.0.1:8080 with the VAR=VALUE settings added, and the floor on 127.0.0.1:8081, logging
# to $out/server-NAME.log and $out/minimal-NAME.log, and waits for both. It sets url (the
# database's), api and minimal (their process ids).
start_servers() {
	local db=$1 name=$2
	shift 2
	psql -q "$server/postgres" -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db"
	url="$server/$db?sslmode=disable"
	DATABASE_URL=$url "$bin/payments-api" migrate up > /dev/null
	start_api "$bin/payments-api" 8080 "$out/server-$name.log" "$@"
	api=${pids[-1]}
	free 8081
	# The minimal server authenticates with the demo key, which the server creates as it starts.
	DATABASE_URL=$url UPSTREAM=http://127.0.0.1:8080 LISTEN_ADDR=127.0.0.1:8081 "$bin/minimal" > "$out/minimal-$name.log" 2>&1 &
	minimal=$!
	pids+=("$minimal")
	ready http://127.0.0.1:8081/payments/none
}
