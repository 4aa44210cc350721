package main

import (
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/payments-api/payments-api/internal/ratelimit"
	"golang.org/x/time/rate"
)

// limitConnections bounds the connections open at once to max, and those from one client to
// maxPerClient, so that one address cannot take every slot and lock everyone else out. Beyond
// either limit a new connection is closed as soon as it is accepted, so the server degrades by
// refusing clients, who see it at once and can retry, rather than by running out of file
// descriptors and serving no one. (golang.org/x/net/netutil.LimitListener stops accepting
// instead, which leaves new clients hanging in the kernel's backlog for as long as slow ones
// hold the slots.)
func limitConnections(ln net.Listener, max, maxPerClient int, logger *slog.Logger) net.Listener {
	return &limitListener{
		Listener:      ln,
		max:           max,
		maxPerClient:  maxPerClient,
		perClient:     make(map[netip.Prefix]int),
		logger:        logger,
		overMax:       newRefusals("MAX_CONNECTIONS", max),
		overPerClient: newRefusals("MAX_CONNECTIONS_PER_IP", maxPerClient),
	}
}

type limitListener struct {
	net.Listener
	max, maxPerClient int

	mu        sync.Mutex
	open      int
	perClient map[netip.Prefix]int // only clients with a connection open: a scan leaves nothing behind

	logger                 *slog.Logger
	overMax, overPerClient *refusals
}

// refusals counts the connections refused by one limit, and logs them.
type refusals struct {
	reason   string // the variable that sets the limit
	limit    int
	total    atomic.Int64
	logEvery rate.Sometimes // a flood of refusals must not become a flood of log lines
}

func newRefusals(reason string, limit int) *refusals {
	return &refusals{reason: reason, limit: limit, logEvery: rate.Sometimes{First: 1, Interval: 10 * time.Second}}
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		conn, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		client := clientOf(conn.RemoteAddr())
		refused := l.admit(client)
		if refused == nil {
			return &countedConn{Conn: conn, release: sync.OnceFunc(func() { l.release(client) })}, nil
		}
		// Logged before the close, so a client that sees its connection closed can already
		// read why.
		total := refused.total.Add(1)
		refused.logEvery.Do(func() {
			l.logger.Warn("connection refused: "+refused.reason+" reached",
				"limit", refused.limit, "client", client.String(), "refused_total", total)
		})
		_ = conn.Close() // refused: nothing was read, so there is nothing to tell the client
	}
}

// admit takes a slot for a connection from client, or answers the limit that refuses it. A
// client that is not an IP address (a Unix socket) is bound by max alone.
func (l *limitListener) admit(client netip.Prefix) *refusals {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open >= l.max {
		return l.overMax
	}
	if client.IsValid() && l.perClient[client] >= l.maxPerClient {
		return l.overPerClient
	}
	l.open++
	if client.IsValid() {
		l.perClient[client]++
	}
	return nil
}

// release gives back the slot admit took.
func (l *limitListener) release(client netip.Prefix) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open--
	if !client.IsValid() {
		return
	}
	if n := l.perClient[client] - 1; n > 0 {
		l.perClient[client] = n
	} else {
		delete(l.perClient, client)
	}
}

// clientOf is what connections are counted by per client: the block of addresses one client
// holds, as the per-address rate limits count it (ratelimit.ClientPrefix). It is the zero
// Prefix for an address that is not TCP.
func clientOf(addr net.Addr) netip.Prefix {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return netip.Prefix{}
	}
	return ratelimit.ClientPrefix(tcp.AddrPort().Addr())
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
