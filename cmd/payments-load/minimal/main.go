// Command minimal is the floor the server is measured against: what echo, pgx and net/http
// cost with nothing of ours in them. It answers GET /payments/{id} with the server's own
// query and an in-memory key check, and nothing else: no validation, no idempotency, no
// ETag comparison, no trace, metrics or logs. Every other request goes to the real server
// at UPSTREAM, so that payments-load can make its fixtures there.
//
//	DATABASE_URL=... UPSTREAM=http://127.0.0.1:8080 LISTEN_ADDR=127.0.0.1:8081 go run ./cmd/payments-load/minimal
//	payments-load -url http://127.0.0.1:8081 -scenarios get
//
// Only the get scenario means anything against it. docs/performance.md compares the two.
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
	pool, err := pgxpool.New(ctx, cmp.Or(os.Getenv("DATABASE_URL"), "postgres://postgres@127.0.0.1:5432/payments?sslmode=disable"))
	if err != nil {
		return err
	}
	defer pool.Close()
	q := db.New(pool)
	key := cmp.Or(os.Getenv("API_KEY"), "sk_test_demo")
	acct, err := accounts.Authenticate(ctx, q, key) // once: then the check is a string comparison
	if err != nil {
		return err
	}
	upstream, err := url.Parse(cmp.Or(os.Getenv("UPSTREAM"), "http://127.0.0.1:8080"))
	if err != nil {
		return err
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
	e.Any("/*", echo.WrapHandler(httputil.NewSingleHostReverseProxy(upstream)))
	if err := e.Start(cmp.Or(os.Getenv("LISTEN_ADDR"), "127.0.0.1:8081")); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
