package integration

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/toxics"
	"github.com/rs/zerolog"
)

// Toxiproxy runs inside the test process, as a library: no binary to install or start, no
// port for its API, and a test reaches the toxics it added as Go values (the commit cutter
// counts what it cut). The price is a test-only dependency in go.mod, which the server's
// binary never links.

// toxiServer is the one Toxiproxy every test's proxies belong to; it is silent, as its
// toxics log through zerolog's global logger.
var toxiServer = sync.OnceValue(func() *toxiproxy.ApiServer {
	zerolog.SetGlobalLevel(zerolog.Disabled)
	return toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
})

// toxicProxy is one Toxiproxy proxy in front of a server a test shares with others
// (PostgreSQL, Redis, a webhook receiver), so the test can make the path between the
// payments server and it slow, narrow or broken.
type toxicProxy struct {
	t     *testing.T
	proxy *toxiproxy.Proxy
}

// newToxicProxy listens on a free loopback port and forwards to upstream (host:port) until
// t ends.
func newToxicProxy(t *testing.T, upstream string) *toxicProxy {
	t.Helper()
	p := toxiproxy.NewProxy(toxiServer(), t.Name()+"/"+upstream, "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return &toxicProxy{t: t, proxy: p}
}

// newDBToxicProxy is a toxic proxy to the host of databaseURL, and databaseURL rewritten to
// go through it.
func newDBToxicProxy(t *testing.T, databaseURL string) (*toxicProxy, string) {
	t.Helper()
	u, err := url.Parse(databaseURL)
	if err != nil {
		t.Fatal(err)
	}
	p := newToxicProxy(t, u.Host)
	u.Host = p.proxy.Listen
	return p, u.String()
}

// Addr is where the proxy listens.
func (p *toxicProxy) Addr() string { return p.proxy.Listen }

// Add adds a toxic of type kind to the stream ("upstream": towards the server behind the
// proxy, "downstream": back from it) with attributes attrs, as Toxiproxy's HTTP API would,
// and returns it. It applies to open connections and new ones, until Remove.
func (p *toxicProxy) Add(kind, stream string, attrs map[string]any) toxics.Toxic {
	p.t.Helper()
	body, err := json.Marshal(map[string]any{"name": kind + "_" + stream, "type": kind, "stream": stream, "attributes": attrs})
	if err != nil {
		p.t.Fatal(err)
	}
	w, err := p.proxy.Toxics.AddToxicJson(strings.NewReader(string(body)))
	if err != nil {
		p.t.Fatalf("add toxic %s: %v", body, err)
	}
	return w.Toxic
}

// Remove removes every toxic: the path is healthy again.
func (p *toxicProxy) Remove() {
	p.proxy.Toxics.ResetToxics(context.Background())
}
