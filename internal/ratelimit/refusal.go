package ratelimit

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// ExceededError is a request refused by a policy. internal/handlers answers it with the
// rate-limited problem: Detail as its detail, RetryAfterSeconds as its Retry-After.
type ExceededError struct {
	Policy   Policy
	Decision Decision
}

func (e *ExceededError) Error() string {
	return fmt.Sprintf("rate limit %s (%s) exceeded; retry after %s", e.Policy.Name, e.Policy.Rate, e.Decision.RetryAfter)
}

// RetryAfterSeconds is the refused request's Retry-After: whole seconds, rounded up, and
// never 0, which clients read as "retry at once".
func (e *ExceededError) RetryAfterSeconds() int {
	return max(1, int(math.Ceil(e.Decision.RetryAfter.Seconds())))
}

// Detail says in words which quota refused the request and when to retry: "The writes quota
// of 25 requests per second is used up; retry after 1 second."
func (e *ExceededError) Detail() string { return detail(e.Policy, e.RetryAfterSeconds()) }

func detail(p Policy, retryAfter int) string {
	return fmt.Sprintf("The %s quota of %s per %s is used up; retry after %s.",
		p.Name, plural(p.Quota, "request"), window(p.Window), plural(retryAfter, "second"))
}

// window names a rate's window as a person would: "second", "10 seconds", "minute", "hour".
// The largest unit that divides it is used, so 90 s stays "90 seconds".
func window(d time.Duration) string {
	unit, name := time.Second, "second"
	for _, u := range []struct {
		d    time.Duration
		name string
	}{{24 * time.Hour, "day"}, {time.Hour, "hour"}, {time.Minute, "minute"}} {
		if d%u.d == 0 {
			unit, name = u.d, u.name
			break
		}
	}
	if d == unit {
		return name
	}
	return plural(int(d/unit), name)
}

// plural is n of a unit, in the plural unless n is 1: "1 request", "25 requests".
func plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return strconv.Itoa(n) + " " + unit + "s"
}
