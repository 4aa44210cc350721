package webhooks_test

import (
	"bufio"
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/payments-api/payments-api/internal/webhooks"
)

// received is what a test receiver saw of one request.
type received struct {
	header http.Header
	body   []byte
}

// receiver answers with reply and hands each request it read to the returned channel.
func receiver(t *testing.T, reply http.HandlerFunc) (*httptest.Server, <-chan received) {
	t.Helper()
	got := make(chan received, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- received{r.Header.Clone(), b}
		reply(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, got
}

func status(code int, header ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.WriteHeader(code)
	}
}

func localSender(timeout time.Duration) *webhooks.Sender {
	return webhooks.NewSender(webhooks.SenderOptions{Timeout: timeout, AllowPrivateNetworks: true})
}

func TestSendSignsTheBytesItSends(t *testing.T) {
	srv, got := receiver(t, status(http.StatusNoContent))
	secret := webhooks.NewSecret()
	msg := webhooks.Message{URL: srv.URL, ID: "msg_send", Body: body, Secrets: []string{secret}}
	sender := localSender(time.Second)

	first := time.Now().Add(-time.Minute)
	for _, at := range []time.Time{first, time.Now()} {
		res := sender.Send(context.Background(), msg, at)
		if res.Outcome != webhooks.Delivered || res.Status != http.StatusNoContent || res.Error != "" {
			t.Fatalf("result %+v, want delivered 204", res)
		}
		r := <-got
		if string(r.body) != string(body) || r.header.Get("Content-Type") != "application/json" {
			t.Fatalf("received %q as %q", r.body, r.header.Get("Content-Type"))
		}
		if r.header.Get(webhooks.HeaderID) != "msg_send" || r.header.Get(webhooks.HeaderTimestamp) != strconv.FormatInt(at.Unix(), 10) {
			t.Fatalf("id %q timestamp %q, want msg_send and %d", r.header.Get(webhooks.HeaderID), r.header.Get(webhooks.HeaderTimestamp), at.Unix())
		}
		if err := verifier(t, secret).VerifyAt(r.header, r.body, at); err != nil {
			t.Fatalf("our verifier: %v", err)
		}
		if err := official(t, secret).VerifyIgnoringTimestamp(r.body, r.header); err != nil {
			t.Fatalf("official library: %v", err)
		}
	}
}

func TestSendClassifiesResponses(t *testing.T) {
	date := time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)
	cases := []struct {
		name       string
		reply      http.HandlerFunc
		outcome    webhooks.Outcome
		retryAfter time.Duration // at least
	}{
		{"200", status(http.StatusOK), webhooks.Delivered, 0},
		{"299", status(299), webhooks.Delivered, 0},
		{"500", status(http.StatusInternalServerError), webhooks.Retry, 0},
		{"400", status(http.StatusBadRequest), webhooks.Retry, 0},
		{"410 disables", status(http.StatusGone), webhooks.Gone, 0},
		{"429 seconds", status(http.StatusTooManyRequests, "Retry-After", "7"), webhooks.Retry, 7 * time.Second},
		{"503 date", status(http.StatusServiceUnavailable, "Retry-After", date), webhooks.Retry, 80 * time.Second},
		{"500 ignores Retry-After", status(http.StatusInternalServerError, "Retry-After", "7"), webhooks.Retry, 0},
	}
	// A receiver cannot push its retries out further than a day a step.
	for _, far := range []string{"31536000", "99999999999999999999", time.Now().AddDate(1, 0, 0).UTC().Format(http.TimeFormat)} {
		t.Run("429 "+far, func(t *testing.T) {
			srv, _ := receiver(t, status(http.StatusTooManyRequests, "Retry-After", far))
			res := localSender(time.Second).Send(context.Background(), webhooks.Message{
				URL: srv.URL, ID: "msg_c", Body: body, Secrets: []string{webhooks.NewSecret()},
			}, time.Now())
			if res.Outcome != webhooks.Retry || res.RetryAfter != 24*time.Hour {
				t.Fatalf("result %+v, want a retry after 24h", res)
			}
		})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := receiver(t, tc.reply)
			res := localSender(time.Second).Send(context.Background(), webhooks.Message{
				URL: srv.URL, ID: "msg_c", Body: body, Secrets: []string{webhooks.NewSecret()},
			}, time.Now())
			if res.Outcome != tc.outcome || res.RetryAfter < tc.retryAfter || (tc.retryAfter == 0 && res.RetryAfter != 0) {
				t.Fatalf("result %+v, want outcome %v, Retry-After %s", res, tc.outcome, tc.retryAfter)
			}
			if (tc.outcome == webhooks.Delivered) != (res.Error == "") {
				t.Fatalf("error %q for outcome %v", res.Error, res.Outcome)
			}
		})
	}
}

