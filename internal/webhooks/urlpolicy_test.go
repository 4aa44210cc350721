package webhooks_test

import (
	"context"
	"errors"
	"net/netip"
	"testing"

	"github.com/payments-api/payments-api/internal/domain"
	"github.com/payments-api/payments-api/internal/webhooks"
)

// testNames is the DNS of the URL policy tests; any other name does not exist.
var testNames = map[string]netip.Addr{
	"public.test":   netip.MustParseAddr("93.184.215.14"),
	"private.test":  netip.MustParseAddr("10.0.0.5"),
	"metadata.test": netip.MustParseAddr("169.254.169.254"),
	"aws6.test":     netip.MustParseAddr("fd00:ec2::254"),
}

var (
	strict = webhooks.URLPolicy{Resolver: fakeDNS(testNames)}
	lax    = webhooks.URLPolicy{AllowPrivateNetworks: true, Resolver: fakeDNS(testNames)}
)

func TestURLPolicy(t *testing.T) {
	cases := []struct {
		policy webhooks.URLPolicy
		url    string
		ok     bool
	}{
		{strict, "https://93.184.215.14/hook", true},
		{strict, "https://public.test/hook", true},
		{strict, "https://public.test./hook", true},     // a trailing dot on a name is DNS's own spelling
		{strict, "https://receiver.invalid/hook", true}, // does not resolve now: the dial check guards it
		{strict, "https://localhost:8443/hook", false},
		{strict, "https://LocalHost/hook", false},
		{strict, "https://127.0.0.1/hook", false},
		{strict, "https://private.test/hook", false},
		{strict, "https://[::ffff:10.0.0.1]/hook", false},
		{strict, "https://169.254.169.254/latest/meta-data", false},
		{strict, "http://93.184.215.14/hook", false},
		{strict, "ftp://93.184.215.14/hook", false},
		{strict, "not a url", false},
		{strict, "/relative/path", false},
		{strict, "https://user:pass@93.184.215.14/hook", false},
		{strict, "https://93.184.215.14:8443/hook", true},
		{strict, "https://93.184.215.14:65535/hook", true},
		{strict, "https://93.184.215.14:65536/hook", false},
		{strict, "https://93.184.215.14:99999999999999999999/hook", false},
		{strict, "https://93.184.215.14:0/hook", false},
		{lax, "http://127.0.0.1:3000/hook", true},
		{lax, "http://localhost:3000/hook", true},
		{lax, "http://[::1]:3000/hook", true},
		{lax, "http://192.168.1.20/hook", true},
		{lax, "http://[fd12:3456::1]/hook", true},
		{lax, "http://private.test/hook", true},
		{lax, "https://public.test/hook", true},
		{lax, "ftp://127.0.0.1/hook", false},
		{lax, "https://metadata.test/latest/meta-data", false},
		{lax, "https://aws6.test/latest/meta-data", false},
		{lax, "http://100.64.0.1/hook", false},
		{lax, "http://0.0.0.0/hook", false},
	}
	for _, tc := range cases {
		err := tc.policy.Check(context.Background(), tc.url)
		switch {
		case tc.ok && err != nil:
			t.Errorf("%s (private allowed: %v): refused: %v", tc.url, tc.policy.AllowPrivateNetworks, err)
		case !tc.ok && !isURLError(err):
			t.Errorf("%s (private allowed: %v): %v, want a validation error on /url", tc.url, tc.policy.AllowPrivateNetworks, err)
		}
	}
}

// TestURLPolicyRefusesMetadataInEveryMode: allowing private networks opens loopback and
// private ranges, never link-local or cloud metadata addresses. (https, which both modes
// accept, so only the address can be what is refused.)
func TestURLPolicyRefusesMetadataInEveryMode(t *testing.T) {
	for _, url := range []string{
		"https://169.254.169.254/latest/meta-data", "https://169.254.10.1/", "https://[fe80::1]/",
		"https://[fd00:ec2::254]/latest/meta-data", "https://100.100.100.200/latest/meta-data",
		"https://168.63.129.16/machine", "https://[::ffff:169.254.169.254]/", "https://metadata.test/",
	} {
		for _, p := range []webhooks.URLPolicy{strict, lax} {
			if err := p.Check(context.Background(), url); !isURLError(err) {
				t.Errorf("%s (private allowed: %v): %v, want a validation error on /url", url, p.AllowPrivateNetworks, err)
			}
		}
	}
}

// TestURLPolicyRefusesAddressesInDisguise: a host some resolver reads as an address it does
// not look like, or one this machine answers for, is refused in every mode.
func TestURLPolicyRefusesAddressesInDisguise(t *testing.T) {
	hosts := []string{
		"2130706433", "0x7f000001", "017700000001", "0x7f.1", "0177.0.0.1", "127.1", "127.0.1",
		"127.0.0.1.", "0x7F.0.0.1", "1.2.3.4.5", "0x", "public.test.1",
		"localhost.", "app.localhost", "app.localhost.", "localhost.localdomain", "_gateway", "_outbound",
		"１２７.０.０.１", "ｌｏｃａｌｈｏｓｔ", "127。0。0。1",
	}
	for _, host := range hosts {
		for _, p := range []webhooks.URLPolicy{strict, lax} {
			if err := p.Check(context.Background(), "https://"+host+"/hook"); !isURLError(err) {
				t.Errorf("%s (private allowed: %v): %v, want a validation error on /url", host, p.AllowPrivateNetworks, err)
			}
		}
	}
	// Numbers elsewhere in a name are just labels.
	for _, host := range []string{"1.2.3.4.public.test", "0x7f.public.test", "127.0.0.1.nip.invalid"} {
		if err := strict.Check(context.Background(), "https://"+host+"/hook"); err != nil {
			t.Errorf("%s: %v", host, err)
		}
	}
}

func isURLError(err error) bool {
	var ve *domain.ValidationError
	return errors.As(err, &ve) && ve.Field == "/url"
}
