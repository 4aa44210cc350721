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
