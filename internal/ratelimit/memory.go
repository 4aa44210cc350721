package ratelimit

import (
	"context"
	"hash/maphash"
	"sync"
	"time"
)

// memoryShards spreads keys over independently locked maps, so concurrent requests for
// different keys rarely wait for each other.
const memoryShards = 64

// sweepInterval is how often each shard drops its idle keys.
const sweepInterval = 10 * time.Second

// Memory is the GCRA in this process's memory: what a single server uses without Redis, and
// what the Fallback serves from while Redis is down.
//
// GCRA keeps one number per key, the theoretical arrival time (TAT): when the bucket will be
// full again. A key whose TAT has passed is indistinguishable from a key never seen, so each
// shard drops those every sweepInterval; a key lives at most one window plus sweepInterval
// after its last request, and memory stays bounded by the keys active in that time.
type Memory struct {
	shards [memoryShards]memoryShard
	seed   maphash.Seed
	start  time.Time
	now    func() time.Duration // time since start, on the monotonic clock; tests move it
}

type memoryShard struct {
	mu        sync.Mutex
	tats      map[bucket]time.Duration
	lastSweep time.Duration
}

// bucket names one key's bucket under one policy.
type bucket struct {
	policy, key string
}

// NewMemory returns an empty in-memory limiter.
func NewMemory() *Memory {
	m := &Memory{seed: maphash.MakeSeed(), start: time.Now()}
	m.now = func() time.Duration { return time.Since(m.start) }
	for i := range m.shards {
		m.shards[i].tats = map[bucket]time.Duration{}
	}
	return m
}

// Allow spends one request of key's quota under p if one is left. It never fails.
func (m *Memory) Allow(_ context.Context, p Policy, key string) (Decision, error) {
	d, _ := m.take(p, key, true)
	return d, nil
}

// Peek says whether a request would pass, without spending anything.
func (m *Memory) Peek(p Policy, key string) Decision {
	d, _ := m.take(p, key, false)
	return d
}

// Spend spends one request of key's quota under p, as Allow does, and returns with the
// decision a Receipt for giving it back (Return).
func (m *Memory) Spend(p Policy, key string) (Decision, Receipt) {
	d, tat := m.take(p, key, true)
	return d, Receipt{until: tat}
}

// A Receipt says until when a request that Spend let through counts in its bucket.
type Receipt struct{ until time.Duration }

// Return gives back what is left of a request Spend let through, as if it had not been made.
// A request counts in its bucket only until its bucket has refilled by its own worth: the
// GCRA forgets requests oldest first. So Return moves the bucket's TAT back by what of the
// request's worth has not refilled yet, and a request already forgotten gives back nothing
// (moving back by a whole request's worth then would forget a later one).
func (m *Memory) Return(p Policy, key string, r Receipt) {
	b := bucket{p.Name, key}
	shard := m.shard(b)
	shard.mu.Lock()
	defer shard.mu.Unlock()
	left := min(r.until-m.now(), p.emissionInterval())
	if tat, ok := shard.tats[b]; ok && left > 0 {
		shard.tats[b] = tat - left
	}
}

func (m *Memory) shard(b bucket) *memoryShard {
	return &m.shards[maphash.Comparable(m.seed, b)%memoryShards]
}

// take decides one request of key under p, spends it if asked to and it is allowed, and
// returns the bucket's TAT after.
func (m *Memory) take(p Policy, key string, spend bool) (Decision, time.Duration) {
	b := bucket{p.Name, key}
	shard := m.shard(b)
	shard.mu.Lock()
	defer shard.mu.Unlock()
	now := m.now()
	d, tat := gcra(p.Rate, shard.tats[b], now)
	if spend && d.Allowed {
		shard.tats[b] = tat
	}
	if now-shard.lastSweep >= sweepInterval {
		shard.sweep(now)
	}
	return d, tat
}

// sweep drops the keys whose buckets are full again. It copies the survivors into a new
// map, because a Go map never gives back the memory of deleted entries.
func (s *memoryShard) sweep(now time.Duration) {
	live := make(map[bucket]time.Duration, len(s.tats)/2)
	for b, tat := range s.tats {
		if tat > now {
			live[b] = tat
		}
	}
	s.tats, s.lastSweep = live, now
}

// Len is the number of keys held, idle ones not yet swept included.
func (m *Memory) Len() int {
	n := 0
	for i := range m.shards {
		m.shards[i].mu.Lock()
		n += len(m.shards[i].tats)
		m.shards[i].mu.Unlock()
	}
	return n
}

// gcra decides one request at time now for a bucket whose theoretical arrival time is tat
// (zero for a new key), and returns the TAT to store if the request is spent. It is the
// arithmetic of the Redis script (github.com/go-redis/redis_rate), so the two limiters answer
// alike and a switch between them is invisible to clients.
func gcra(r Rate, tat, now time.Duration) (Decision, time.Duration) {
	emission := r.emissionInterval()
	burst := emission * time.Duration(r.Quota)
	tat = max(tat, now)
	newTAT := tat + emission
	// diff is how far now is past the moment this request would conform.
	diff := now - (newTAT - burst)
	if diff < 0 {
		return Decision{RetryAfter: -diff, ResetAfter: tat - now}, tat
	}
	return Decision{Allowed: true, Remaining: int(diff / emission), ResetAfter: newTAT - now}, newTAT
}
