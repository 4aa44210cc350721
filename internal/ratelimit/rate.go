package ratelimit

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Rate is a quota of requests per window, written "<quota>/<window>": "100/1s", "20/1m".
// The whole quota may be spent at once (the burst is the quota); after that, requests pass
// as fast as the quota refills, one every Window/Quota.
type Rate struct {
	Quota  int
	Window time.Duration
}

// ParseRate reads "<quota>/<window>". The window is a Go duration of whole seconds, because
// the RateLimit-Policy header states it in seconds.
func ParseRate(s string) (Rate, error) {
	quota, window, ok := strings.Cut(s, "/")
	if !ok {
		return Rate{}, fmt.Errorf("rate %q: want <quota>/<window>, e.g. 100/1s", s)
	}
	q, err := strconv.Atoi(quota)
	if err != nil || q < 1 || q > 1_000_000 {
		return Rate{}, fmt.Errorf("rate %q: quota must be a whole number from 1 to 1000000", s)
	}
	w, err := time.ParseDuration(window)
	if err != nil || w < time.Second || w > 24*time.Hour || w%time.Second != 0 {
		return Rate{}, fmt.Errorf("rate %q: window must be whole seconds from 1s to 24h, e.g. 1s or 1m", s)
	}
	return Rate{Quota: q, Window: w}, nil
}

// UnmarshalText lets configuration libraries parse a Rate.
func (r *Rate) UnmarshalText(text []byte) error {
	parsed, err := ParseRate(string(text))
	if err != nil {
		return err
	}
	*r = parsed
	return nil
}

func (r Rate) String() string { return fmt.Sprintf("%d/%s", r.Quota, r.Window) }

// Within reports whether r never lets more requests through than limit does: no larger a
// burst (Quota) and no faster a refill (Quota per Window). A bucket within the server's
// limit may replace it for one account, since it can only limit the account more.
func (r Rate) Within(limit Rate) bool {
	return r.Quota <= limit.Quota && r.Quota*limit.seconds() <= limit.Quota*r.seconds()
}

// seconds is the window in whole seconds, as ParseRate and the API write it, so that the
// products Within compares stay far from overflowing.
func (r Rate) seconds() int { return int(r.Window / time.Second) }

// emissionInterval is the time one request's worth of quota takes to refill.
func (r Rate) emissionInterval() time.Duration { return r.Window / time.Duration(r.Quota) }
