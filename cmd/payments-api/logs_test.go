package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/payments-api/payments-api/internal/testing/dbtest"
	"github.com/payments-api/payments-api/internal/testing/integration"
)

// TestLogDurationsAreReadable: durations are logged as "30s", not as integer nanoseconds.
func TestLogDurationsAreReadable(t *testing.T) {
	t.Parallel()
	var out integration.SyncBuffer
	newLogger(&out, slog.LevelInfo).Info("shutting down", "timeout", 30*time.Second, "took", 1500*time.Microsecond)
	var line map[string]any
	if err := json.Unmarshal([]byte(out.String()), &line); err != nil {
		t.Fatal(err)
	}
	if line["timeout"] != "30s" || line["took"] != "1.5ms" {
		t.Errorf("logged %s", out.String())
	}
}

// TestLogLevelsAreWrittenAsSlogWritesThem: the logger writes the level as a string itself
// (cheaper than slog's path for it), and must write what slog would: "INFO", "WARN+1".
func TestLogLevelsAreWrittenAsSlogWritesThem(t *testing.T) {
	t.Parallel()
	for _, level := range []slog.Level{slog.LevelInfo, slog.LevelWarn + 1, slog.LevelError} {
		var ours, slogs integration.SyncBuffer
		newLogger(&ours, slog.LevelInfo).Log(context.Background(), level, "m")
		slog.New(slog.NewJSONHandler(&slogs, nil)).Log(context.Background(), level, "m")
		var a, b map[string]any
		if err := errors.Join(json.Unmarshal([]byte(ours.String()), &a), json.Unmarshal([]byte(slogs.String()), &b)); err != nil {
			t.Fatal(err)
		}
		if a["level"] != b["level"] {
			t.Errorf("level %v: logged %q, slog writes %q", level, a["level"], b["level"])
		}
	}
}

// TestHTTPServerErrorsAreJSONLogs: what net/http itself complains about (here, a panic it
// recovered from) is a JSON line at ERROR in the server's log, not plain text on stderr.
func TestHTTPServerErrorsAreJSONLogs(t *testing.T) {
	t.Parallel()
	cfg, err := loadConfig(map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	var logs integration.SyncBuffer
	srv := newHTTPServer(cfg, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("handler bug") }),
		newLogger(&logs, slog.LevelInfo))
	ln, err := new(net.ListenConfig).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })

	if _, err := integration.Get(context.Background(), "http://"+ln.Addr().String()); err == nil {
		t.Fatal("a panicking handler answered")
	}
	integration.WaitFor(t, func() bool { return strings.Contains(logs.String(), "handler bug") })
	var line map[string]any
	if err := json.Unmarshal([]byte(strings.SplitN(logs.String(), "\n", 2)[0]), &line); err != nil {
		t.Fatalf("not a JSON line: %q", logs.String())
	}
	if line["level"] != "ERROR" || !strings.Contains(fmt.Sprint(line["msg"]), "http: panic serving") {
		t.Errorf("logged %v", line)
	}
}

