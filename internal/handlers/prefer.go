package handlers

import (
	"fmt"
	"strings"
	"time"

	"github.com/payments-api/payments-api/internal/domain"
)

// Fault injection is asked for with RFC 7240 preferences in Prefer, as Prism's users know
// from `Prefer: code=...`. These are the preferences the server understands; any other is
// ignored, as RFC 7240 says a server does with preferences it does not support.
const (
	preferFault   = "fault"
	preferLatency = "latency"

	faultLostResponse = "lost-response" // do the work, commit, then close without answering
	faultErrorBefore  = "error-before"  // 503 before any work
	faultRateLimited  = "rate-limited"  // the 429 the rate limiter sends

	maxInjectedLatency = 30 * time.Second
)

// preferences are the faults a request asked for.
type preferences struct {
	fault   string
	latency time.Duration
}

// parsePrefer reads every Prefer field of a request. Only the first instance of a preference
// counts (RFC 7240 §2). A fault or latency the server cannot honour as written is a client
// error naming Prefer: silently ignoring a misspelt fault would make a test pass for the wrong
// reason.
func parsePrefer(fields []string) (preferences, error) {
	var p preferences
	seen := map[string]bool{}
	for _, field := range fields {
		for _, element := range splitOutsideQuotes(field, ',') {
			name, value, hasValue := strings.Cut(splitOutsideQuotes(element, ';')[0], "=")
			name = strings.ToLower(strings.TrimSpace(name))
			if name == "" || seen[name] {
				continue
			}
			seen[name] = true
			value = unquote(strings.TrimSpace(value))
			var err error
			switch name {
			case preferFault:
				p.fault, err = parseFault(value, hasValue)
			case preferLatency:
				p.latency, err = parseLatency(value)
			}
			if err != nil {
				return preferences{}, &domain.ValidationError{Field: "Prefer", Message: err.Error()}
			}
		}
	}
	return p, nil
}

func parseFault(value string, hasValue bool) (string, error) {
	switch value {
	case faultLostResponse, faultErrorBefore, faultRateLimited:
		return value, nil
	}
	if !hasValue {
		value = "nothing"
	}
	return "", fmt.Errorf("fault must be %s, %s or %s; got %q", faultLostResponse, faultErrorBefore, faultRateLimited, value)
}

func parseLatency(value string) (time.Duration, error) {
	d, err := time.ParseDuration(value)
	if err != nil || d < 0 || d > maxInjectedLatency {
		return 0, fmt.Errorf("latency must be a duration from 0s to %s, such as 250ms or 2s; got %q", maxInjectedLatency, value)
	}
	return d, nil
}

// splitOutsideQuotes splits s at each sep that is not inside a quoted string.
func splitOutsideQuotes(s string, sep byte) []string {
	var parts []string
	quoted, escaped, start := false, false, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case escaped:
			escaped = false
		case quoted && c == '\\':
			escaped = true
		case c == '"':
			quoted = !quoted
		case !quoted && c == sep:
			parts = append(parts, s[start:i])
			start = i + 1
		}
	}
	return append(parts, s[start:])
}

// unquote returns the content of an RFC 9110 quoted-string, or s itself when it is a token.
func unquote(s string) string {
	if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
		return s
	}
	var b strings.Builder
	for i := 1; i < len(s)-1; i++ {
		if s[i] == '\\' && i+1 < len(s)-1 {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