// TestSendReadsOnlyTheStartOfAnAnswer: an answer's body is read up to 64 KiB, so a
// receiver that accepts a webhook and then streams without end does not hold the attempt,
// and the worker making it, until the attempt's timeout.
func TestSendReadsOnlyTheStartOfAnAnswer(t *testing.T) {
	release := make(chan struct{})
	srv, _ := receiver(t, func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
		chunk := make([]byte, 32<<10)
		for range 32 {
			if _, err := w.Write(chunk); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
		<-release // and never ends its answer
	})
	t.Cleanup(func() { close(release) }) // before the server's own cleanup, which waits for it
	const timeout = time.Minute
	res := localSender(timeout).Send(context.Background(), webhooks.Message{
		URL: srv.URL, ID: "msg_stream", Body: body, Secrets: []string{webhooks.NewSecret()},
	}, time.Now())
	if res.Outcome != webhooks.Delivered || res.Duration >= timeout/2 {
		t.Fatalf("result %+v, want delivered without waiting for the rest of the answer", res)
	}
}

func TestSendNeverFollowsRedirects(t *testing.T) {
	var reached atomic.Bool
	target := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached.Store(true) }))
	defer target.Close()
	srv, _ := receiver(t, status(http.StatusTemporaryRedirect, "Location", target.URL))

	res := localSender(time.Second).Send(context.Background(), webhooks.Message{
		URL: srv.URL, ID: "msg_r", Body: body, Secrets: []string{webhooks.NewSecret()},
	}, time.Now())
	if res.Outcome != webhooks.Retry || res.Status != http.StatusTemporaryRedirect || reached.Load() {
		t.Fatalf("result %+v, redirect target reached: %v", res, reached.Load())
	}
}

func TestSendTimesOutOnAHungReceiver(t *testing.T) {
	release := make(chan struct{})
	srv, _ := receiver(t, func(http.ResponseWriter, *http.Request) { <-release })
	defer close(release) // before srv.Close, which waits for the handler

	res := localSender(200*time.Millisecond).Send(context.Background(), webhooks.Message{
		URL: srv.URL, ID: "msg_h", Body: body, Secrets: []string{webhooks.NewSecret()},
	}, time.Now())
	if res.Outcome != webhooks.Retry || res.Status != 0 || res.Error != "timed out" {
		t.Fatalf("result %+v, want a retry without a status", res)
	}
	if res.Duration > 2*time.Second {
		t.Fatalf("the attempt took %s despite a 200ms timeout", res.Duration)
	}
}

func TestSendRefusesPrivateAddressesUnlessAllowed(t *testing.T) {
	srv, got := receiver(t, status(http.StatusOK))
	msg := webhooks.Message{URL: srv.URL, ID: "msg_p", Body: body, Secrets: []string{webhooks.NewSecret()}}

	res := webhooks.NewSender(webhooks.SenderOptions{Timeout: time.Second}).Send(context.Background(), msg, time.Now())
	if res.Outcome != webhooks.Refused || len(got) != 0 {
		t.Fatalf("result %+v with %d requests received, want Refused and none", res, len(got))
	}
	if res := localSender(time.Second).Send(context.Background(), msg, time.Now()); res.Outcome != webhooks.Delivered {
		t.Fatalf("with private networks allowed: %+v", res)
	}
}

