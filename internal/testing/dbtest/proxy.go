package dbtest

import (
	"context"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"
)

// Proxy stands between a server or pool under test and PostgreSQL, so a test can take the
// database away without touching the real one, which other tests share:
//
//   - Freeze: stop forwarding in both directions and leave new connections unanswered, as a
//     PostgreSQL stopped with SIGSTOP does (the kernel still accepts connections);
//   - Refuse: drop every connection and close each new one at once, as a stopped
//     PostgreSQL or a failover does, counting them (WaitRefused);
//   - Resume: forward again.
type Proxy struct {
	t       testing.TB
	target  string        // PostgreSQL's address
	ln      net.Listener  // closed when the test ends
	refused chan struct{} // one value per connection refused

	mu       sync.Mutex
	refusing bool
	conns    map[net.Conn]struct{}
	thawed   chan struct{} // closed while not frozen
	closed   bool
}

// NewProxy forwards to the host of databaseURL and returns the proxy and databaseURL
// rewritten to go through it. Everything stops when the test ends.
func NewProxy(t testing.TB, databaseURL string) (*Proxy, string) {
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
	p := &Proxy{t: t, target: u.Host, ln: ln, refused: make(chan struct{}, 10000),
		conns: map[net.Conn]struct{}{}, thawed: thawed}
	go p.accept()
	t.Cleanup(p.close)
	u.Host = ln.Addr().String()
	return p, u.String()
}

// Freeze stops all forwarding until Resume.
func (p *Proxy) Freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.thawed:
		p.thawed = make(chan struct{})
	default: // already frozen
	}
}

// Refuse drops every open connection and closes each new one until Resume. Connections
// refused earlier no longer count for WaitRefused.
func (p *Proxy) Refuse() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refusing = true
	p.dropAllLocked()
	for len(p.refused) > 0 {
		<-p.refused
	}
}

// Resume forwards again: it thaws a freeze and ends Refuse.
func (p *Proxy) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refusing = false
	p.thawLocked()
}

// WaitRefused waits until n connections have been refused since Refuse: whoever is on the
// other side has tried, and tried again.
func (p *Proxy) WaitRefused(n int) {
	p.t.Helper()
	for range n {
		select {
		case <-p.refused:
		case <-time.After(30 * time.Second):
			p.t.Fatalf("proxy: fewer than %d connections tried while refusing", n)
		}
	}
}

func (p *Proxy) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	_ = p.ln.Close()
	p.thawLocked()
	p.dropAllLocked()
}

func (p *Proxy) thawLocked() {
	select {
	case <-p.thawed:
	default:
		close(p.thawed)
	}
}

func (p *Proxy) dropAllLocked() {
	for c := range p.conns {
		_ = c.Close()
	}
	clear(p.conns)
}

// accept takes connections until the proxy is closed.
func (p *Proxy) accept() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.forward(client)
	}
}

// track registers c so that Refuse can drop it; false when the proxy is closed or refusing
// (then c is closed, and counted when refused).
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.refusing {
		_ = c.Close()
		if p.refusing {
			select { // counted while there is room: a test waits for a few, never for all
			case p.refused <- struct{}{}:
			default:
			}
		}
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

// waitThawed blocks while the proxy is frozen.
func (p *Proxy) waitThawed() {
	p.mu.Lock()
	thawed := p.thawed
	p.mu.Unlock()
	<-thawed
}

func (p *Proxy) forward(client net.Conn) {
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
func (p *Proxy) pipe(dst, src net.Conn) {
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
