package ratelimit

import "testing"

// TestRefusalDetail: a 429 says its quota and its wait as a person would say them.
func TestRefusalDetail(t *testing.T) {
	tests := []struct {
		rate       string
		retryAfter int
		want       string
	}{
		{"25/1s", 1, "The writes quota of 25 requests per second is used up; retry after 1 second."},
		{"1/1s", 1, "The writes quota of 1 request per second is used up; retry after 1 second."},
		{"100/10s", 2, "The writes quota of 100 requests per 10 seconds is used up; retry after 2 seconds."},
		{"10/60s", 6, "The writes quota of 10 requests per minute is used up; retry after 6 seconds."},
		{"10/90s", 9, "The writes quota of 10 requests per 90 seconds is used up; retry after 9 seconds."},
		{"20/5m", 15, "The writes quota of 20 requests per 5 minutes is used up; retry after 15 seconds."},
		{"1000/3600s", 4, "The writes quota of 1000 requests per hour is used up; retry after 4 seconds."},
		{"1000/2h", 8, "The writes quota of 1000 requests per 2 hours is used up; retry after 8 seconds."},
		{"1/24h", 86400, "The writes quota of 1 request per day is used up; retry after 86400 seconds."},
	}
	for _, tt := range tests {
		p := Policy{Name: "writes", Rate: mustParse(t, tt.rate)}
		if got := detail(p, tt.retryAfter); got != tt.want {
			t.Errorf("%s, retry after %d:\ngot  %s\nwant %s", tt.rate, tt.retryAfter, got, tt.want)
		}
	}
}
