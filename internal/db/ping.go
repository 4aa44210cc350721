package db

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Pinger asks the database whether it answers, over a connection of its own rather than one
// of the pool's. A readiness check that borrowed from the pool would fail whenever every
// connection is busy serving requests: a load balancer would take every process out at once
// under load, when the database is fine and the processes are the ones doing the work.
type Pinger struct {
	config *pgx.ConnConfig
	turn   chan struct{} // one ping at a time, on the one connection
	conn   *pgx.Conn     // nil until the first ping, and after a failed one
}

// NewPinger pings the database pool connects to, as pool connects to it.
func NewPinger(pool *pgxpool.Pool) *Pinger {
	return &Pinger{config: pool.Config().ConnConfig.Copy(), turn: make(chan struct{}, 1)}
}

// Ping reports whether the database answers within ctx, connecting first when the last ping
// left no connection.
func (p *Pinger) Ping(ctx context.Context) error {
	select {
	case p.turn <- struct{}{}:
		defer func() { <-p.turn }()
	case <-ctx.Done():
		return fmt.Errorf("ping: waiting for the ping before: %w", ctx.Err())
	}
	if p.conn == nil {
		conn, err := pgx.ConnectConfig(ctx, p.config)
		if err != nil {
			return err
		}
		p.conn = conn
	}
	if err := p.conn.Ping(ctx); err != nil {
		p.close()
		return err
	}
	return nil
}

// Close closes the connection, if there is one.
func (p *Pinger) Close() {
	p.turn <- struct{}{}
	defer func() { <-p.turn }()
	p.close()
}

// close closes the connection without waiting for the server: a connection a ping gave up
// on may be to a server that no longer answers.
func (p *Pinger) close() {
	if p.conn == nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = p.conn.Close(ctx) // a cancelled context closes the socket without a goodbye
	p.conn = nil
}
