package telemetry

import (
	"context"
	"os"
	"runtime/debug"
	"strconv"
	"testing"
)

func TestTracesURL(t *testing.T) {
	for _, tt := range []struct {
		c       Config
		want    string
		wantErr bool
	}{
		{Config{Endpoint: "http://collector:4318"}, "http://collector:4318/v1/traces", false},
		{Config{Endpoint: "http://collector:4318/"}, "http://collector:4318/v1/traces", false},
		{Config{Endpoint: "http://a:4318", TracesEndpoint: "https://b/custom"}, "https://b/custom", false},
		{Config{Endpoint: "collector:4318"}, "", true},
		{Config{TracesEndpoint: "http://"}, "", true},
	} {
		got, err := tt.c.tracesURL()
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("%+v: tracesURL() = %q, %v; want %q (error: %v)", tt.c, got, err, tt.want, tt.wantErr)
		}
	}
}

// Without a collector there is no provider at all: nothing is recorded, nothing allocated.
func TestNoEndpointNoProvider(t *testing.T) {
	tp, shutdown, err := Setup(context.Background(), Config{ServiceName: "payments-api"})
	if err != nil || tp != nil {
		t.Fatalf("Setup without an endpoint = %v, %v; want no provider", tp, err)
	}
	if err := shutdown(context.Background()); err != nil {
		t.Errorf("shutdown: %v", err)
	}
}

// TestEachProcessNamesItself: spans from the processes of one service are told apart by
// service.instance.id and process.pid, OTEL_RESOURCE_ATTRIBUTES adds the operator's own, and
// OTEL_SERVICE_NAME wins over a service.name among them.
func TestEachProcessNamesItself(t *testing.T) {
	c := Config{ServiceName: "payments-api", ResourceAttributes: "deployment.environment.name=staging%20eu,service.name=other"}
	attrs := func() map[string]string {
		t.Helper()
		res, err := c.resource(context.Background())
		if err != nil {
			t.Fatalf("resource: %v", err)
		}
		m := map[string]string{}
		for _, kv := range res.Attributes() {
			m[string(kv.Key)] = kv.Value.String()
		}
		return m
	}
	first, second := attrs(), attrs()
	for key, want := range map[string]string{
		"service.name":                "payments-api",
		"deployment.environment.name": "staging eu",
		"process.pid":                 strconv.Itoa(os.Getpid()),
	} {
		if first[key] != want {
			t.Errorf("%s = %q, want %q", key, first[key], want)
		}
	}
	if first["service.instance.id"] == "" || first["service.instance.id"] == second["service.instance.id"] {
		t.Errorf("service.instance.id %q, then %q: want one of its own for each start", first["service.instance.id"], second["service.instance.id"])
	}
	if first["host.name"] == "" {
		t.Error("no host.name")
	}

	c.ResourceAttributes = "deployment.environment.name"
	if _, err := c.resource(context.Background()); err == nil {
		t.Error("a pair without its value was accepted")
	}
}

// TestBuildVersionIsTheCommit: service.version is the commit go build recorded, marked dirty
// when the checkout had changes, or a go install's module version; nothing for a build that
// recorded neither.
func TestBuildVersionIsTheCommit(t *testing.T) {
	commit := []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "1566333951e6"}, {Key: "vcs.modified", Value: "false"}}
	dirty := []debug.BuildSetting{{Key: "vcs.revision", Value: "1566333951e6"}, {Key: "vcs.modified", Value: "true"}}
	for _, tt := range []struct {
		info *debug.BuildInfo
		ok   bool
		want string
	}{
		{&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: commit}, true, "1566333951e6"},
		{&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: dirty}, true, "1566333951e6-dirty"},
		{&debug.BuildInfo{Main: debug.Module{Version: "v1.2.0"}}, true, "v1.2.0"},
		{&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, true, ""},
		{nil, false, ""},
	} {
		if got := buildVersion(tt.info, tt.ok); got != tt.want {
			t.Errorf("buildVersion(%+v) = %q, want %q", tt.info, got, tt.want)
		}
	}
}
