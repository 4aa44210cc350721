package contract

import "testing"

// TestTemplate checks that every path of the spec, written as echo's router names it,
// leads back to the spec's template.
func TestTemplate(t *testing.T) {
	c := load(t)
	for path := range c.Spec().Paths.Map() {
		if got, ok := c.Template(EchoPath(path)); !ok || got != path {
			t.Errorf("Template(EchoPath(%q)) = %q, %v", path, got, ok)
		}
	}
	if got := EchoPath("/webhook-endpoints/{id}/deliveries"); got != "/webhook-endpoints/:id/deliveries" {
		t.Errorf("EchoPath = %q", got)
	}
	if _, ok := c.Template("/nowhere/:id"); ok {
		t.Error("Template found a path the spec does not hold")
	}
}
