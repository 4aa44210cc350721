package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
)

// process is one program of the cluster this command starts, kills and starts again.
type process struct {
	name string
	argv []string
	env  []string
	log  string // its output, appended across restarts
	cmd  *exec.Cmd
	done chan struct{} // closed when the current run exits
}

// start runs the program. Its lifetime is signal's to end, not a context's: a run that is
// interrupted still drains the apps with SIGTERM in stop. Should this process die without
// stopping them, the kernel sends each SIGTERM (Pdeathsig), so none keeps its port.
func (p *process) start() error {
	out, err := os.OpenFile(p.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(context.Background(), p.argv[0], p.argv[1:]...) // ended by signal, not a context
	cmd.Env, cmd.Stdout, cmd.Stderr = append(os.Environ(), p.env...), out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		return errors.Join(fmt.Errorf("start %s: %w", p.name, err), out.Close())
	}
	p.cmd, p.done = cmd, make(chan struct{})
	go func() {
		_ = cmd.Wait()
		_ = out.Close() // the child wrote the log, not this process: nothing is lost
		close(p.done)
	}()
	return nil
}

// signal sends sig and waits up to grace for the exit, then kills.
func (p *process) signal(sig syscall.Signal, grace time.Duration) {
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// cluster is what sits behind HAProxy: the API and worker processes, PgBouncer, and the
// two Toxiproxy proxies every one of them reaches PgBouncer and Redis through.
type cluster struct {
	apis, workers []*process
	pgbouncer     *process
	pgbouncerAddr string
	db, redis     *toxiproxy.Proxy
	apiAddrs      []string
}

type clusterConfig struct {
	dir, apiBinary, database, directURL string
	// appDatabaseURL, when set, is the apps' DATABASE_URL in place of Toxiproxy and
	// PgBouncer: deploy/ha/chaos's multi-host URL, which finds the primary itself.
	appDatabaseURL string
	// pooledQuery is the query of the apps' DATABASE_URL through PgBouncer: pgx's exec mode,
	// and the pool's size where it matters (deploy/cluster/lib.sh works it out from
	// PGBOUNCER_POOL_MODE).
	pooledQuery string
	// poolerPreparedStatements tells the apps PgBouncer keeps their prepared statements
	// (DATABASE_POOLER_PREPARED_STATEMENTS): in session pooling, say.
	poolerPreparedStatements bool
	pgbouncerArgv            []string
	pgbouncerAddr, redisAddr string
	apiPorts                 []int
	workers                  int
}

// startCluster starts PgBouncer, the proxies, the APIs and the workers, and waits until
// every API is ready.
func startCluster(ctx context.Context, c clusterConfig) (*cluster, error) {
	zerolog.SetGlobalLevel(zerolog.Disabled) // Toxiproxy logs every connection otherwise
	server := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	cl := &cluster{pgbouncerAddr: c.pgbouncerAddr,
		pgbouncer: &process{name: "pgbouncer", argv: c.pgbouncerArgv, log: filepath.Join(c.dir, "pgbouncer.log")},
		db:        toxiproxy.NewProxy(server, "pgbouncer", "127.0.0.1:0", c.pgbouncerAddr),
		redis:     toxiproxy.NewProxy(server, "redis", "127.0.0.1:0", c.redisAddr)}
	if err := cl.pgbouncer.start(); err != nil {
		return cl, err
	}
	if err := waitTCP(ctx, c.pgbouncerAddr); err != nil {
		return cl, fmt.Errorf("pgbouncer: %w", err)
	}
	for _, p := range []*toxiproxy.Proxy{cl.db, cl.redis} {
		if err := p.Start(); err != nil {
			return cl, err
		}
	}
	common := []string{
		"DATABASE_URL=postgres://postgres@" + cl.db.Listen + "/" + c.database + "?sslmode=disable&" + c.pooledQuery,
		"DATABASE_DIRECT_URL=" + c.directURL,
		"DATABASE_POOLER_PREPARED_STATEMENTS=" + strconv.FormatBool(c.poolerPreparedStatements),
	}
	if c.appDatabaseURL != "" {
		common = []string{"DATABASE_URL=" + c.appDatabaseURL}
	}
	common = append(common,
		"REDIS_URL=redis://"+cl.redis.Listen+"/0",
		"DEMO_API_KEYS="+demoKey,
		// The load is one key at a few hundred requests a second: limits high enough never
		// to answer 429, still counted in Redis, so cutting Redis exercises the fallback.
		"RATE_LIMIT_DEFAULT=100000/1s", "RATE_LIMIT_WRITES=100000/1s",
		"WEBHOOK_ALLOW_PRIVATE_NETWORKS=true", "WEBHOOK_RETRY_SCHEDULE=1s,2s,5s,10s,20s,30s",
		"WEBHOOK_TIMEOUT=5s", "JOB_TIMEOUT=20s", "JOB_RESCUE_AFTER=30s",
	)
	for i, port := range c.apiPorts {
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		cl.apiAddrs = append(cl.apiAddrs, addr)
		cl.apis = append(cl.apis, &process{name: fmt.Sprintf("api%d", i+1), argv: []string{c.apiBinary},
			env: append([]string{"PROCESS_ROLE=api", "LISTEN_ADDR=" + addr, "TRUSTED_PROXIES=127.0.0.1"}, common...),
			log: filepath.Join(c.dir, fmt.Sprintf("api%d.log", i+1))})
	}
	for i := range c.workers {
		cl.workers = append(cl.workers, &process{name: fmt.Sprintf("worker%d", i+1), argv: []string{c.apiBinary},
			env: append([]string{"PROCESS_ROLE=worker"}, common...),
			log: filepath.Join(c.dir, fmt.Sprintf("worker%d.log", i+1))})
	}
	for _, p := range cl.apps() {
		if err := p.start(); err != nil {
			return cl, err
		}
	}
	for _, addr := range cl.apiAddrs {
		if err := waitReady(ctx, addr); err != nil {
			return cl, err
		}
	}
	return cl, nil
}

// apps are the API and worker processes.
func (cl *cluster) apps() []*process {
	return append(append([]*process(nil), cl.apis...), cl.workers...)
}

// stop drains the apps with SIGTERM, then stops PgBouncer and the proxies.
func (cl *cluster) stop() {
	var wg sync.WaitGroup
	for _, p := range cl.apps() {
		wg.Go(func() { p.signal(syscall.SIGTERM, 10*time.Second) })
	}
	wg.Wait()
	cl.pgbouncer.signal(syscall.SIGTERM, 5*time.Second)
	cl.db.Stop()
	cl.redis.Stop()
}

// waitReady polls an API's /readyz until 200, for up to 30 s.
func waitReady(ctx context.Context, addr string) error {
	return poll(ctx, 30*time.Second, func() bool {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/readyz", nil)
		resp, err := (&http.Client{Timeout: time.Second}).Do(req)
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

func waitTCP(ctx context.Context, addr string) error {
	dialer := &net.Dialer{Timeout: time.Second}
	return poll(ctx, 30*time.Second, func() bool {
		conn, err := dialer.DialContext(ctx, "tcp", addr)
		if err == nil {
			_ = conn.Close() // only whether it connected matters
		}
		return err == nil
	})
}

// poll calls ok every 100 ms until it is true, for up to limit.
func poll(ctx context.Context, limit time.Duration, ok func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for !ok() {
		select {
		case <-ctx.Done():
			return errors.New("not ready after " + limit.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}
