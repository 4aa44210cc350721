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
