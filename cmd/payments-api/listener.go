package main

import (
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// limitConnections bounds the connections open at once to max. Beyond it a new connection is
// closed as soon as it is accepted, so the server degrades by refusing clients, who see it at
// once and can retry, rather than by running out of file descriptors and serving no one.
// (golang.org/x/net/netutil.LimitListener stops accepting instead, which leaves new clients
// hanging in the kernel's backlog for as long as slow ones hold the slots.)
func limitConnections(ln net.Listener, max int, logger *slog.Logger) net.Listener {
	return &limitListener{Listener: ln, max: int64(max), logger: logger, logEvery: rate.Sometimes{First: 1, Interval: 10 * time.Second}}
}

type limitListener struct {
	net.Listener
	max      int64
	open     atomic.Int64
	refused  atomic.Int64
	logger   *slog.Logger
	logEvery rate.Sometimes // a flood of refusals must not become a flood of log lines
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		conn, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) <= l.max {
			return &countedConn{Conn: conn, release: sync.OnceFunc(func() { l.open.Add(-1) })}, nil
		}
		l.open.Add(-1)
		_ = conn.Close() // refused: nothing was read, so there is nothing to tell the client
		refused := l.refused.Add(1)
		l.logEvery.Do(func() {
			l.logger.Warn("connection refused: MAX_CONNECTIONS reached", "max_connections", l.max, "refused_total", refused)
		})
	}
}

// countedConn gives its slot back when closed, however many times Close is called.
type countedConn struct {
	net.Conn
	release func()
}

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.release()
	return err
}
