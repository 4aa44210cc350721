package handlers

import (
	"context"
	"errors"
	"io"
	"net/http"
	"time"
)

// streamContext is ctx, with its values, ended when its request's connection ends (the client
// leaving, or the process stopping, with that cause) but not at REQUEST_TIMEOUT: for an answer
// that streams for longer than a request may work, each step of which is bounded on its own
// (a read from the database, a write: see streamWriter). stop releases it.
func streamContext(ctx context.Context) (stream context.Context, stop context.CancelFunc) {
	conn := stateFrom(ctx).conn
	if conn == nil {
		return ctx, func() {}
	}
	stream, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	unwatch := context.AfterFunc(conn, func() { cancel(context.Cause(conn)) })
	return stream, func() { unwatch(); cancel(nil) }
}

// streamWriter gives each write of a long answer a deadline of its own, within from when it
// starts, in place of the server's WRITE_TIMEOUT for the whole answer: a client that keeps
// reading gets all of it however slowly it reads, and one that stops reading is cut off.
type streamWriter struct {
	w      io.Writer
	rc     *http.ResponseController
	within time.Duration
}

func (s streamWriter) Write(p []byte) (int, error) {
	if err := s.rc.SetWriteDeadline(time.Now().Add(s.within)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return 0, err
	}
	return s.w.Write(p)
}
