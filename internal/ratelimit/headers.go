package ratelimit

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/dunglas/httpsfv"
)

// Headers are one response's rate-limit fields (draft-ietf-httpapi-ratelimit-headers):
// RateLimit-Policy, the quotas that apply, and RateLimit, what is left of each.
type Headers struct {
	// Policy is RateLimit-Policy, already serialised: the server's policies never change,
	// so the Enforcer serialises theirs once.
	Policy string
	// States are RateLimit's members, one for each policy the request was counted under.
	States []State
}

// Set puts h on a response's header. The zero Headers, of a request nothing counted, sets
// nothing.
func (h Headers) Set(header http.Header) {
	if h.Policy == "" {
		return
	}
	header[policyField] = []string{h.Policy}
	header[stateField] = []string{stateList(h.States)}
}

// policyField and stateField are RateLimit-Policy and RateLimit as net/http's canonical keys
// ("Ratelimit-Policy"), which it sends as they are: field names are case-insensitive. Set
// under the draft's spelling, each would cost every response a canonical copy of its name.
var (
	policyField = http.CanonicalHeaderKey("RateLimit-Policy")
	stateField  = http.CanonicalHeaderKey("RateLimit")
)

// State is one RateLimit member: `"default";r=42;t=1`, r the requests left now and t the
// whole seconds until the bucket is full again (rounded up, so waiting t always suffices).
type State struct {
	Policy           string
	Remaining, Reset int64
}

// StateOf is what d leaves of p's bucket.
func StateOf(p Policy, d Decision) State {
	return State{Policy: p.Name, Remaining: int64(d.Remaining), Reset: int64(math.Ceil(d.ResetAfter.Seconds()))}
}

// policyList is the RateLimit-Policy of policies: `"default";q=100;w=1, "writes";q=25;w=1`.
// Policies are built from valid names and integers, so serialising cannot fail.
func policyList(policies ...Policy) string {
	items := make([]httpsfv.Member, len(policies))
	for i, p := range policies {
		item := httpsfv.NewItem(p.Name)
		item.Params.Add("q", int64(p.Quota))
		item.Params.Add("w", int64(p.Window/time.Second))
		items[i] = item
	}
	s, err := httpsfv.Marshal(httpsfv.List(items))
	if err != nil {
		panic(fmt.Sprintf("ratelimit: serialise RateLimit-Policy: %v", err))
	}
	return s
}

// stateList serialises the RateLimit members as a structured-field list (RFC 9651), by hand
// rather than through httpsfv: it is on every response, and httpsfv's parameters cost seven
// allocations a member. The policy name is an sf-string; NewEnforcer has serialised every
// name through httpsfv once (a name it refuses fails at start-up), so quoting and escaping
// are all that is left to do.
func stateList(states []State) string {
	var buf [96]byte // room for three members on the stack; more move to the heap
	b := buf[:0]
	for i, s := range states {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, '"')
		for j := range len(s.Policy) {
			if ch := s.Policy[j]; ch == '"' || ch == '\\' {
				b = append(b, '\\')
			}
			b = append(b, s.Policy[j])
		}
		b = append(b, `";r=`...)
		b = strconv.AppendInt(b, s.Remaining, 10)
		b = append(b, ";t="...)
		b = strconv.AppendInt(b, s.Reset, 10)
	}
	return string(b)
}
