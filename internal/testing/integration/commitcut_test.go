package integration

import (
	"bytes"
	"sync"
	"sync/atomic"

	"github.com/Shopify/toxiproxy/v2/toxics"
)

// Two toxics, used together, cut the connection that carries one chosen transaction at its
// COMMIT, on either side of it:
//
//   - commit_watch (upstream) watches each connection for the transaction's marker (bytes
//     it sends, such as its idempotency key) and then for the COMMIT that follows. Unless
//     the cut delivers the COMMIT, it drops it and hangs up: PostgreSQL sees the client
//     leave mid-transaction and rolls back.
//   - answer_drop (downstream) drops the first answer after a delivered COMMIT and hangs
//     up: PostgreSQL committed, and the client never hears it.
//
// Both find what to do by the marker in commitCuts. They act on the first COMMIT only.
func init() {
	toxics.Register("commit_watch", new(commitWatchToxic))
	toxics.Register("answer_drop", new(answerDropToxic))
}

// commitCut is where one transaction's connection is cut.
type commitCut struct {
	deliver bool        // the COMMIT reaches PostgreSQL before the cut
	seen    atomic.Bool // the COMMIT was met
}

// commitCuts holds the cut for each marker.
var commitCuts sync.Map // string → *commitCut

func cutFor(marker string) *commitCut {
	c, ok := commitCuts.Load(marker)
	if !ok {
		return &commitCut{} // unknown marker: never matches a COMMIT of interest
	}
	return c.(*commitCut)
}

// isCommit reports whether data carries a COMMIT, as pgx sends it (the simple query
// "commit", NUL-terminated, in the simple or the extended protocol).
func isCommit(data []byte) bool {
	return bytes.Contains(bytes.ToLower(data), []byte("commit\x00"))
}

type commitWatchToxic struct {
	Marker string `json:"marker"`
}

// commitWatchState is per connection: whether the marker went through it.
type commitWatchState struct{ marked bool }

func (t *commitWatchToxic) NewState() any { return new(commitWatchState) }

func (t *commitWatchToxic) Pipe(stub *toxics.ToxicStub) {
	state := stub.State.(*commitWatchState)
	cut := cutFor(t.Marker)
	for {
		select {
		case <-stub.Interrupt:
			return
		case c := <-stub.Input:
			if c == nil {
				stub.Close()
				return
			}
			state.marked = state.marked || bytes.Contains(c.Data, []byte(t.Marker))
			if state.marked && isCommit(c.Data) && cut.seen.CompareAndSwap(false, true) && !cut.deliver {
				stub.Close() // the COMMIT never reaches PostgreSQL
				return
			}
			stub.Output <- c
		}
	}
}

type answerDropToxic struct {
	Marker string `json:"marker"`
}

func (t *answerDropToxic) Pipe(stub *toxics.ToxicStub) {
	cut := cutFor(t.Marker)
	for {
		select {
		case <-stub.Interrupt:
			return
		case c := <-stub.Input:
			if c == nil || cut.deliver && cut.seen.Load() {
				stub.Close() // the answer to the COMMIT is lost with the connection
				return
			}
			stub.Output <- c
		}
	}
}
