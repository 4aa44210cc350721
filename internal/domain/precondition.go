package domain

import "slices"

// Precondition is a parsed If-Match on a versioned resource: any current version
// (If-Match: *), or one of Versions. A write under a precondition checks it in the same
// statement that writes, so two clients holding the same version cannot both succeed.
type Precondition struct {
	Any      bool
	Versions []int32
}

// Matches reports whether version satisfies the precondition, for checks made in Go on a row
// that is already locked.
func (p Precondition) Matches(version int32) bool {
	return p.Any || slices.Contains(p.Versions, version)
}
