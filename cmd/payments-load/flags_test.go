package main

import (
	"errors"
	"flag"
	"strings"
	"testing"
)

func TestParseFlags(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string // what the error names
	}{
		{[]string{"-duration", "0s"}, "-duration"},
		{[]string{"-url", "http://192.0.2.1:8080"}, "-url"},
		{[]string{"-stripe-mock-url", "http://192.0.2.1:12111"}, "-stripe-mock-url"},
		{[]string{"-stripe-mock-url", "127.0.0.1:12111"}, "-stripe-mock-url"},
		{[]string{"-cluster-url", "http://192.0.2.1:8080"}, "-cluster-url"},
		{[]string{"-scenarios", "get,nope"}, `"nope"`},
		{[]string{"-nope"}, "-nope"},
		{[]string{"extra"}, `"extra"`},
	} {
		if _, err := parseFlags(tt.args); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("payments-load %v: %v, want an error naming %s", tt.args, err, tt.want)
		}
	}
	if cfg, err := parseFlags([]string{"-stripe-mock-url", "http://127.0.0.1:12111"}); err != nil || cfg.StripeMock != "http://127.0.0.1:12111" {
		t.Errorf("payments-load -stripe-mock-url http://127.0.0.1:12111: %q, %v", cfg.StripeMock, err)
	}
	if cfg, err := parseFlags([]string{"-cluster-url", "http://127.0.0.1:8280"}); err != nil || cfg.ClusterURL != "http://127.0.0.1:8280" {
		t.Errorf("payments-load -cluster-url http://127.0.0.1:8280: %q, %v", cfg.ClusterURL, err)
	}
	if _, err := parseFlags([]string{"-h"}); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("payments-load -h: %v, want flag.ErrHelp (the usage printed)", err)
	}
}
