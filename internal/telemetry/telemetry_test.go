package telemetry

import (
	"context"
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
