package integration

import (
	"bytes"
	"crypto/sha256"
	wire "encoding/binary"
	"encoding/hex"
	"strings"
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

// isCommit reports whether data carries a COMMIT to be run, in any of the ways pgx sends one:
//
//   - a simple query "commit" (Conn.Exec without arguments);
//   - an unnamed statement "commit", parsed to run at once (the exec and describe modes);
//   - the run (Bind) of the statement pgx's cache prepared for "commit", as in the batch
//     that carries a transaction's deferred writes and its COMMIT (db.InTx). The cache names
//     a statement by its text's hash, as stmtcache.StatementName does. Preparing it (a named
//     Parse, sent in a batch's first round trip on a new connection) runs nothing.
//
// data is read as the protocol's messages (a type byte, then a length that counts itself);
// a chunk that does not start at a message, as the connection's startup does not, holds none.
func isCommit(data []byte) bool {
	for len(data) >= 5 {
		n := int(wire.BigEndian.Uint32(data[1:5]))
		if n < 4 || 1+n > len(data) {
			return false
		}
		typ, fields := data[0], bytes.Split(data[5:1+n], []byte{0})
		switch {
		case typ == 'Q' && isCommitSQL(fields[0]):
			return true
		case typ == 'P' && len(fields) > 1 && len(fields[0]) == 0 && isCommitSQL(fields[1]):
			return true
		case typ == 'B' && len(fields) > 1 && string(fields[1]) == commitStatement:
			return true
		}
		data = data[1+n:]
	}
	return false
}

func isCommitSQL(sql []byte) bool { return strings.EqualFold(string(sql), "commit") }

// commitStatement is the name pgx's statement cache gives "commit".
var commitStatement = func() string {
	digest := sha256.Sum256([]byte("commit"))
	return "stmtcache_" + hex.EncodeToString(digest[0:24])
}()

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
