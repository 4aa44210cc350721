package db

import (
	"testing"
	"time"
)

func TestRangeBoundMovesUpToTheNextMicrosecond(t *testing.T) {
	at := time.Date(2026, 12, 2, 5, 56, 58, 973811000, time.UTC)
	for _, tt := range []struct {
		in, want time.Time
	}{
		{at, at},
		{at.Add(1), at.Add(time.Microsecond)},
		{at.Add(999), at.Add(time.Microsecond)},
		{at.Add(-1), at},
		{time.Date(1969, 12, 31, 23, 59, 59, 999999500, time.UTC), time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)},
	} {
		if got := RangeBound(tt.in); !got.Equal(tt.want) {
			t.Errorf("RangeBound(%s) = %s, want %s", tt.in.Format(time.RFC3339Nano), got.Format(time.RFC3339Nano), tt.want.Format(time.RFC3339Nano))
		}
	}
}