// TestBufferedLogWritesEveryLine: the log's lines are batched, but each reaches the output:
// on the flush interval while the server runs, and on Stop, when it shuts down.
func TestBufferedLogWritesEveryLine(t *testing.T) {
	t.Parallel()
	var out integration.SyncBuffer
	w := bufferedLog(&out)
	logger := newLogger(w, slog.LevelInfo)
	logger.Info("first")
	integration.WaitFor(t, func() bool { return strings.Contains(out.String(), `"msg":"first"`) }) // the interval

	for i := range 100 {
		logger.Info("request", "n", i)
	}
	if err := w.Stop(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 101 || !strings.Contains(lines[100], `"n":99`) {
		t.Errorf("after Stop, the output has %d lines, want 101 ending with n=99:\n%s", len(lines), out.String())
	}
}

// TestBufferedLogNeverSyncsItsOutput: a flush writes to the output and does not Sync it (an
// fsync, when stdout is a file), neither on the interval nor on Stop.
func TestBufferedLogNeverSyncsItsOutput(t *testing.T) {
	t.Parallel()
	out := &syncCounter{}
	w := bufferedLog(out)
	logger := newLogger(w, slog.LevelInfo)
	logger.Info("first")
	integration.WaitFor(t, func() bool { return strings.Contains(out.String(), `"msg":"first"`) }) // the interval
	logger.Info("second")
	if err := w.Stop(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"msg":"second"`) {
		t.Fatalf("Stop did not write the last line:\n%s", out.String())
	}
	if n := out.syncs.Load(); n != 0 {
		t.Errorf("the output was synced %d times", n)
	}
}

// syncCounter is an output that can be synced, as an *os.File can, and counts it.
type syncCounter struct {
	integration.SyncBuffer
	syncs atomic.Int32
}

func (s *syncCounter) Sync() error {
	s.syncs.Add(1)
	return nil
}

// TestProcessWritesItsLastLinesOnSIGTERM: the binary's log is buffered, and a graceful
// shutdown writes what the buffer holds, down to the last line it logs.
func TestProcessWritesItsLastLinesOnSIGTERM(t *testing.T) {
	t.Parallel()
	p := startProcess(t, dbtest.NewURL(t), nil)
	if err := p.Stop(30 * time.Second); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, p.Logs())
	}
	if !strings.Contains(p.Logs(), `"msg":"stopped"`) {
		t.Errorf("the last line, stopped, is not in the output:\n%s", p.Logs())
	}
}

// slogsLine is what slog's own JSON handler, with newLogger's options, writes for r: what
// plainLines must write too.
func slogsLine(t testing.TB, r slog.Record) string {
	t.Helper()
	var out strings.Builder
	h := slog.NewJSONHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug, ReplaceAttr: readableAttrs})
	if err := h.Handle(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// ourLine is what newLogger's handler writes for r, and whether plainLines wrote it itself.
func ourLine(t testing.TB, r slog.Record) (line string, plain bool) {
	t.Helper()
	var out strings.Builder
	if err := newLogger(&out, slog.LevelDebug).Handler().Handle(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	_, plain = appendPlainLine(nil, r)
	return out.String(), plain
}

func record(when time.Time, msg string, attrs ...slog.Attr) slog.Record {
	r := slog.NewRecord(when, slog.LevelInfo, msg, 0)
	r.AddAttrs(attrs...)
	return r
}

// TestPlainLinesAreSlogsLines: the lines plainLines writes itself are byte for byte slog's,
// and the request's line is one of them; every other record is left to slog.
func TestPlainLinesAreSlogsLines(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 6, 14, 30, 5, 123456000, time.UTC)
	request := []slog.Attr{ // as the server's request line (handlers.logRequest)
		slog.String("method", "GET"), slog.String("route", "/payments/{id}"), slog.Int("status", 200),
		slog.Duration("duration", 1234567*time.Nanosecond), slog.String("request_id", "req_X5M2KBCNUQHN7FGJCTXEBL76MG"),
		slog.Bool("client_gone", true), slog.String("account", "acct_demo"),
	}
	for _, tt := range []struct {
		name  string
		r     slog.Record
		plain bool
	}{
		{"a request", record(now, "request", request...), true},
		{"a time in another zone", record(now.In(time.FixedZone("X", -3*3600)), "request", request...), true},
		{"no time", record(time.Time{}, "request", request...), true},
		{"no attributes", record(now, "stopped"), true},
		{"an unsigned integer, a negative one, a duration under a microsecond", record(now, "m",
			slog.Uint64("u", 1<<63), slog.Int("i", -5), slog.Duration("d", 999), slog.Duration("neg", -time.Minute)), true},
		{"a level above the named ones", func() slog.Record {
			r := record(now, "m")
			r.Level = slog.LevelWarn + 1
			return r
		}(), true},
		{"a quote in a value", record(now, "request", slog.String("route", `/a"b`)), false},
		{"a backslash in the message", record(now, `a\b`), false},
		{"a newline in a key", record(now, "m", slog.String("a\nb", "x")), false},
		{"text beyond ASCII", record(now, "m", slog.String("name", "Zoë")), false},
		{"invalid UTF-8", record(now, "m", slog.String("name", "\xff")), false},
		{"DEL", record(now, "m", slog.String("name", "\x7f")), false},
		{"an empty key", record(now, "m", slog.String("", "x")), false},
		{"a float", record(now, "m", slog.Float64("f", 0.1)), false},
		{"a time", record(now, "m", slog.Time("at", now)), false},
		{"a group", record(now, "m", slog.Group("g", slog.Int("a", 1))), false},
		{"an error", record(now, "m", slog.Any("err", errors.New("boom"))), false},
		{"a year past 9999", record(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), "m"), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, plain := ourLine(t, tt.r)
			if want := slogsLine(t, tt.r); got != want {
				t.Errorf("wrote\n%s\nslog writes\n%s", got, want)
			}
			if plain != tt.plain {
				t.Errorf("written by plainLines: %v, want %v", plain, tt.plain)
			}
		})
	}
}

// FuzzPlainLines: whatever the message, keys and values, the logger writes slog's line.
func FuzzPlainLines(f *testing.F) {
	f.Add("request", "route", "/payments/{id}", int64(200), int64(1234567), true)
	f.Add(`a"b`, "k\n", "Zoë", int64(-1), int64(-5), false)
	f.Fuzz(func(t *testing.T, msg, key, s string, i, d int64, b bool) {
		r := record(time.Unix(0, d).UTC(), msg, slog.String(key, s), slog.Int64("i", i),
			slog.Duration("d", time.Duration(d)), slog.Bool("b", b))
		if got, _ := ourLine(t, r); got != slogsLine(t, r) {
			t.Errorf("wrote\n%s\nslog writes\n%s", got, slogsLine(t, r))
		}
	})
}

// TestLinesAreWrittenWhole: lines written by plainLines and by slog's handler at once, from
// many goroutines, each reach the output in one piece (go test -race checks the writer is
// only ever written under the lock).
func TestLinesAreWrittenWhole(t *testing.T) {
	t.Parallel()
	var out strings.Builder // not safe for concurrent use: the logger's lock must make it so
	logger := newLogger(&out, slog.LevelInfo)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				logger.Info("request", "g", g, "i", i)          // plainLines
				logger.Info("request", "g", g, "f", float64(i)) // slog's handler
			}
		})
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 8*50*2 {
		t.Fatalf("%d lines, want %d", len(lines), 8*50*2)
	}
	for _, line := range lines {
		if !json.Valid([]byte(line)) {
			t.Fatalf("not a whole JSON line: %q", line)
		}
	}
}
