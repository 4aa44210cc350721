// Command payments-listen shows every event of an account as it happens, one line each
// (time, type, event id, the object's id), and with -forward-to POSTs each one to a local
// receiver, signed per Standard Webhooks with the secret it prints. It is a client of the
// API and uses only what any client may: it polls GET /events with the account's key.
//
//	go run ./cmd/payments-listen -api-url http://localhost:8080 -api-key sk_test_... \
//	  -forward-to http://localhost:3000/webhooks
//
// Like every tool here (payments-load, payments-chaos), it takes flags, read by parseFlags
// into a config; -h lists them. The server, payments-api, takes environment variables
// instead, as a deployment sets them.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/payments-api/payments-api/internal/webhooks"
)

const usage = `Usage: payments-listen [flags]

Shows every event of an account as it happens, and with -forward-to POSTs each one to a local
receiver, signed per Standard Webhooks. It polls GET /events.

Flags:
`

// demoKey is the key a sandbox server seeds when DEMO_API_KEYS is not set.
const demoKey = "sk_test_demo"

// config is the command line.
type config struct {
	apiURL, apiKey     string
	forwardTo, secret  string
	interval, lookback time.Duration
}

func main() {
	cfg, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return // -h: the usage is printed
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "payments-listen:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err = listen(ctx, cfg, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "payments-listen:", err)
		os.Exit(1)
	}
}

// parseFlags reads the command line; -h prints the usage and returns flag.ErrHelp.
func parseFlags(args []string) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("payments-listen", flag.ContinueOnError)
	fs.Usage = func() {
		_, _ = fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
	}
	fs.StringVar(&cfg.apiURL, "api-url", "http://localhost:8080", "the server")
	fs.StringVar(&cfg.apiKey, "api-key", "", "the account's API key (default: $PAYMENTS_API_KEY, else "+demoKey+")")
	fs.StringVar(&cfg.forwardTo, "forward-to", "", "POST each event to this URL, signed")
	fs.StringVar(&cfg.secret, "secret", "", "sign with this whsec_ secret instead of a new one")
	fs.DurationVar(&cfg.interval, "interval", time.Second, "how often to poll")
	fs.DurationVar(&cfg.lookback, "lookback", 10*time.Second, "how far behind the newest event to look for events committed late")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	cfg.apiKey = cmp.Or(cfg.apiKey, os.Getenv("PAYMENTS_API_KEY"), demoKey)
	return cfg, cfg.validate()
}

func (c config) validate() error {
	var errs []error
	if c.interval < 10*time.Millisecond {
		errs = append(errs, fmt.Errorf("-interval %s: want at least 10ms", c.interval))
	}
	if c.lookback < 0 {
		errs = append(errs, fmt.Errorf("-lookback %s: want at least 0", c.lookback))
	}
	for _, f := range []struct{ name, url string }{{"-api-url", c.apiURL}, {"-forward-to", c.forwardTo}} {
		if u, err := url.Parse(f.url); f.url != "" && (err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https")) {
			errs = append(errs, fmt.Errorf("%s %q: want an http(s) URL", f.name, f.url))
		}
	}
	if c.secret != "" {
		if _, err := webhooks.DecodeSecret(c.secret); err != nil {
			errs = append(errs, fmt.Errorf("-secret: %w", err))
		}
	}
	return errors.Join(errs...)
}
