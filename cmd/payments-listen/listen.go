package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/payments-api/payments-api/internal/db"
	"github.com/payments-api/payments-api/internal/webhooks"
)

// event is an Event as GET /events shows it; data is kept as sent, to forward byte for byte.
type event struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	CreatedAt time.Time       `json:"created_at"`
	Data      json.RawMessage `json:"data"`
}

// eventListener polls the account's events. GET /events lists newest first, so each poll
// reads pages until it is lookback behind the newest event it had seen: an event is stamped
// when its transaction writes it, just before the commit, so one committed a moment after a
// newer one still shows up. The ids seen in that window are remembered.
type eventListener struct {
	config
	client *http.Client
	out    io.Writer
	seen   map[string]time.Time
	newest time.Time
}

// listen runs until ctx ends. Events that exist when it starts are not shown.
func listen(ctx context.Context, cfg config, out io.Writer) error {
	l := &eventListener{config: cfg, client: &http.Client{Timeout: 10 * time.Second}, out: out, seen: map[string]time.Time{}}
	l.apiURL = strings.TrimSuffix(l.apiURL, "/")
	if l.forwardTo != "" {
		if l.secret == "" {
			l.secret = webhooks.NewSecret()
		}
		_, _ = fmt.Fprintf(out, "Forwarding to %s, signed per Standard Webhooks with %s\n", l.forwardTo, l.secret)
	}
	if _, err := l.poll(ctx); err != nil { // what is already there is history: mark it seen
		return err
	}
	_, _ = fmt.Fprintf(out, "Listening for the events of %s (Ctrl-C to stop)\n", l.apiURL)
	ticker := time.NewTicker(l.interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
		fresh, err := l.poll(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var fatal *fatalError
			if errors.As(err, &fatal) {
				return err
			}
			_, _ = fmt.Fprintf(out, "poll: %v\n", err) // the server may be restarting: try again
			continue
		}
		for _, e := range fresh {
			l.show(ctx, e)
		}
	}
}

// poll returns the events not seen before, oldest first.
func (l *eventListener) poll(ctx context.Context) ([]event, error) {
	var fresh []event
	horizon := l.newest.Add(-l.lookback)
	after := ""
	for {
		page, hasMore, err := l.page(ctx, after)
		if err != nil {
			return nil, err
		}
		if l.newest.IsZero() && after == "" && len(page) > 0 {
			// The first poll: the newest event sets the horizon, so the account's history
			// beyond lookback is not read page by page only to be forgotten.
			horizon = page[0].CreatedAt.Add(-l.lookback)
		}
		for _, e := range page {
			if _, ok := l.seen[e.ID]; !ok && !e.CreatedAt.Before(horizon) {
				fresh = append(fresh, e)
			}
		}
		if !hasMore || len(page) == 0 || page[len(page)-1].CreatedAt.Before(horizon) {
			break
		}
		after = page[len(page)-1].ID
	}
	slices.SortFunc(fresh, func(a, b event) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), strings.Compare(a.ID, b.ID))
	})
	for _, e := range fresh {
		l.seen[e.ID] = e.CreatedAt
		if e.CreatedAt.After(l.newest) {
			l.newest = e.CreatedAt
		}
	}
	for id, at := range l.seen { // forget what is far behind the horizon
		if at.Before(l.newest.Add(-2 * l.lookback)) {
			delete(l.seen, id)
		}
	}
	return fresh, nil
}

// fatalError is a refusal polling again cannot fix (a wrong key).
type fatalError struct{ err error }

func (e *fatalError) Error() string { return e.err.Error() }

func (l *eventListener) page(ctx context.Context, after string) ([]event, bool, error) {
	target := l.apiURL + "/events?limit=100"
	if after != "" {
		target += "&starting_after=" + url.QueryEscape(after)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, false, err
	}
	req.Header.Set("Authorization", "Bearer "+l.apiKey)
	res, err := l.client.Do(req)
	if err != nil {
		return nil, false, err
	}
	body, err := io.ReadAll(io.LimitReader(res.Body, 16<<20))
	_ = res.Body.Close()
	switch {
	case err != nil:
		return nil, false, err
	case res.StatusCode == http.StatusUnauthorized:
		return nil, false, &fatalError{fmt.Errorf("GET /events: 401: the API key is unknown or revoked")}
	case res.StatusCode != http.StatusOK:
		return nil, false, fmt.Errorf("GET /events: %d %s", res.StatusCode, bytes.TrimSpace(body))
	}
	var list struct {
		Data    []event `json:"data"`
		HasMore bool    `json:"has_more"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, false, fmt.Errorf("GET /events: %w", err)
	}
	return list.Data, list.HasMore, nil
}

// show prints one line for the event and forwards it.
func (l *eventListener) show(ctx context.Context, e event) {
	var object struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(e.Data, &object) // every event's data is a resource with an id
	line := fmt.Sprintf("%s  %-18s %s  %s", e.CreatedAt.UTC().Format(time.RFC3339), e.Type, e.ID, object.ID)
	if l.forwardTo != "" {
		line += "  -> " + l.forward(ctx, e)
	}
	_, _ = fmt.Fprintln(l.out, line)
}

// forward POSTs the event as the server's webhooks carry it ({"type", "timestamp",
// "data"}), signed per Standard Webhooks, and says how the receiver answered. The message id
// is derived from the event id, so a receiver that dedupes by webhook-id sees one message.
func (l *eventListener) forward(ctx context.Context, e event) string {
	body, err := webhooks.Payload(db.Event{ID: e.ID, Type: e.Type, CreatedAt: e.CreatedAt, Data: e.Data})
	if err != nil {
		return err.Error()
	}
	id, now := "msg_"+strings.TrimPrefix(e.ID, "evt_"), time.Now()
	signature, err := webhooks.Sign(id, now, body, l.secret)
	if err != nil {
		return err.Error()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.forwardTo, bytes.NewReader(body))
	if err != nil {
		return err.Error()
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("webhook-id", id)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
	req.Header.Set("webhook-signature", signature)
	res, err := l.client.Do(req)
	if err != nil {
		return "error: " + err.Error()
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 1<<20))
	_ = res.Body.Close()
	return res.Status
}
