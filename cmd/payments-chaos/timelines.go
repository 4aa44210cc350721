package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// One writer at a time. Each promotion starts a new timeline, and the promoted node writes
// a history file naming the timeline it left and the WAL position where it left it. Two
// nodes accepting writes in the same period would show as two promotions where one was
// due, or as two nodes whose histories of the same timeline differ (each branched at its own
// point), or as a node left writing on a timeline of its own. Writes a demoted primary
// accepted past the branch point and then lost to pg_rewind would be acknowledged writes
// missing on the final primary, which checkAcknowledged looks for.

// nodeTimelines is what one PostgreSQL node says of its timelines.
type nodeTimelines struct {
	url       string
	primary   bool
	timeline  int            // the one it writes on (a primary) or receives (a standby)
	histories map[int]string // timeline → its history file
}

// readNode asks the node at url which timeline it is on and for its history files.
func readNode(ctx context.Context, url string) (nodeTimelines, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	n := nodeTimelines{url: url, histories: map[int]string{}}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return n, err
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }() // read only: a failed close loses nothing
	var timeline *int
	err = conn.QueryRow(ctx, `
		SELECT NOT pg_is_in_recovery(),
		       CASE WHEN pg_is_in_recovery() THEN (SELECT received_tli FROM pg_stat_wal_receiver)
		            ELSE ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::int END`).
		Scan(&n.primary, &timeline)
	if err != nil {
		return n, err
	}
	if timeline != nil {
		n.timeline = *timeline
	}
	rows, err := conn.Query(ctx, `
		SELECT ('x' || substr(name, 1, 8))::bit(32)::int, pg_read_file('pg_wal/' || name)
		FROM pg_ls_waldir() WHERE name LIKE '%.history'`)
	if err != nil {
		return n, err
	}
	for rows.Next() {
		var tli int
		var history string
		if err := rows.Scan(&tli, &history); err != nil {
			return n, err
		}
		n.histories[tli] = history
	}
	return n, rows.Err()
}

// checkTimelines reads every node once the run has healed: exactly one primary, every
// standby receiving on its timeline, and every history file of a timeline the same on every
// node that holds it.
func checkTimelines(ctx context.Context, urls []string) check {
	c := check{name: "one writer at a time (timelines)"}
	var nodes []nodeTimelines
	for _, url := range urls {
		n, err := readNode(ctx, url)
		if err != nil {
			c.found = fmt.Sprintf("%s: %v", hostOf(url), err)
			return c
		}
		nodes = append(nodes, n)
	}
	var problems []string
	primaries := slices.DeleteFunc(slices.Clone(nodes), func(n nodeTimelines) bool { return !n.primary })
	if len(primaries) != 1 {
		problems = append(problems, fmt.Sprintf("%d primaries", len(primaries)))
	}
	seen := map[int]string{} // timeline → its history as first read
	var parts []string
	for _, n := range nodes {
		role := "standby"
		if n.primary {
			role = "primary"
		}
		parts = append(parts, fmt.Sprintf("%s %s on %d", hostOf(n.url), role, n.timeline))
		if len(primaries) == 1 && n.timeline != primaries[0].timeline {
			problems = append(problems, fmt.Sprintf("%s on timeline %d, the primary on %d", hostOf(n.url), n.timeline, primaries[0].timeline))
		}
		for tli, h := range n.histories {
			if first, ok := seen[tli]; ok && first != h {
				problems = append(problems, fmt.Sprintf("timeline %d's history differs on %s", tli, hostOf(n.url)))
			}
			seen[tli] = h
		}
	}
	c.found = fmt.Sprintf("%s; %d history files agree", strings.Join(parts, ", "), len(seen))
	if len(problems) > 0 {
		c.found = strings.Join(problems, "; ") + " (" + strings.Join(parts, ", ") + ")"
	}
	c.ok = len(problems) == 0
	return c
}

// checkPromotions: each database fault moved the primary's timeline by as many promotions
// as it should have made (one for a lost or handed-over primary, none otherwise), and the
// timelines the run went through are listed in order.
func checkPromotions(records []faultRecord) check {
	c := check{name: "one promotion per lost primary", ok: true}
	var bad []string
	timelines := map[int]bool{}
	for _, r := range records {
		if r.timelines[0] == 0 {
			continue
		}
		if r.timelines[1] == 0 {
			bad = append(bad, fmt.Sprintf("%s at %s: no timeline read after it", r.name, seconds(r.began)))
			continue
		}
		timelines[r.timelines[0]], timelines[r.timelines[1]] = true, true
		if got := r.timelines[1] - r.timelines[0]; got != r.promotes {
			bad = append(bad, fmt.Sprintf("%s at %s: %d promotions, want %d", r.name, seconds(r.began), got, r.promotes))
		}
	}
	c.found = fmt.Sprintf("timelines %v", slices.Sorted(maps.Keys(timelines)))
	if len(bad) > 0 {
		c.ok, c.found = false, strings.Join(bad, "; ")+"; "+c.found
	}
	return c
}

// checkWriteTargets: after each database fault, writes were acknowledged again within its
// target.
func checkWriteTargets(records []faultRecord) check {
	c := check{name: "writes resumed within target", ok: true}
	var parts []string
	for _, r := range records {
		if r.writesWithin == 0 {
			continue
		}
		within := r.writesPaused >= 0 && r.writesPaused <= r.writesWithin
		if !within {
			c.ok = false
			paused := "never resumed"
			if r.writesPaused >= 0 {
				paused = seconds(r.writesPaused)
			}
			parts = append(parts, fmt.Sprintf("%s at %s: %s > %s", r.name, seconds(r.began), paused, r.writesWithin))
		}
	}
	c.found = "every fault within its target"
	if len(parts) > 0 {
		c.found = strings.Join(parts, "; ")
	}
	return c
}

// hostOf names a node by its URL's host.
func hostOf(url string) string {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return url
	}
	return cfg.Host
}

// checkCleared: after each database fault the cluster was whole again (a primary and every
// standby streaming from it) within the fault's wait, so the next fault met a healthy cluster.
func checkCleared(records []faultRecord) check {
	c := check{name: "cluster whole after each fault", ok: true, found: fmt.Sprintf("%d faults", len(records))}
	var bad []string
	for _, r := range records {
		if r.notCleared != nil {
			bad = append(bad, fmt.Sprintf("%s at %s: %v", r.name, seconds(r.began), r.notCleared))
		}
	}
	if len(bad) > 0 {
		c.ok, c.found = false, strings.Join(bad, "; ")
	}
	return c
}
