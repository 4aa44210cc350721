package main

import (
	"context"
	"net"
	"net/url"
	"sync"
	"testing"
)

// dbProxy stands between a server under test and PostgreSQL, so a test can take the
// database away without touching the real one, which other tests share:
//
//   - Freeze: stop forwarding in both directions and leave new connections unanswered, as a
//     PostgreSQL stopped with SIGSTOP does (the kernel still accepts connections);
//   - Refuse: drop every connection and refuse new ones, as a stopped PostgreSQL does;
//   - Resume: forward again on the same address.
type dbProxy struct {
	t      testing.TB
	addr   string // where the proxy listens, kept across Refuse and Resume
	target string // PostgreSQL's address

	mu     sync.Mutex
	ln     net.Listener // nil while refusing
	conns  map[net.Conn]struct{}
	thawed chan struct{} // closed while not frozen
	closed bool
}

// newDBProxy forwards to the host of databaseURL and returns the proxy and databaseURL
// rewritten to go through it. Everything stops when the test ends.
func newDBProxy(t testing.TB, databaseURL string) (*dbProxy, string) {
	t.Helper()
	u, err := url.Parse(databaseURL)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := new(net.ListenConfig).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	thawed := make(chan struct{})
	close(thawed)
	p := &dbProxy{t: t, addr: ln.Addr().String(), target: u.Host, conns: map[net.Conn]struct{}{}, thawed: thawed}
	p.listen(ln)
	t.Cleanup(p.close)
	u.Host = p.addr
	return p, u.String()
}

// Freeze stops all forwarding until Resume.
func (p *dbProxy) Freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.thawed:
		p.thawed = make(chan struct{})
	default: // already frozen
	}
}

// Refuse closes the listener, so connecting is refused, and drops every open connection.
func (p *dbProxy) Refuse() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	p.dropAllLocked()
}

// Resume forwards again: it thaws a freeze and listens again after Refuse.
func (p *dbProxy) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.thawLocked()
	if p.ln == nil {
		ln, err := new(net.ListenConfig).Listen(context.Background(), "tcp", p.addr)
		if err != nil {
			p.t.Errorf("proxy: listen again on %s: %v", p.addr, err)
			return
		}
		p.listen(ln)
	}
}

func (p *dbProxy) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	p.thawLocked()
	p.dropAllLocked()
}

func (p *dbProxy) thawLocked() {
	select {
	case <-p.thawed:
	default:
		close(p.thawed)
	}
}

func (p *dbProxy) dropAllLocked() {
	for c := range p.conns {
		_ = c.Close()
	}
	clear(p.conns)
}

// listen accepts in the background until ln is closed.
func (p *dbProxy) listen(ln net.Listener) {
	p.ln = ln
	go func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			go p.forward(client)
		}
	}()
}

// track registers c so that Refuse can drop it; false when the proxy is already closed.
func (p *dbProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		_ = c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

// waitThawed blocks while the proxy is frozen.
func (p *dbProxy) waitThawed() {
	p.mu.Lock()
	thawed := p.thawed
	p.mu.Unlock()
	<-thawed
}

func (p *dbProxy) forward(client net.Conn) {
	if !p.track(client) {
		return
	}
	p.waitThawed() // a frozen server accepts, then says nothing
	server, err := new(net.Dialer).DialContext(context.Background(), "tcp", p.target)
	if err != nil {
		_ = client.Close()
		return
	}
	if !p.track(server) {
		_ = client.Close()
		return
	}
	go p.pipe(server, client)
	p.pipe(client, server)
}

// pipe copies src to dst, holding each chunk while the proxy is frozen, and closes both
// when either side ends.
func (p *dbProxy) pipe(dst, src net.Conn) {
	defer func() { _ = dst.Close(); _ = src.Close() }()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.waitThawed()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil { // EOF, or a connection Refuse dropped
			return
		}
	}
}
