// Command payments-chaos drives load through the cluster's HAProxy while it kills and
// restarts API and worker processes, restarts PgBouncer, cuts Redis and slows or breaks the
// path to PgBouncer, then gives a verdict: invariants checked straight in PostgreSQL, and
// each payment's history checked for linearizability with Porcupine. deploy/cluster/chaos
// starts HAProxy and Redis and runs it; this command starts and faults the rest.
//
//	payments-chaos [flags] -- PGBOUNCER_COMMAND...
//
// It exits 1 when an invariant fails or a history is not linearizable.
//
// Like every tool here (payments-load, payments-listen), it takes flags, read by parseFlags
// into a config; -h lists them. The server, payments-api, takes environment variables
// instead, as a deployment sets them.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/payments-api/payments-api/internal/webhooks"
)

const demoKey = "sk_test_demo"

const usage = `Usage: payments-chaos [flags] -- PGBOUNCER_COMMAND...

Runs the cluster's processes under load and faults, then checks the invariants and each
payment's history (deploy/cluster/README.md). deploy/cluster/chaos runs it.

Flags:
`

// config is the command line.
type config struct {
	duration, settle time.Duration
	concurrency      int
	url              string
	cluster          clusterConfig
	html             string
	// The database's faults instead of the processes' (deploy/ha/chaos): which ones, the
	// command that does them, and every PostgreSQL node, for the timeline check.
	dbFaults     []dbFault
	faultCommand []string
	nodes        []string
}

func main() {
	cfg, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return // -h: the usage is printed
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "payments-chaos:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	ok, err := run(ctx, cfg)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "payments-chaos:", err)
		os.Exit(2)
	}
	if !ok {
		os.Exit(1)
	}
}

// parseFlags reads the command line; -h prints the usage and returns flag.ErrHelp.
func parseFlags(args []string) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("payments-chaos", flag.ContinueOnError)
	fs.Usage = func() {
		_, _ = fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
	}
	fs.DurationVar(&cfg.duration, "duration", 5*time.Minute, "how long the load and the faults run")
	fs.DurationVar(&cfg.settle, "settle", time.Minute, "after the load, how long the workers may go without finishing a delivery or a job before the checks run anyway")
	fs.IntVar(&cfg.concurrency, "concurrency", 8, "payments worked on at once")
	fs.StringVar(&cfg.url, "url", "http://127.0.0.1:8180", "HAProxy")
	fs.StringVar(&cfg.cluster.dir, "dir", os.TempDir(), "where the processes' logs go")
	fs.StringVar(&cfg.cluster.apiBinary, "api-binary", "payments-api", "the payments-api binary")
	fs.StringVar(&cfg.cluster.database, "database", "payments_chaos", "the database name, behind PgBouncer")
	fs.StringVar(&cfg.cluster.directURL, "direct-url", "postgres://postgres@127.0.0.1:5432/payments_chaos?sslmode=disable", "the database on PostgreSQL itself, migrated")
	fs.StringVar(&cfg.cluster.appDatabaseURL, "app-database-url", "", "the API and worker processes' DATABASE_URL, in place of PgBouncer through Toxiproxy (default: that)")
	fs.StringVar(&cfg.cluster.pooledQuery, "pooled-query", "default_query_exec_mode=simple_protocol", "the query of the apps' DATABASE_URL through PgBouncer")
	fs.BoolVar(&cfg.cluster.poolerPreparedStatements, "pooler-prepared-statements", false, "PgBouncer keeps each client's prepared statements (session pooling, say): the apps' DATABASE_POOLER_PREPARED_STATEMENTS")
	fs.StringVar(&cfg.cluster.pgbouncerAddr, "pgbouncer-addr", "127.0.0.1:6532", "where the PgBouncer command listens")
	fs.StringVar(&cfg.cluster.redisAddr, "redis-addr", "127.0.0.1:6490", "a running Redis")
	apiPorts := fs.String("api-ports", "8181,8182,8183", "the API processes' ports, HAProxy's servers")
	fs.IntVar(&cfg.cluster.workers, "workers", 2, "worker processes")
	fs.StringVar(&cfg.html, "html", "", "where to write Porcupine's visualization when a history is not linearizable (default: a temporary file)")
	dbFaultList := fs.String("db-faults", "", "fault the database instead of the processes: a comma-separated list of "+strings.Join(dbFaultNames(), ",")+" (needs -fault-command and -nodes)")
	faultCommand := fs.String("fault-command", "", "the command that does the database's faults, deploy/ha/fault, with any words before it (split at spaces)")
	nodes := fs.String("nodes", "", "every PostgreSQL node's URL, comma-separated, read for their timelines after the run")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if *dbFaultList != "" {
		var err error
		if cfg.dbFaults, err = chooseDBFaults(strings.Split(*dbFaultList, ",")); err != nil {
			return cfg, err
		}
		cfg.faultCommand, cfg.nodes = strings.Fields(*faultCommand), strings.Split(*nodes, ",")
		if len(cfg.faultCommand) == 0 || *nodes == "" {
			return cfg, errors.New("-db-faults needs -fault-command and -nodes")
		}
	}
	cfg.cluster.pgbouncerArgv = fs.Args()
	if len(cfg.cluster.pgbouncerArgv) == 0 {
		return cfg, errors.New("give the PgBouncer command after --")
	}
	for _, p := range strings.Split(*apiPorts, ",") {
		port, err := strconv.Atoi(p)
		if err != nil {
			return cfg, fmt.Errorf("-api-ports: %w", err)
		}
		cfg.cluster.apiPorts = append(cfg.cluster.apiPorts, port)
	}
	return cfg, nil
}

