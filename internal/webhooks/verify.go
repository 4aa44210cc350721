package webhooks

// This file is the receiver's side of Standard Webhooks and imports only the standard
// library, so a Go receiver can copy it as it is.

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Standard Webhooks header names.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// SecretPrefix starts every signing secret; the rest is the base64 of the key bytes.
const SecretPrefix = "whsec_"

// DefaultTolerance is how far a webhook-timestamp may be from the receiver's clock. It bounds
// how long a captured request can be replayed; the official libraries use the same value.
const DefaultTolerance = 5 * time.Minute

// Verification errors. Verify wraps them, so check with errors.Is.
var (
	ErrMissingHeaders      = errors.New("missing webhook-id, webhook-timestamp or webhook-signature")
	ErrInvalidTimestamp    = errors.New("webhook-timestamp is not integer seconds")
	ErrTimestampOutOfRange = errors.New("webhook-timestamp is outside the tolerance")
	ErrNoMatchingSignature = errors.New("no signature matches")
)

// Verifier checks that a webhook was signed with one of its secrets. During a secret
// rotation give it both the old and the new secret; the sender signs with both meanwhile.
type Verifier struct {
	keys      [][]byte
	Tolerance time.Duration // DefaultTolerance unless changed
}

// NewVerifier decodes secrets ("whsec_" + base64).
func NewVerifier(secrets ...string) (*Verifier, error) {
	v := &Verifier{Tolerance: DefaultTolerance}
	for _, s := range secrets {
		key, err := DecodeSecret(s)
		if err != nil {
			return nil, err
		}
		v.keys = append(v.keys, key)
	}
	return v, nil
}

// Verify checks body (the raw request body, byte for byte, before any JSON decoding) against
// the request's headers at the current time. A nil error means a secret holder sent it
// within the tolerance; receivers should still dedupe on webhook-id.
func (v *Verifier) Verify(header http.Header, body []byte) error {
	return v.VerifyAt(header, body, time.Now())
}

// VerifyAt is Verify with the receiver's clock given.
func (v *Verifier) VerifyAt(header http.Header, body []byte, now time.Time) error {
	id, ts, sigs := header.Get(HeaderID), header.Get(HeaderTimestamp), header.Get(HeaderSignature)
	if id == "" || ts == "" || sigs == "" {
		return ErrMissingHeaders
	}
	seconds, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: %q", ErrInvalidTimestamp, ts)
	}
	if skew := now.Sub(time.Unix(seconds, 0)).Abs(); skew > v.Tolerance {
		return fmt.Errorf("%w: %s off", ErrTimestampOutOfRange, skew.Round(time.Second))
	}
	for _, key := range v.keys {
		want := signature(key, id, seconds, body)
		for _, sig := range strings.Fields(sigs) {
			version, encoded, ok := strings.Cut(sig, ",")
			if !ok || version != "v1" {
				continue // another scheme (v1a) or malformed: not ours to judge
			}
			got, err := base64.StdEncoding.DecodeString(encoded)
			if err == nil && hmac.Equal(got, want) { // constant time
				return nil
			}
		}
	}
	return ErrNoMatchingSignature
}

// signature is HMAC-SHA256(key, id + "." + timestamp + "." + body): the signed content of
// Standard Webhooks.
func signature(key []byte, id string, timestamp int64, body []byte) []byte {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + strconv.FormatInt(timestamp, 10) + "."))
	mac.Write(body)
	return mac.Sum(nil)
}

// DecodeSecret returns the key bytes of "whsec_" + base64.
func DecodeSecret(secret string) ([]byte, error) {
	encoded, ok := strings.CutPrefix(secret, SecretPrefix)
	if !ok {
		return nil, fmt.Errorf("webhook secret does not start with %q", SecretPrefix)
	}
	key, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil || len(key) == 0 {
		return nil, fmt.Errorf("webhook secret is not %s followed by base64", SecretPrefix)
	}
	return key, nil
}
