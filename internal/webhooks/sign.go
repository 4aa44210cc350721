package webhooks

import (
	"crypto/rand"
	"encoding/base64"
	"strings"
	"time"
)

// secretBytes is the key length: Standard Webhooks asks for 24 to 64 random bytes.
const secretBytes = 32

// NewSecret returns a fresh signing secret: "whsec_" + base64 of 32 random bytes.
func NewSecret() string {
	key := make([]byte, secretBytes)
	_, _ = rand.Read(key) // crypto/rand.Read never fails (it panics if the OS cannot supply)
	return SecretPrefix + base64.StdEncoding.EncodeToString(key)
}

// Sign returns the webhook-signature value for one attempt: "v1," + base64 signature for each
// secret, space separated (two during a rotation). body must be the exact bytes sent.
func Sign(id string, timestamp time.Time, body []byte, secrets ...string) (string, error) {
	sigs := make([]string, 0, len(secrets))
	for _, s := range secrets {
		key, err := DecodeSecret(s)
		if err != nil {
			return "", err
		}
		sig := signature(key, id, timestamp.Unix(), body)
		sigs = append(sigs, "v1,"+base64.StdEncoding.EncodeToString(sig))
	}
	return strings.Join(sigs, " "), nil
}
