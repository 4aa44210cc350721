package main

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// The database's faults, for the highly available cluster of deploy/ha: each is a command of
// deploy/ha/fault (run through -fault-command), and each is cleared by waiting until Patroni
// has a primary and two standbys streaming from it again, so that the next fault starts
// from a whole cluster.

// dbFault is one fault of the catalogue -db-faults chooses from.
type dbFault struct {
	name        string
	description string
	begin, end  []string      // deploy/ha/fault's arguments; end runs before wait-healthy
	hold        time.Duration // how long the fault stays in force before end
	// writesWithin is the target for the longest stretch without an acknowledged write
	// (0: none, as when the application is cut off from a primary that stays primary).
	writesWithin time.Duration
	promotes     int // standbys it should have promoted: one for a lost or handed-over primary
}

// Targets of issue 34: writes resume within 15 s of an unplanned loss, 2 s of a planned one.
const (
	unplannedTarget = 15 * time.Second
	plannedTarget   = 2 * time.Second
)

// dbFaultCatalogue is every database fault, in the schedule's order. The holds of the
// freeze and the partition outlast Patroni's ttl (10 s, deploy/ha/patroni.yml), so the
// leader key expires and a standby is promoted while the old primary is still there.
var dbFaultCatalogue = []dbFault{
	{name: "kill-primary", description: "kill -9 the primary's postmaster",
		begin: []string{"kill-primary"}, hold: 5 * time.Second, writesWithin: unplannedTarget, promotes: 1},
	{name: "stop-primary", description: "SIGSTOP the primary's host 20 s, then SIGCONT",
		begin: []string{"stop-primary"}, end: []string{"cont"}, hold: 20 * time.Second, writesWithin: unplannedTarget, promotes: 1},
	{name: "cut-primary", description: "partition the primary from etcd and the other nodes 20 s",
		begin: []string{"cut-primary"}, end: []string{"heal"}, hold: 20 * time.Second, writesWithin: unplannedTarget, promotes: 1},
	{name: "partition-app", description: "partition the app host from the primary 10 s",
		begin: []string{"partition-app"}, end: []string{"heal"}, hold: 10 * time.Second},
	{name: "switchover", description: "patronictl switchover (planned)",
		begin: []string{"switchover"}, hold: 5 * time.Second, writesWithin: plannedTarget, promotes: 1},
	{name: "kill-standby", description: "kill -9 the synchronous standby's postmaster",
		begin: []string{"kill-standby"}, hold: 5 * time.Second, writesWithin: unplannedTarget},
}

// dbFaultNames lists the catalogue's names, for -db-faults.
func dbFaultNames() []string {
	names := make([]string, len(dbFaultCatalogue))
	for i, f := range dbFaultCatalogue {
		names[i] = f.name
	}
	return names
}

// chooseDBFaults picks the named faults from the catalogue, in the catalogue's order.
func chooseDBFaults(names []string) ([]dbFault, error) {
	var chosen []dbFault
	for _, n := range names {
		if !slices.Contains(dbFaultNames(), n) {
			return nil, fmt.Errorf("-db-faults: no fault %q (want some of %s)", n, strings.Join(dbFaultNames(), ","))
		}
	}
	for _, f := range dbFaultCatalogue {
		if slices.Contains(names, f.name) {
			chosen = append(chosen, f)
		}
	}
	return chosen, nil
}

// dbFaults turns the chosen faults into the schedule's, each running command (the argv of
// deploy/ha/fault) with its arguments, and reading the primary's timeline at primaryURL.
func dbFaults(command []string, primaryURL string, chosen []dbFault) []fault {
	run := func(ctx context.Context, args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, command[0], append(command[1:], args...)...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		text := strings.TrimSpace(out.String())
		if err != nil {
			return text, fmt.Errorf("deploy/ha/fault %s: %w: %s", strings.Join(args, " "), err, text)
		}
		return text, nil
	}
	fs := make([]fault, len(chosen))
	for i, f := range chosen {
		fs[i] = fault{name: f.description, hold: f.hold, writesWithin: f.writesWithin,
			promotes: f.promotes, timeline: func(ctx context.Context) (int, error) { return primaryTimeline(ctx, primaryURL) },
			begin: func() error {
				// A switchover waits for the new primary; 30 s bounds any command.
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				out, err := run(ctx, f.begin...)
				if err == nil {
					fmt.Printf("  %s: %s\n", f.name, lastSaid(out))
				}
				return err
			},
			end: func(ctx context.Context) error {
				if len(f.end) > 0 {
					if _, err := run(ctx, f.end...); err != nil {
						return err
					}
				}
				_, err := run(ctx, "wait-healthy", "240")
				return err
			}}
	}
	return fs
}

// primaryTimeline is the timeline the primary at url writes on: the first eight hex digits
// of its current WAL file's name.
func primaryTimeline(ctx context.Context, url string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return 0, fmt.Errorf("read the timeline: %w", err)
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }() // read only: a failed close loses nothing
	var tli int
	err = conn.QueryRow(ctx, `SELECT ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::int`).Scan(&tli)
	if err != nil {
		return 0, fmt.Errorf("read the timeline: %w", err)
	}
	return tli, nil
}

// lastSaid is the last line of out that is not part of a table: what the fault did (a
// switchover prints the cluster before and after).
func lastSaid(out string) string {
	lines := strings.Split(out, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" && !strings.HasPrefix(l, "+") && !strings.HasPrefix(l, "|") {
			return l
		}
	}
	return ""
}
