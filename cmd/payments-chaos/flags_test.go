package main

import (
	"errors"
	"flag"
	"slices"
	"strings"
	"testing"
)

func TestParseFlags(t *testing.T) {
	cfg, err := parseFlags([]string{"-api-ports", "8281,8282", "-workers", "3", "--", "pgbouncer", "pgbouncer.ini"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.cluster.apiPorts, []int{8281, 8282}) || cfg.cluster.workers != 3 ||
		!slices.Equal(cfg.cluster.pgbouncerArgv, []string{"pgbouncer", "pgbouncer.ini"}) {
		t.Errorf("parsed %+v", cfg.cluster)
	}
	if cfg.cluster.pooledQuery != "default_query_exec_mode=simple_protocol" || cfg.cluster.poolerPreparedStatements {
		t.Errorf("by default: pooled query %q, pooler keeps prepared statements %v; want simple_protocol, false",
			cfg.cluster.pooledQuery, cfg.cluster.poolerPreparedStatements)
	}
	session, err := parseFlags([]string{"-pooled-query", "default_query_exec_mode=cache_statement&pool_max_conns=10",
		"-pooler-prepared-statements=true", "--", "pgbouncer"})
	if err != nil || session.cluster.pooledQuery != "default_query_exec_mode=cache_statement&pool_max_conns=10" ||
		!session.cluster.poolerPreparedStatements {
		t.Errorf("session pooling's flags: %+v, %v", session.cluster, err)
	}
	for _, tt := range []struct {
		args []string
		want string // what the error names
	}{
		{[]string{"-api-ports", "8281,x", "--", "pgbouncer"}, "-api-ports"},
		{[]string{"-duration", "soon", "--", "pgbouncer"}, "-duration"},
		{[]string{"-nope", "--", "pgbouncer"}, "-nope"},
		{nil, "--"},
		{[]string{"-db-faults", "kill-primary", "--", "pgbouncer"}, "-fault-command"},
		{[]string{"-db-faults", "unplug", "-fault-command", "fault", "-nodes", "postgres://n1", "--", "pgbouncer"}, "unplug"},
	} {
		if _, err := parseFlags(tt.args); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("payments-chaos %v: %v, want an error naming %s", tt.args, err, tt.want)
		}
	}
	if _, err := parseFlags([]string{"-h"}); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("payments-chaos -h: %v, want flag.ErrHelp (the usage printed)", err)
	}
}
