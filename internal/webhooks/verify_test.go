package webhooks_test

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/payments-api/payments-api/internal/webhooks"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

var body = []byte(`{"type":"payment.succeeded","timestamp":"2026-01-02T03:04:05Z","data":{"id":"pay_1"}}`)

// signed returns the headers our sender would put on an attempt at ts.
func signed(t *testing.T, id string, ts time.Time, secrets ...string) http.Header {
	t.Helper()
	sig, err := webhooks.Sign(id, ts, body, secrets...)
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	h.Set(webhooks.HeaderID, id)
	h.Set(webhooks.HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	h.Set(webhooks.HeaderSignature, sig)
	return h
}

func official(t *testing.T, secret string) *standardwebhooks.Webhook {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	return wh
}

func verifier(t *testing.T, secrets ...string) *webhooks.Verifier {
	t.Helper()
	v, err := webhooks.NewVerifier(secrets...)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestNewSecretIsWhsecAnd32Bytes(t *testing.T) {
	s := webhooks.NewSecret()
	key, err := webhooks.DecodeSecret(s)
	if err != nil || !strings.HasPrefix(s, "whsec_") || len(key) != 32 {
		t.Fatalf("secret %q: %d key bytes, %v", s, len(key), err)
	}
	if webhooks.NewSecret() == s {
		t.Fatal("two secrets are equal")
	}
}

func TestOurSignatureVerifiesWithTheOfficialLibrary(t *testing.T) {
	secret := webhooks.NewSecret()
	h := signed(t, "msg_1", time.Now(), secret)
	if err := official(t, secret).Verify(body, h); err != nil {
		t.Fatalf("official library refused our signature: %v", err)
	}
	if err := verifier(t, secret).Verify(h, body); err != nil {
		t.Fatalf("our verifier refused our signature: %v", err)
	}
}

func TestOfficialSignatureVerifiesWithOurVerifier(t *testing.T) {
	secret := webhooks.NewSecret()
	ts := time.Now()
	sig, err := official(t, secret).Sign("msg_2", ts, body)
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	h.Set(webhooks.HeaderID, "msg_2")
	h.Set(webhooks.HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	h.Set(webhooks.HeaderSignature, sig)
	if err := verifier(t, secret).Verify(h, body); err != nil {
		t.Fatalf("our verifier refused the official signature: %v", err)
	}
	ours, err := webhooks.Sign("msg_2", ts, body, secret)
	if err != nil || ours != sig {
		t.Fatalf("signatures differ: ours %q, official %q (%v)", ours, sig, err)
	}
}

func TestDuringRotationBothSecretsVerify(t *testing.T) {
	oldSecret, newSecret := webhooks.NewSecret(), webhooks.NewSecret()
	h := signed(t, "msg_3", time.Now(), newSecret, oldSecret)
	if n := len(strings.Fields(h.Get(webhooks.HeaderSignature))); n != 2 {
		t.Fatalf("%d signatures, want 2 space-separated", n)
	}
	for _, secret := range []string{oldSecret, newSecret} {
		if err := official(t, secret).Verify(body, h); err != nil {
			t.Errorf("official library: %v", err)
		}
		if err := verifier(t, secret).Verify(h, body); err != nil {
			t.Errorf("our verifier: %v", err)
		}
	}
}

func TestTamperedWrongSecretAndStaleFail(t *testing.T) {
	secret := webhooks.NewSecret()
	fresh := signed(t, "msg_4", time.Now(), secret)
	tampered := []byte(strings.Replace(string(body), "pay_1", "pay_2", 1))
	otherID := fresh.Clone()
	otherID.Set(webhooks.HeaderID, "msg_5")
	cases := []struct {
		name    string
		secret  string
		header  http.Header
		body    []byte
		ourErr  error
		theirEr error
	}{
		{"tampered body", secret, fresh, tampered, webhooks.ErrNoMatchingSignature, standardwebhooks.ErrNoMatchingSignature},
		{"other webhook-id", secret, otherID, body, webhooks.ErrNoMatchingSignature, standardwebhooks.ErrNoMatchingSignature},
		{"wrong secret", webhooks.NewSecret(), fresh, body, webhooks.ErrNoMatchingSignature, standardwebhooks.ErrNoMatchingSignature},
		{"stale timestamp", secret, signed(t, "msg_4", time.Now().Add(-6*time.Minute), secret), body, webhooks.ErrTimestampOutOfRange, standardwebhooks.ErrMessageTooOld},
		{"future timestamp", secret, signed(t, "msg_4", time.Now().Add(6*time.Minute), secret), body, webhooks.ErrTimestampOutOfRange, standardwebhooks.ErrMessageTooNew},
		{"no signature", secret, http.Header{webhooks.HeaderID: {"msg_4"}}, body, webhooks.ErrMissingHeaders, standardwebhooks.ErrRequiredHeaders},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := verifier(t, tc.secret).Verify(tc.header, tc.body); !errors.Is(err, tc.ourErr) {
				t.Errorf("our verifier: %v, want %v", err, tc.ourErr)
			}
			if err := official(t, tc.secret).Verify(tc.body, tc.header); !errors.Is(err, tc.theirEr) {
				t.Errorf("official library: %v, want %v", err, tc.theirEr)
			}
		})
	}
}

func TestVerifierIgnoresOtherSchemesAndMalformedSignatures(t *testing.T) {
	secret := webhooks.NewSecret()
	h := signed(t, "msg_6", time.Now(), secret)
	h.Set(webhooks.HeaderSignature, "v1a,AAAA v1,not-base64!! garbage "+h.Get(webhooks.HeaderSignature))
	if err := verifier(t, secret).Verify(h, body); err != nil {
		t.Fatalf("a valid v1 signature among others was refused: %v", err)
	}
}
