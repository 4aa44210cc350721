package jobs

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"
)

// TestRiverLogsEachMessageOnceInAWhile: River logs the same failure on every poll while the
// database is down. Its logger lets each message out once per repeatInterval, with the
// count left out since, caps it at WARN, and lets other messages through meanwhile.
func TestRiverLogsEachMessageOnceInAWhile(t *testing.T) {
	var out bytes.Buffer
	logger := riverLogs(slog.New(slog.NewJSONHandler(&out, nil))).With("component", "producer")
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	log := func(at time.Duration, level slog.Level, msg string) {
		r := slog.NewRecord(start.Add(at), level, msg, 0)
		if err := logger.Handler().Handle(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 50 { // five a second for ten seconds
		log(time.Duration(i)*200*time.Millisecond, slog.LevelError, "producer: Error fetching jobs")
	}
	log(time.Second, slog.LevelInfo, "elector: leadership lost")
	log(10*time.Second, slog.LevelError, "producer: Error fetching jobs")

	type line struct {
		Level, Msg string
		Repeated   int
	}
	var got []line
	for raw := range bytes.Lines(out.Bytes()) {
		var l line
		if err := json.Unmarshal(raw, &l); err != nil {
			t.Fatal(err)
		}
		got = append(got, l)
	}
	want := []line{
		{"WARN", "producer: Error fetching jobs", 0},
		{"INFO", "elector: leadership lost", 0},
		{"WARN", "producer: Error fetching jobs", 49},
	}
	if len(got) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(got), len(want), out.String())
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}
