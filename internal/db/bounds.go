package db

import "time"

// RangeBound is a time bound of a range (created_gte, created_lt) as PostgreSQL can compare it:
// timestamptz keeps microseconds, and pgx drops whatever finer a time.Time carries when it
// sends one, which would move a bound back past the rows just before it. RFC 3339 allows
// any precision, so a bound between two microseconds is moved up to the next one instead:
// no row lies between them, so the range selects exactly the rows it names.
func RangeBound(t time.Time) time.Time {
	if whole := t.Truncate(time.Microsecond); whole.Before(t) {
		return whole.Add(time.Microsecond)
	}
	return t
}
