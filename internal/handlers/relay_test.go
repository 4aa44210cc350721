package handlers_test

import (
	"context"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
)

// relay forwards TCP connections to the database at dbURL until cut, which closes the
// relay's listener and every connection through it: the server keeps an address where
// nothing answers any more. It answers the URL through the relay.
func relay(t testing.TB, dbURL string) (string, func()) {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	target := u.Host
	ln, err := new(net.ListenConfig).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	cut := false
	go func() {
		for {
			down, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := new(net.Dialer).DialContext(context.Background(), "tcp", target)
			mu.Lock()
			if err != nil || cut {
				mu.Unlock()
				_ = down.Close()
				if up != nil {
					_ = up.Close()
				}
				continue
			}
			conns = append(conns, down, up)
			mu.Unlock()
			go func() { _, _ = io.Copy(up, down); _ = up.Close() }()
			go func() { _, _ = io.Copy(down, up); _ = down.Close() }()
		}
	}()
	cutOff := sync.OnceFunc(func() {
		_ = ln.Close()
		mu.Lock()
		defer mu.Unlock()
		cut = true
		for _, c := range conns {
			_ = c.Close()
		}
	})
	t.Cleanup(cutOff)
	u.Host = ln.Addr().String()
	return u.String(), cutOff
}
