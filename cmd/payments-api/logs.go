package main

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap/zapcore"
)

// bufferedLog batches the log's lines into one write every 100 ms or 64 KiB, whichever comes
// first. At info, every request logs a line, and a write(2) per line would add a system call
// to every request beside its socket's (docs/performance.md). The price: a line reaches w up to
// 100 ms late, and a process killed outright loses those lines; shutting down writes them.
//
// A flush hands the lines to the operating system and stops there. zap would also Sync w, an
// fsync when stdout is a file, and it holds the log's lock meanwhile: every request waited
// behind the disk ten times a second. A log line written unbuffered would not be fsynced
// either.
func bufferedLog(w io.Writer) *zapcore.BufferedWriteSyncer {
	return &zapcore.BufferedWriteSyncer{WS: zapcore.AddSync(writeOnly{w}), Size: 64 << 10, FlushInterval: 100 * time.Millisecond}
}

// writeOnly hides every method of its writer but Write, Sync among them.
type writeOnly struct{ io.Writer }

// newLogger writes JSON lines to w, as slog's JSON handler writes them with readableAttrs,
// the commonest lines faster (plainLines).
func newLogger(w io.Writer, level slog.Level) *slog.Logger {
	w = &lockedWriter{w: w}
	return slog.New(&plainLines{
		Handler: slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: readableAttrs}),
		w:       w,
	})
}

// readableAttrs writes durations as Go durations ("1.5s"), which a person can read, rather
// than slog's default integer nanoseconds. It turns the level into its string too, as it is
// written anyway ("INFO"): with a ReplaceAttr, slog hands it over as a slog.Level, which
// the JSON handler would encode through encoding/json's Marshaler path.
func readableAttrs(groups []string, a slog.Attr) slog.Attr {
	switch {
	case a.Value.Kind() == slog.KindDuration:
		a.Value = slog.StringValue(a.Value.Duration().String())
	case a.Key == slog.LevelKey && len(groups) == 0:
		if l, ok := a.Value.Any().(slog.Level); ok {
			a.Value = slog.StringValue(l.String())
		}
	}
	return a
}

// plainLines is newLogger's JSON handler with a shorter way for the lines the server writes
// most, one per request: a record whose message, keys and strings hold nothing JSON escapes
// (printable ASCII but " and \), and whose values are strings, integers, booleans and
// durations, is written here in one pass. slog's handler would write the same bytes, but it
// escapes every string a character at a time and calls readableAttrs on every attribute,
// the built-in ones too: about 14,000 instructions per request line, a tenth of a GET's
// (docs/performance.md). Any other record, and any logger made With attributes or a group,
// goes to slog's handler. TestPlainLinesAreSlogsLines and FuzzPlainLines hold the two to
// the same output.
type plainLines struct {
	slog.Handler           // slog's JSON handler: Enabled, WithAttrs, WithGroup and every other line
	w            io.Writer // the handler's writer, for the lines written here
}

// lineBuffers holds the buffers lines are written into, as slog's handler keeps its own.
var lineBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

func (h *plainLines) Handle(ctx context.Context, r slog.Record) error {
	bp := lineBuffers.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= 16<<10 { // as slog does: a rare long line keeps no large buffer alive
			lineBuffers.Put(bp)
		}
	}()
	line, ok := appendPlainLine((*bp)[:0], r)
	*bp = line
	if !ok {
		return h.Handler.Handle(ctx, r)
	}
	_, err := h.w.Write(line)
	return err
}

// appendPlainLine appends r as slog's JSON handler (with readableAttrs) writes it, or reports
// false if r holds anything that handler would write another way than a plain copy.
func appendPlainLine(b []byte, r slog.Record) ([]byte, bool) {
	b = append(b, '{')
	if !r.Time.IsZero() {
		t := r.Time.Round(0) // no monotonic reading, as slog
		if y := t.Year(); y < 0 || y > 9999 {
			return b, false // slog writes an error in its place
		}
		b = append(b, `"time":"`...)
		b = t.AppendFormat(b, time.RFC3339Nano)
		b = append(b, `",`...)
	}
	b = append(b, `"level":"`...)
	b = append(b, r.Level.String()...) // "INFO", "WARN+1": plain
	b = append(b, `","msg":`...)
	if !plain(r.Message) {
		return b, false
	}
	b = appendQuoted(b, r.Message)
	ok := true
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "" || !plain(a.Key) {
			ok = false
			return false
		}
		b = append(b, ',')
		b = appendQuoted(b, a.Key)
		b = append(b, ':')
		switch v := a.Value; v.Kind() {
		case slog.KindString:
			if ok = plain(v.String()); ok {
				b = appendQuoted(b, v.String())
			}
		case slog.KindInt64:
			b = strconv.AppendInt(b, v.Int64(), 10)
		case slog.KindUint64:
			b = strconv.AppendUint(b, v.Uint64(), 10)
		case slog.KindBool:
			b = strconv.AppendBool(b, v.Bool())
		case slog.KindDuration:
			// readableAttrs' string, which is digits, a point, a sign and units ("µs" among
			// them, which JSON keeps as it is)
			b = appendQuoted(b, v.Duration().String())
		default: // floats, times, groups, values of any type or that resolve themselves
			ok = false
		}
		return ok
	})
	return append(b, "}\n"...), ok
}

// plain reports whether JSON writes s as it is, between quotes.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' || c > '~' || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

func appendQuoted(b []byte, s string) []byte {
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// lockedWriter makes each Write whole: slog's handler and plainLines write to the same
// output, each a line at a time, under one lock.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
