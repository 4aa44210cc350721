package idempotency

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
)

// TestAGateLeavesConnectionsToTheRest: a gate lets charges take at most three quarters of
// its pool's connections, and leaves at least two to everything else wherever the pool has
// three or more; a smaller pool still lets one charge run.
func TestAGateLeavesConnectionsToTheRest(t *testing.T) {
	for conns, charges := range map[int]int{1: 1, 2: 1, 3: 1, 4: 2, 5: 3, 8: 6, 20: 15, 40: 30} {
		cfg, err := pgxpool.ParseConfig(fmt.Sprintf("postgres://nobody@127.0.0.1:1/none?pool_max_conns=%d", conns))
		if err != nil {
			t.Fatal(err)
		}
		pool, err := pgxpool.NewWithConfig(context.Background(), cfg) // connects to nothing until asked
		if err != nil {
			t.Fatal(err)
		}
		if got := cap(NewGate(pool).slots); got != charges {
			t.Errorf("a pool of %d: %d charges at once, want %d", conns, got, charges)
		}
		pool.Close()
	}
}
