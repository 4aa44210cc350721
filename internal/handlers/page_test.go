package handlers

import (
	"testing"

	"github.com/payments-api/payments-api/internal/contract"
)

// TestDefaultPageLimit reads the page size the spec documents for a list without a limit.
func TestDefaultPageLimit(t *testing.T) {
	c, err := contract.Load()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := defaultPageLimit(c.Spec()); err != nil || got != 10 {
		t.Fatalf("defaultPageLimit = %d, %v; want the spec's default, 10", got, err)
	}
}
