// Command minimal is the floor the server is measured against: what echo, pgx and net/http
// cost with nothing of ours in them. It answers two operations with the server's own SQL
// and an in-memory key check, and nothing else: no validation, no fingerprint, no replay,
// no ETag comparison, no trace, metrics, rate limits or logs.
//
//   - GET /payments/{id}: the server's primary-key select.
//   - POST /payments with an Idempotency-Key: the statements of the server's fresh create,
//     each sent when the one before has answered, as a naive server sends them: BEGIN, the
//     claim, the payment insert, the lookup of subscribed webhook endpoints, the event and
//     the stored response in one batch, COMMIT. A key already used answers 409.
//
// Every other request goes to the real server at UPSTREAM, so that payments-load can make
// its fixtures there.
//
//	DATABASE_URL=... UPSTREAM=http://127.0.0.1:8080 LISTEN_ADDR=127.0.0.1:8081 go run ./cmd/payments-load/minimal
//	payments-load -minimal-url http://127.0.0.1:8081 -scenarios get,create
//
// docs/performance.md compares the two.
package main

import (
	"cmp"
	"context"
	"errors"
	"log"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v4"
	"github.com/payments-api/payments-api/internal/accounts"
	"github.com/payments-api/payments-api/internal/db"
)

func main() {
	if err := run(); err != nil {
		log.Fatal(err)
	}
}

func run() error {
	ctx := context.Background()
	// The server's pool (its size, 20): a create holds a connection for its whole
	// transaction, so pgxpool's default of 4 would make the floor queue for connections.
	pool, err := db.Open(ctx, cmp.Or(os.Getenv("DATABASE_URL"), "postgres://postgres@127.0.0.1:5432/payments?sslmode=disable"), db.Options{})
	if err != nil {
		return err
	}
	defer pool.Close()
	key := cmp.Or(os.Getenv("API_KEY"), "sk_test_demo")
	upstream, err := url.Parse(cmp.Or(os.Getenv("UPSTREAM"), "http://127.0.0.1:8080"))
	if err != nil {
		return err
	}
	e, err := newServer(ctx, pool, key, upstream)
	if err != nil {
		return err
	}
	if err := e.Start(cmp.Or(os.Getenv("LISTEN_ADDR"), "127.0.0.1:8081")); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// newServer answers GET and POST /payments for the account of key, and sends every other
// request to upstream.
func newServer(ctx context.Context, pool *pgxpool.Pool, key string, upstream *url.URL) (*echo.Echo, error) {
	q := db.New(pool)
	acct, err := accounts.Authenticate(ctx, q, key) // once: then the check is a string comparison
	if err != nil {
		return nil, err
	}
	e := echo.New()
	e.HideBanner = true
	e.GET("/payments/:id", func(c echo.Context) error {
		if c.Request().Header.Get("Authorization") != "Bearer "+key {
			return c.NoContent(http.StatusUnauthorized)
		}
		p, err := q.PaymentGetByID(c.Request().Context(), db.PaymentGetByIDParams{AccountID: acct.ID, ID: c.Param("id")})
		if err != nil {
			return c.NoContent(http.StatusNotFound)
		}
		return c.JSON(http.StatusOK, p)
	})
	e.POST("/payments", func(c echo.Context) error {
		if c.Request().Header.Get("Authorization") != "Bearer "+key {
			return c.NoContent(http.StatusUnauthorized)
		}
		var body createBody
		idemKey := c.Request().Header.Get("Idempotency-Key")
		if err := c.Bind(&body); err != nil || idemKey == "" {
			return c.NoContent(http.StatusBadRequest)
		}
		p, res, err := create(c.Request().Context(), pool, acct.ID, idemKey, body)
		if errors.Is(err, errKeyUsed) {
			return c.NoContent(http.StatusConflict)
		}
		if err != nil {
			return err
		}
		c.Response().Header().Set("Location", "/payments/"+p.ID)
		return c.JSONBlob(http.StatusCreated, res)
	})
	e.Any("/*", echo.WrapHandler(httputil.NewSingleHostReverseProxy(upstream)))
	return e, nil
}
