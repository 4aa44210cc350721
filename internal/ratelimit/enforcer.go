package ratelimit

import (
	"context"
	"slices"
	"time"
)

// Enforcer applies Limits to requests: it spends their buckets, in order, and says what each
// response's rate-limit headers are. A refused request gets an *ExceededError beside its
// headers; any other error is a limiter that failed, and comes without headers.
type Enforcer struct {
	limits   Limits
	failures *Memory // the Unauthenticated buckets, in this process's memory
	// The RateLimit-Policy values of the server's policies never change, so they are
	// serialised once; only an account with quotas of its own has its own serialised.
	readsPolicy, writesPolicy, failuresPolicy, testAccountsPolicy string
}

// NewEnforcer enforces limits. Without a Limiter it counts nothing (Enabled is false), but
// Refuse still answers as if it had.
func NewEnforcer(limits Limits) *Enforcer {
	return &Enforcer{
		limits:             limits,
		failures:           NewMemory(),
		readsPolicy:        policyList(limits.Default),
		writesPolicy:       policyList(limits.Default, limits.Writes),
		failuresPolicy:     policyList(limits.Unauthenticated),
		testAccountsPolicy: policyList(limits.TestAccounts),
	}
}

// Enabled reports whether requests are counted at all (a Limiter is configured).
func (e *Enforcer) Enabled() bool { return e.limits.Limiter != nil }

// Limits are the limits enforced.
func (e *Enforcer) Limits() Limits { return e.limits }

// Failed authentications are limited per client address: SpendFailure for each key looked
// up (before the lookup) and for each request without a key, ReturnFailure for a lookup
// whose key proved good, and CheckFailures for a key that needs no lookup (a cached one).

// CheckFailures refuses the client at ip once its failed authentications have used up the
// Unauthenticated quota; it spends nothing. An address refused here gets 429 for its good
// keys too, as for its wrong ones: an answer that differed would tell a guesser which is good.
func (e *Enforcer) CheckFailures(ip string) (Headers, error) {
	p := e.limits.Unauthenticated
	if d := e.failures.Peek(p, ClientKey(ip)); !d.Allowed {
		return Headers{e.failuresPolicy, []State{StateOf(p, d)}}, &ExceededError{Policy: p, Decision: d}
	}
	return Headers{}, nil
}

// Failures is where the client at ip stands in its Unauthenticated quota, spending nothing:
// what a request whose key could not be looked up (no answer from the database) is told.
func (e *Enforcer) Failures(ip string) Headers {
	p := e.limits.Unauthenticated
	d := e.failures.Peek(p, ClientKey(ip))
	if d.Allowed { // Peek answers as if one more were spent; this request spent none
		d.Remaining++
		d.ResetAfter = max(0, d.ResetAfter-p.emissionInterval())
	}
	return Headers{e.failuresPolicy, []State{StateOf(p, d)}}
}

// SpendFailure spends one of the client's Unauthenticated quota, and refuses it when none is
// left. A key is looked up only once it has spent one: wrong keys sent at once would all
// pass CheckFailures on the last one left, and each would cost a lookup and be a guess. The
// Receipt gives it back (ReturnFailure).
func (e *Enforcer) SpendFailure(ip string) (Headers, Receipt, error) {
	p := e.limits.Unauthenticated
	d, r := e.failures.Spend(p, ClientKey(ip))
	h := Headers{e.failuresPolicy, []State{StateOf(p, d)}}
	if !d.Allowed {
		return h, Receipt{}, &ExceededError{Policy: p, Decision: d}
	}
	return h, r, nil
}

// ReturnFailure gives back what SpendFailure spent ahead of a lookup whose key proved good,
// or that failed for another reason (an unreachable database is no failed authentication).
func (e *Enforcer) ReturnFailure(ip string, r Receipt) {
	e.failures.Return(e.limits.Unauthenticated, ClientKey(ip), r)
}

// SpendAccount spends an account's Default bucket and, for a write, its Writes bucket, each
// at the account's own rate if it has one. Default is spent first: every request counts
// against it, refused writes included. The States are appended to buf.
func (e *Enforcer) SpendAccount(ctx context.Context, accountID string, own AccountRates, write bool, buf []State) (Headers, error) {
	policies, header := e.accountPolicies(own, write)
	return e.spend(ctx, policies, header, accountID, buf)
}

// SpendAddress spends the TestAccounts bucket of the client at ip. A zero quota spends and
// says nothing.
func (e *Enforcer) SpendAddress(ctx context.Context, ip string) (Headers, error) {
	if e.limits.TestAccounts.Quota == 0 {
		return Headers{}, nil
	}
	return e.spend(ctx, []Policy{e.limits.TestAccounts}, e.testAccountsPolicy, ClientKey(ip), nil)
}

// spend spends one request of key under each policy in turn, up to the first that refuses it.
func (e *Enforcer) spend(ctx context.Context, policies []Policy, header, key string, states []State) (Headers, error) {
	for _, p := range policies {
		d, err := e.limits.Limiter.Allow(ctx, p, key)
		if err != nil {
			return Headers{}, err
		}
		states = append(states, StateOf(p, d))
		if !d.Allowed {
			return Headers{header, states}, &ExceededError{Policy: p, Decision: d}
		}
	}
	return Headers{header, states}, nil
}

// Refuse answers a request that SpendAccount let through (having spent states) as it would
// answer one whose last policy (Writes for a write, Default otherwise) is used up: the same
// headers, with that policy's bucket shown empty, and the same refusal. It is what a client
// asks for to test its handling of a 429. Without a Limiter nothing was counted, so it names
// the one policy every request spends, Default, at the account's rate, shown empty.
func (e *Enforcer) Refuse(own AccountRates, write bool, spent []State) (Headers, error) {
	policies, header := e.accountPolicies(own, write && e.Enabled())
	p := policies[len(policies)-1]
	d := Decision{ResetAfter: p.Window, RetryAfter: p.Window / time.Duration(p.Quota)}
	states := append(slices.Clone(spent[:min(len(spent), len(policies)-1)]), StateOf(p, d))
	return Headers{header, states}, &ExceededError{Policy: p, Decision: d}
}

// accountPolicies are the policies a request of an account spends, Default and, for a write,
// Writes, each at the account's own rate where it has one; and their RateLimit-Policy.
func (e *Enforcer) accountPolicies(own AccountRates, write bool) ([]Policy, string) {
	def, writes := e.limits.Default.LimitedTo(own.Default), e.limits.Writes.LimitedTo(own.Writes)
	policies, header := []Policy{def, writes}, e.writesPolicy
	if !write {
		policies, header = policies[:1], e.readsPolicy
	}
	if def != e.limits.Default || (write && writes != e.limits.Writes) {
		header = policyList(policies...) // an account's own quotas: a few test accounts' requests
	}
	return policies, header
}
