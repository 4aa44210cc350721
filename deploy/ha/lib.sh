# deploy/ha/lib.sh holds what deploy/ha/run and deploy/ha/chaos share: the network between
# the hosts, etcd, Patroni and the entry to the primary. Source it after hosts.sh and
# ../cluster/lib.sh, with ha set to this directory; start_database starts all of it and
# stops it on exit.
#
# SYNCHRONOUS_MODE (true) is Patroni's synchronous_mode: false is the setting a hurried
# operator leaves, under which a promoted standby may lack commits the primary acknowledged
# (deploy/ha/chaos's verdict shows what that costs).
SYNCHRONOUS_MODE=${SYNCHRONOUS_MODE:-true}
if [[ $SYNCHRONOUS_MODE != true && $SYNCHRONOUS_MODE != false ]]; then
	echo "SYNCHRONOUS_MODE=$SYNCHRONOUS_MODE: want true or false" >&2
	exit 2
fi
pg_bin=/usr/lib/postgresql/15/bin

if ((EUID != 0)); then
	echo "$0 creates network namespaces: run it as root" >&2
	exit 2
fi

# teardown: whatever a run left, stopped or killed: every process in the hosts' namespaces,
# the namespaces, the veth pairs and the bridge.
teardown() {
	local h pids
	for h in "${HOSTS[@]}"; do
		if pids=$(ip netns pids "ha-$h" 2>/dev/null) && [[ -n $pids ]]; then
			kill -KILL $pids 2>/dev/null || true
		fi
		ip netns del "ha-$h" 2>/dev/null || true
		ip link del "ha-$h" 2>/dev/null || true
	done
	ip link del "$BRIDGE" 2>/dev/null || true
	ip netns del "$ROOT_NETNS" 2>/dev/null || true
}

network() {
	ip link add "$BRIDGE" type bridge
	ip addr add "$BRIDGE_ADDR/24" dev "$BRIDGE"
	ip link set "$BRIDGE" up
	local h
	for h in "${HOSTS[@]}"; do
		ip netns add "ha-$h"
		ip link add "ha-$h" type veth peer name eth0 netns "ha-$h"
		ip link set "ha-$h" master "$BRIDGE" up
		on "$h" ip link set lo up
		on "$h" ip addr add "${ADDR[$h]}/24" dev eth0
		on "$h" ip link set eth0 up
	done
}

# Stopped tier by tier, each before what it needs: the app tier, the proxy to the primary,
# Patroni (which stops its PostgreSQL), etcd.
app_tier=()
proxy=()
patroni=()
etcd=()
stop_ha() {
	stop_pids "${app_tier[@]}"
	stop_pids "${proxy[@]}"
	stop_pids "${patroni[@]}"
	stop_pids "${etcd[@]}"
	teardown
	echo "logs kept in $STATE/logs"
}

# start_in HOST TIER NAME COMMAND...: COMMAND in HOST's namespace in the background, its
# output in logs/NAME.log, its PID added to the array TIER.
start_in() {
	local host=$1 name=$3
	local -n tier=$2
	shift 3
	# Not through on(): a function in the background would be a subshell, and $! its PID.
	ip netns exec "ha-$host" "$@" >"$dir/$name.log" 2>&1 &
	tier+=($!)
}

# render_ha FILE HOST: FILE with its ${...} filled in for HOST.
render_ha() {
	local etcd_hosts
	etcd_hosts=$(printf '%s:2379,' "${ADDR[db1]}" "${ADDR[db2]}" "${ADDR[db3]}")
	sed -e "s|\${NAME}|$2|g" -e "s|\${ADDR}|${ADDR[$2]}|g" -e "s|\${HOST_DIR}|$STATE/$2|g" \
		-e "s|\${PG_BIN}|$pg_bin|g" -e "s|\${SYNCHRONOUS_MODE}|$SYNCHRONOUS_MODE|g" -e "s|\${ETCD_HOSTS}|${etcd_hosts%,}|g" \
		-e "s|\${DB1}|${ADDR[db1]}|g" -e "s|\${DB2}|${ADDR[db2]}|g" -e "s|\${DB3}|${ADDR[db3]}|g" "$1"
}

