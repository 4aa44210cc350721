# deploy/ha/hosts.sh is the address plan that deploy/ha/run and deploy/ha/fault share. Every
# address is in 198.18.0.0/15 (RFC 2544, for network tests) on a bridge of this machine that
# routes nowhere else. HA_STATE_DIR (/var/tmp/payments-ha) holds the data, configuration and
# logs of one run; the next run removes it.

STATE=${HA_STATE_DIR:-/var/tmp/payments-ha}
BRIDGE=ha-br0
BRIDGE_ADDR=198.18.0.1 # this namespace's address on the bridge: it reaches every host
# A host is a network namespace named ha-HOST, joined to the bridge by a veth pair whose end
# here is also named ha-HOST. Each db host runs an etcd member and a PostgreSQL node with its
# Patroni; the app host runs HAProxy, PgBouncer, Redis, the APIs and the workers.
HOSTS=(app db1 db2 db3)
DB_HOSTS=(db1 db2 db3)
declare -A ADDR=([app]=198.18.0.10 [db1]=198.18.0.11 [db2]=198.18.0.12 [db3]=198.18.0.13)
API_PORT=8080
# deploy/ha/chaos names this namespace too, so that the chaos command, running on the app host,
# can run deploy/ha/fault here, where every host is reachable whatever the partitions.
ROOT_NETNS=ha-root

# on HOST COMMAND...: COMMAND in HOST's namespace.
on() {
	local host=$1
	shift
	ip netns exec "ha-$host" "$@"
}

# primary: the db host whose Patroni answers 200 on GET /primary, or nothing.
primary() {
	local h
	for h in "${DB_HOSTS[@]}"; do
		if curl -fsS -o /dev/null --max-time 1 "http://${ADDR[$h]}:8008/primary" 2>/dev/null; then
			echo "$h"
			return
		fi
	done
}