// TestSendRefusesANameResolvingToMetadata: with private networks allowed, a name that
// resolves to the metadata service is still refused where it is dialled.
func TestSendRefusesANameResolvingToMetadata(t *testing.T) {
	for _, addr := range []string{"169.254.169.254", "fd00:ec2::254", "100.100.100.200", "168.63.129.16"} {
		sender := webhooks.NewSender(webhooks.SenderOptions{
			Timeout: time.Second, AllowPrivateNetworks: true,
			Resolver: fakeDNS(map[string]netip.Addr{"metadata.test": netip.MustParseAddr(addr)}),
		})
		res := sender.Send(context.Background(), webhooks.Message{
			URL: "http://metadata.test/latest/meta-data", ID: "msg_m", Body: body, Secrets: []string{webhooks.NewSecret()},
		}, time.Now())
		if res.Outcome != webhooks.Refused || res.Error != "the address is not allowed" {
			t.Errorf("metadata.test at %s: %+v, want Refused", addr, res)
		}
	}
}

// TestSendRecordsFixedReasons: an attempt that got no response says why in one of a few
// fixed texts, never with the resolver, the address dialled or a library's error.
func TestSendRecordsFixedReasons(t *testing.T) {
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close() // nothing listens on its port now
	plain, _ := receiver(t, status(http.StatusOK))
	untrusted := httptest.NewUnstartedServer(http.NotFoundHandler())
	untrusted.Config.ErrorLog = log.New(io.Discard, "", 0) // its side of the refused handshake
	untrusted.StartTLS()
	t.Cleanup(untrusted.Close)
	hangUp := hangingUp(t)
	names := fakeDNS(map[string]netip.Addr{"metadata.test": netip.MustParseAddr("169.254.169.254")})

	cases := []struct {
		name   string
		opts   webhooks.SenderOptions
		url    string
		reason string
	}{
		{"unresolvable", webhooks.SenderOptions{AllowPrivateNetworks: true, Resolver: names}, "http://nowhere.test/hook", "the host name did not resolve"},
		{"numeric in disguise", webhooks.SenderOptions{AllowPrivateNetworks: true, Resolver: names}, "http://0x7f.1/hook", "the host name did not resolve"},
		{"refused address", webhooks.SenderOptions{Resolver: names}, plain.URL, "the address is not allowed"},
		{"metadata by name", webhooks.SenderOptions{AllowPrivateNetworks: true, Resolver: names}, "http://metadata.test/", "the address is not allowed"},
		{"nothing listening", webhooks.SenderOptions{AllowPrivateNetworks: true}, closed.URL, "connection refused"},
		{"hung up", webhooks.SenderOptions{AllowPrivateNetworks: true}, "http://" + hangUp + "/hook", "the connection closed before a response"},
		{"plain http on https", webhooks.SenderOptions{AllowPrivateNetworks: true}, strings.Replace(plain.URL, "http:", "https:", 1), "the TLS handshake failed"},
		{"untrusted certificate", webhooks.SenderOptions{AllowPrivateNetworks: true}, untrusted.URL, "the TLS certificate was not accepted"},
	}
	leak := regexp.MustCompile(`\d+\.\d+|::|:\d+|lookup|dial|tcp`)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Timeout = 2 * time.Second
			res := webhooks.NewSender(tc.opts).Send(context.Background(), webhooks.Message{
				URL: tc.url, ID: "msg_f", Body: body, Secrets: []string{webhooks.NewSecret()},
			}, time.Now())
			if res.Error != tc.reason || leak.MatchString(res.Error) {
				t.Fatalf("reason %q, want %q", res.Error, tc.reason)
			}
		})
	}
}

// hangingUp returns the address of a listener that reads each request and closes its
// connection unanswered. (Closing before the request is read would race with its writing.)
func hangingUp(t *testing.T) string {
	t.Helper()
	ln, err := new(net.ListenConfig).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			if req, err := http.ReadRequest(bufio.NewReader(conn)); err == nil {
				_, _ = io.Copy(io.Discard, req.Body)
			}
			conn.Close()
		}
	}()
	return ln.Addr().String()
}