// run starts the cluster, drives the load and the faults for the duration, lets the
// workers finish, and prints the verdict; ok is false when any check failed.
func run(ctx context.Context, o config) (ok bool, err error) {
	recv, err := startReceiver(ctx)
	if err != nil {
		return false, err
	}
	cl, err := startCluster(ctx, o.cluster)
	defer cl.stop()
	if err != nil {
		return false, err
	}
	if err := waitReady(ctx, strings.TrimPrefix(o.url, "http://")); err != nil {
		return false, fmt.Errorf("HAProxy: %w", err)
	}
	h := newHistory()
	c := &client{base: o.url, key: demoKey, history: h, http: &http.Client{Timeout: 15 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: 8 * o.concurrency}}}
	endpoint, err := registerEndpoint(ctx, c, recv)
	if err != nil {
		return false, err
	}
	l := &load{client: c, run: strconv.FormatInt(time.Now().UnixNano(), 36)}
	records := drive(ctx, o, cl, l)

	fmt.Printf("load stopped at %s; waiting for deliveries and jobs\n", h.now().Round(time.Second))
	return verdict(ctx, o, l, endpoint, recv, records)
}

// drive runs the load workers and the fault schedule for the duration, then lets the
// payments in hand finish (their requests are bounded by the client's timeout).
func drive(ctx context.Context, o config, cl *cluster, l *load) []faultRecord {
	stop := make(chan struct{})
	// The last fault may end after the duration (a database fault waits for the old primary
	// to rejoin): the load goes on meanwhile, as the checks of that fault need it.
	reqCtx, cancel := context.WithTimeout(ctx, o.duration+5*time.Minute)
	defer cancel()
	var workers sync.WaitGroup
	for range o.concurrency {
		workers.Go(func() { l.work(reqCtx, stop) })
	}
	schedule := cl.faults()
	if len(o.dbFaults) > 0 {
		schedule = dbFaults(o.faultCommand, o.cluster.directURL, o.dbFaults)
	}
	records := runFaults(ctx, l.client.history, schedule, 10*time.Second, o.duration)
	select {
	case <-ctx.Done():
	// A few seconds at least after the last fault, so that writes are seen to flow again.
	case <-time.After(max(o.duration-l.client.history.now(), 5*time.Second)):
	}
	close(stop)
	workers.Wait()
	return records
}

// registerEndpoint subscribes the receiver to every event; the cluster is healthy before
// the first fault, so one attempt is enough.
func registerEndpoint(ctx context.Context, c *client, r *receiver) (string, error) {
	a := c.do(ctx, http.MethodPost, "/webhook-endpoints", map[string]any{"url": r.url, "enabled_events": []string{"*"}})
	var ep struct{ ID, Secret string }
	if a.status != http.StatusCreated || json.Unmarshal(a.body, &ep) != nil {
		return "", fmt.Errorf("register the webhook endpoint: %d %s", a.status, a.body)
	}
	v, err := webhooks.NewVerifier(ep.Secret)
	if err != nil {
		return "", err
	}
	r.verifier.Store(v)
	return ep.ID, nil
}