install_tools() {
	ensure_installed ip iproute2
	ensure_installed etcd etcd-server
	ensure_installed etcdctl etcd-client
	ensure_installed patroni patroni
	ensure_installed haproxy haproxy
	ensure_installed pgbouncer pgbouncer
	ensure_installed redis-server redis-server
	ensure_installed pg_isready postgresql-client
	if [[ ! -x $pg_bin/postgres ]]; then # not on PATH, so named by its full path
		ensure_installed "$pg_bin/postgres" postgresql-15
	fi
}

start_etcd() {
	local cluster="" h
	for h in "${DB_HOSTS[@]}"; do
		cluster+="$h=http://${ADDR[$h]}:2380,"
	done
	# --pre-vote (off by default in etcd 3.4): a member cut off keeps calling elections, each
	# with a higher term, and without a pre-vote its first message after the partition heals
	# deposes the leader of the two that carried on. etcd then has no leader for seconds, and a
	# primary promoted during the partition, unable to renew its key, demoted itself.
	for h in "${DB_HOSTS[@]}"; do
		start_in "$h" etcd "etcd-$h" etcd --name "$h" --data-dir "$STATE/$h/etcd" \
			--listen-peer-urls "http://${ADDR[$h]}:2380" --initial-advertise-peer-urls "http://${ADDR[$h]}:2380" \
			--listen-client-urls "http://${ADDR[$h]}:2379" --advertise-client-urls "http://${ADDR[$h]}:2379" \
			--initial-cluster "${cluster%,}" --initial-cluster-token payments-ha --initial-cluster-state new \
			--pre-vote \
			--enable-v2 # Patroni's protocol: patroni.yml says why
	done
	wait_for etcd etcdctl --endpoints "${ADDR[db1]}:2379,${ADDR[db2]}:2379,${ADDR[db3]}:2379" endpoint health
}

# start_patroni: a node per db host, run as postgres (PostgreSQL refuses root); ready once one
# is primary and both others stream from it (one synchronously, in synchronous mode).
start_patroni() {
	local h
	for h in "${DB_HOSTS[@]}"; do
		render_ha "$ha/patroni.yml" "$h" >"$STATE/$h/patroni.yml"
		start_in "$h" patroni "patroni-$h" setpriv --reuid postgres --regid postgres --init-groups \
			env HOME="$STATE/$h" patroni "$STATE/$h/patroni.yml"
	done
	render_ha "$ha/patroni.yml" db1 | sed -n '/^scope:/p; /^etcd:/,/hosts:/p' >"$STATE/patronictl.yml"
	"$ha/fault" wait-healthy 180 || exit 1
}

# start_entry: HAProxy on the app host, at 127.0.0.1:5432 there, in front of the primary.
start_entry() {
	render_ha "$ha/haproxy-postgres.cfg" app >"$STATE/haproxy-postgres.cfg"
	start_in app proxy haproxy-postgres haproxy -db -f "$STATE/haproxy-postgres.cfg"
	wait_for "HAProxy to the primary" on app pg_isready -q -h 127.0.0.1 -p 5432 -U postgres
}

# start_database: a fresh state directory, the hosts' network, etcd, Patroni and the entry to
# the primary; all of it stopped and removed on exit. payments-api is built first, from here:
# the app host has no route to fetch modules, and builds from the warm cache.
start_database() {
	install_tools
	teardown
	rm -rf "$STATE"
	install -d -m 755 "$STATE" "$STATE/logs"
	for h in "${DB_HOSTS[@]}"; do # etcd runs as root, Patroni as postgres
		install -d -m 700 -o postgres -g postgres "$STATE/$h"
	done
	dir=$STATE/logs
	trap stop_ha EXIT
	trap 'exit 130' INT TERM # through the EXIT trap

	echo "building payments-api"
	(cd "$repo" && go build -o "$STATE/payments-api" ./cmd/payments-api)
	network
	start_etcd
	start_patroni
	start_entry
}
