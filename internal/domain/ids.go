package domain

import "crypto/rand"

// NewID returns an opaque, unguessable id with a type prefix ("pay" → "pay_3JQ2..."). The
// prefix tells a human what an id names; clients must not parse the rest.
func NewID(prefix string) string {
	return prefix + "_" + rand.Text()
}
