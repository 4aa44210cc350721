package webhooks

import (
	"math/rand/v2"
	"time"
)

// DefaultSchedule is the Standard Webhooks retry schedule: after the first attempt (sent at
// once), retry after 5 s, 5 m, 30 m, 2 h, 5 h, 10 h, 14 h, 20 h and 24 h, about three days in
// all. WEBHOOK_RETRY_SCHEDULE replaces it.
var DefaultSchedule = Schedule{
	5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour,
	10 * time.Hour, 14 * time.Hour, 20 * time.Hour, 24 * time.Hour,
}

// Schedule is the delay before each retry: Schedule[0] separates the first attempt from the
// second. Its length is the number of retries.
type Schedule []time.Duration

// jitterFraction spreads retries by up to ±10 %, so deliveries that failed together (an
// endpoint's outage) do not all come back in the same second.
const jitterFraction = 0.1

// Next returns when to make the next attempt after attempts attempts have failed, and false
// when the schedule is used up. A receiver's Retry-After (429, 503) is honoured: the next
// attempt is never earlier than it asked.
func (s Schedule) Next(now time.Time, attempts int, retryAfter time.Duration) (time.Time, bool) {
	if attempts < 1 || attempts > len(s) {
		return time.Time{}, false
	}
	return now.Add(max(jitter(s[attempts-1]), retryAfter)), true
}

// jitter returns d moved by a uniformly random amount within ±10 %.
func jitter(d time.Duration) time.Duration {
	spread := float64(d) * jitterFraction
	return d + time.Duration((rand.Float64()*2-1)*spread)
}
