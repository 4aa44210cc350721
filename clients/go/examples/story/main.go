// Command story walks through payments-api's patterns with the generated Go client, and
// exits non-zero at the first answer that differs from the contract's:
//
//	go run ./examples/story    # against http://localhost:8080, or PAYMENTS_API_URL
//
// It needs no API key and no server setting: it runs in throwaway accounts of its own
// (POST /test/accounts), one for the story and one with a small writes quota of its own for
// the rate-limit step, and deletes them at the end.
//
// When PAYMENTS_API_URL is a proxy, PAYMENTS_API_DIRECT_URL names the server behind it: the
// answer the story has the server drop must be dropped on the story's own connection, and a
// proxy answers a dropped connection itself (Prism with a 500).
//
// A server started with WEBHOOK_ALLOW_PRIVATE_NETWORKS=true delivers a webhook to this
// program; any other skips that step, saying so, since it calls no address on this machine.
package main

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/oapi-codegen/nullable"
	paymentsapi "github.com/payments-api/payments-api/clients/go"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	baseURL := cmp.Or(os.Getenv("PAYMENTS_API_URL"), "http://localhost:8080")
	directURL := cmp.Or(os.Getenv("PAYMENTS_API_DIRECT_URL"), baseURL)
	err := story(ctx, baseURL, directURL)
	cancel()
	if err != nil {
		log.Fatal("story: ", err)
	}
	fmt.Println("story: every answer was the contract's")
}

func story(ctx context.Context, baseURL, directURL string) error {
	retries := 0
	httpClient := &http.Client{
		Timeout: 10 * time.Second,
		// 429 Too Many Requests: wait for Retry-After, then send the same request again.
		Transport: &paymentsapi.RetryAfter{OnRetry: func(_ *http.Response, wait time.Duration) {
			retries++
			fmt.Printf("429: retrying after %s\n", wait)
		}},
	}
	// Creating a throwaway account needs no key.
	anonymous, err := paymentsapi.NewClientWithResponses(baseURL, paymentsapi.WithHTTPClient(httpClient))
	if err != nil {
		return err
	}
	account, err := throwawayAccount(ctx, anonymous, nil)
	if err != nil {
		return err
	}
	api, err := paymentsapi.NewClientWithResponses(baseURL,
		paymentsapi.WithHTTPClient(httpClient), paymentsapi.WithRequestEditorFn(paymentsapi.BearerAuth(account.ApiKey)))
	if err != nil {
		return err
	}
	// http.Transport sends a request with an Idempotency-Key again, once and silently, when a
	// connection it reused closes without an answer. A connection of its own shows the loss.
	lossy, err := paymentsapi.NewClientWithResponses(directURL,
		paymentsapi.WithHTTPClient(&http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}),
		paymentsapi.WithRequestEditorFn(paymentsapi.BearerAuth(account.ApiKey)))
	if err != nil {
		return err
	}
	payment, err := idempotentPayment(ctx, api, lossy)
	if err != nil {
		return err
	}
	if err := refund(ctx, api, payment.JSON201.Id); err != nil {
		return err
	}
	// The refund changed the payment, so the ETag the create answered is stale now.
	if err := conditionalUpdate(ctx, api, payment.JSON201.Id, payment.HTTPResponse.Header.Get("ETag")); err != nil {
		return err
	}
	if err := report(ctx, api); err != nil {
		return err
	}
	if err := webhook(ctx, api); err != nil {
		return err
	}
	limited, err := rateLimit(ctx, anonymous, baseURL, httpClient, &retries)
	if err != nil {
		return err
	}
	for _, client := range []*paymentsapi.ClientWithResponses{api, limited} {
		res, err := client.DeleteAccountWithResponse(ctx, nil)
		if err := expect("delete the throwaway account", res, err, http.StatusNoContent); err != nil {
			return err
		}
	}
	fmt.Println("throwaway accounts deleted")
	return nil
}

// throwawayAccount makes an empty account of the story's own, with quotas of its own if
// rateLimits asks for some (nil keeps the server's), and shows the quotas it has.
func throwawayAccount(ctx context.Context, anonymous *paymentsapi.ClientWithResponses, rateLimits *paymentsapi.TestAccountRateLimitOverrides) (*paymentsapi.TestAccount, error) {
	res, err := anonymous.CreateTestAccountWithResponse(ctx, paymentsapi.CreateTestAccountRequest{RateLimits: rateLimits})
	if err := expect("create a throwaway account", res, err, http.StatusCreated); err != nil {
		return nil, err
	}
	acct, quotas := res.JSON201, res.JSON201.RateLimits
	fmt.Printf("account %s: default quota %d per %d s, writes %d per %d s\n", acct.AccountId,
		quotas.Default.Quota, quotas.Default.WindowSeconds, quotas.Writes.Quota, quotas.Writes.WindowSeconds)
	return acct, nil
}

// idempotentPayment creates a payment whose answer is lost (Prefer: fault=lost-response: the
// server commits, then closes the connection), retries it with the same key as a client must,
// then reuses the key for another body.
func idempotentPayment(ctx context.Context, api, lossy *paymentsapi.ClientWithResponses) (*paymentsapi.CreatePaymentResponse, error) {
	key := "order-" + rand.Text()
	body := paymentsapi.CreatePaymentRequest{Amount: 5000, Currency: "usd", PaymentMethod: "pm_card_visa"}
	lostResponse := "fault=lost-response"
	answered, err := lossy.CreatePaymentWithResponse(ctx, &paymentsapi.CreatePaymentParams{IdempotencyKey: key, Prefer: &lostResponse}, body)
	if err == nil {
		return nil, fmt.Errorf("create payment, answer lost: status %d, want the connection closed", answered.StatusCode())
	}
	if !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("create payment, answer lost: %w", err)
	}
	fmt.Printf("create payment: no answer (%v)\n", err)
	retry, err := api.CreatePaymentWithResponse(ctx, &paymentsapi.CreatePaymentParams{IdempotencyKey: key}, body)
	if err := expect("retry with the same key", retry, err, http.StatusCreated); err != nil {
		return nil, err
	}
	if retry.HTTPResponse.Header.Get("Idempotent-Replayed") != "true" {
		return nil, errors.New("retry: not a replay")
	}
	// The replay is the payment the lost request made, and no other was made since.
	since, created := retry.JSON201.CreatedAt, retry.JSON201.Id
	list, err := api.ListPaymentsWithResponse(ctx, &paymentsapi.ListPaymentsParams{CreatedGte: &since})
	if err := expect("list payments", list, err, http.StatusOK); err != nil {
		return nil, err
	}
	if len(list.JSON200.Data) != 1 || list.JSON200.Data[0].Id != created {
		return nil, fmt.Errorf("retry: %d payments since %s, want only %s", len(list.JSON200.Data), since, created)
	}
	body.Amount = 7000
	reused, err := api.CreatePaymentWithResponse(ctx, &paymentsapi.CreatePaymentParams{IdempotencyKey: key}, body)
	if err := expect("same key, another body", reused, err, http.StatusUnprocessableEntity); err != nil {
		return nil, err
	}
	// A problem's type and status are a string and an int, to compare with constants.
	if p := reused.ApplicationproblemJSON422; p.Status != http.StatusUnprocessableEntity || !strings.HasSuffix(p.Type, "/idempotency-key-reused") {
		return nil, fmt.Errorf("same key, another body: the problem %q with status %d", p.Type, p.Status)
	}
	fmt.Printf("payment %s created once, replayed once; %s\n", created, reused.ApplicationproblemJSON422.Type)
	return retry, nil
}

func refund(ctx context.Context, api *paymentsapi.ClientWithResponses, paymentID string) error {
	amount := int64(1000)
	res, err := api.CreateRefundWithResponse(ctx,
		&paymentsapi.CreateRefundParams{IdempotencyKey: "refund-" + rand.Text()},
		paymentsapi.CreateRefundRequest{PaymentId: paymentID, Amount: &amount})
	if err := expect("refund", res, err, http.StatusCreated); err != nil {
		return err
	}
	fmt.Printf("refund %s of %d\n", res.JSON201.Id, res.JSON201.Amount)
	return nil
}

// conditionalUpdate reads the payment with its ETag, revalidates it (304), and updates it
// with If-Match: a stale tag is refused (412), the current one wins.
func conditionalUpdate(ctx context.Context, api *paymentsapi.ClientWithResponses, id, stale string) error {
	read, err := api.GetPaymentWithResponse(ctx, id, nil)
	if err := expect("read payment", read, err, http.StatusOK); err != nil {
		return err
	}
	etag := read.HTTPResponse.Header.Get("ETag")
	unchanged, err := api.GetPaymentWithResponse(ctx, id, &paymentsapi.GetPaymentParams{IfNoneMatch: &etag})
	if err := expect("read with If-None-Match", unchanged, err, http.StatusNotModified); err != nil {
		return err
	}
	update := paymentsapi.UpdatePaymentRequest{Description: nullable.NewNullableWithValue("Order 1001")}
	res, err := api.UpdatePaymentWithApplicationMergePatchPlusJSONBodyWithResponse(ctx, id, &paymentsapi.UpdatePaymentParams{IfMatch: &stale}, update)
	if err := expect("update with a stale If-Match", res, err, http.StatusPreconditionFailed); err != nil {
		return err
	}
	res, err = api.UpdatePaymentWithApplicationMergePatchPlusJSONBodyWithResponse(ctx, id, &paymentsapi.UpdatePaymentParams{IfMatch: &etag}, update)
	if err := expect("update with the current If-Match", res, err, http.StatusOK); err != nil {
		return err
	}
	fmt.Printf("payment %s updated: ETag %s -> %s\n", id, etag, res.HTTPResponse.Header.Get("ETag"))
	return nil
}

// report asks for a report of the last hour's payments: the answer is 202 with the job that
// builds it, polled as its Retry-After says until it has finished, then the file downloaded.
func report(ctx context.Context, api *paymentsapi.ClientWithResponses) error {
	now := time.Now().UTC()
	res, err := api.CreateReportWithResponse(ctx, &paymentsapi.CreateReportParams{IdempotencyKey: "report-" + rand.Text()},
		paymentsapi.CreateReportRequest{Type: "payments", CreatedGte: now.Add(-time.Hour), CreatedLt: now.Add(time.Minute)})
	if err := expect("request a report", res, err, http.StatusAccepted); err != nil {
		return err
	}
	job, header := res.JSON202, res.HTTPResponse.Header
	for job.Status == paymentsapi.JobStatusQueued || job.Status == paymentsapi.JobStatusRunning {
		seconds, err := strconv.Atoi(header.Get("Retry-After"))
		if err != nil {
			return fmt.Errorf("job %s is %s without a Retry-After", job.Id, job.Status)
		}
		time.Sleep(time.Duration(seconds) * time.Second)
		poll, err := api.GetJobWithResponse(ctx, job.Id, nil)
		if err := expect("poll the job", poll, err, http.StatusOK); err != nil {
			return err
		}
		job, header = poll.JSON200, poll.HTTPResponse.Header
	}
	if job.Status != paymentsapi.JobStatusSucceeded {
		return fmt.Errorf("job %s %s", job.Id, job.Status)
	}
	file, err := api.DownloadReportWithResponse(ctx, job.Result.ReportId, nil)
	if err := expect("download the report", file, err, http.StatusOK); err != nil {
		return err
	}
	fmt.Printf("report %s: %d lines of %s\n", job.Result.ReportId, bytes.Count(file.Body, []byte("\n")), file.HTTPResponse.Header.Get("Content-Type"))
	return nil
}

// webhook registers a receiver on this machine (the server must allow private networks,
// WEBHOOK_ALLOW_PRIVATE_NETWORKS=true), creates a payment, and waits for its
// payment.succeeded event, verified with the Standard Webhooks library.
func webhook(ctx context.Context, api *paymentsapi.ClientWithResponses) error {
	ln, err := new(net.ListenConfig).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer func() { _ = ln.Close() }() // closed by the receiver once it serves; this covers an early return
	received := make(chan paymentsapi.PaymentSucceededWebhook, 1)
	var verifier *standardwebhooks.Webhook
	receiver := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		var event paymentsapi.PaymentSucceededWebhook
		if err == nil {
			err = verifier.Verify(body, r.Header) // the signature over the exact bytes received
		}
		if err == nil {
			err = json.Unmarshal(body, &event)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusNoContent)
		select {
		case received <- event:
		default: // a redelivery of what we already have
		}
	})}

	endpoint, err := api.CreateWebhookEndpointWithResponse(ctx, nil, paymentsapi.CreateWebhookEndpointRequest{
		Url: "http://" + ln.Addr().String() + "/webhooks", EnabledEvents: []paymentsapi.CreateWebhookEndpointRequestEnabledEvents{"payment.succeeded"},
	})
	if err == nil && refusesURL(endpoint.ApplicationproblemJSON400) {
		fmt.Println("webhook: skipped: this server calls no address on this machine (start it with WEBHOOK_ALLOW_PRIVATE_NETWORKS=true to receive one)")
		return nil
	}
	if err := expect("register a webhook endpoint", endpoint, err, http.StatusCreated); err != nil {
		return err
	}
	if verifier, err = standardwebhooks.NewWebhook(endpoint.JSON201.Secret); err != nil {
		return err
	}
	go receiver.Serve(ln) //nolint:errcheck // until Close; deliveries wait in the listener's queue till then
	defer func() { _ = receiver.Close() }()
	payment, err := api.CreatePaymentWithResponse(ctx, &paymentsapi.CreatePaymentParams{IdempotencyKey: "order-" + rand.Text()},
		paymentsapi.CreatePaymentRequest{Amount: 2500, Currency: "usd", PaymentMethod: "pm_card_visa"})
	if err := expect("create a payment to hear about", payment, err, http.StatusCreated); err != nil {
		return err
	}
	for {
		select {
		case event := <-received:
			if event.Data.Id == payment.JSON201.Id {
				fmt.Printf("webhook %s for %s verified\n", event.Type, event.Data.Id)
				return nil
			}
		case <-time.After(10 * time.Second):
			return fmt.Errorf("no payment.succeeded webhook for %s within 10s", payment.JSON201.Id)
		}
	}
}

// refusesURL reports whether a 400 refuses the endpoint's URL: a server that does not allow
// private networks refuses http and addresses on this machine.
func refusesURL(problem *paymentsapi.BadRequest) bool {
	return problem != nil && problem.Errors != nil &&
		slices.ContainsFunc(*problem.Errors, func(e paymentsapi.FieldError) bool { return e.Field == "/url" })
}

// rateLimit makes an account with a writes quota of its own, 2 per 6 seconds, and sends it 3
// writes in a row: the third comes within 3 seconds of the first, however slow the machine,
// so it is refused with 429 and a Retry-After of at most 3 seconds, which the transport
// honours; every write succeeds in the end. It returns a client of that account.
func rateLimit(ctx context.Context, anonymous *paymentsapi.ClientWithResponses, baseURL string, httpClient *http.Client, retries *int) (*paymentsapi.ClientWithResponses, error) {
	account, err := throwawayAccount(ctx, anonymous, &paymentsapi.TestAccountRateLimitOverrides{
		Writes: &paymentsapi.TestAccountQuota{Quota: 2, WindowSeconds: 6},
	})
	if err != nil {
		return nil, err
	}
	api, err := paymentsapi.NewClientWithResponses(baseURL,
		paymentsapi.WithHTTPClient(httpClient), paymentsapi.WithRequestEditorFn(paymentsapi.BearerAuth(account.ApiKey)))
	if err != nil {
		return nil, err
	}
	before := *retries
	for i := range 3 {
		res, err := api.CreatePaymentWithResponse(ctx,
			&paymentsapi.CreatePaymentParams{IdempotencyKey: "burst-" + rand.Text()},
			paymentsapi.CreatePaymentRequest{Amount: int64(100 + i), Currency: "usd", PaymentMethod: "pm_card_visa"})
		if err := expect("write in a burst", res, err, http.StatusCreated); err != nil {
			return nil, err
		}
		fmt.Printf("write %d: %s\n", i+1, res.HTTPResponse.Header.Get("RateLimit"))
	}
	if *retries == before {
		return nil, errors.New("burst: three writes against a quota of 2 per 6 s met no 429")
	}
	return api, nil
}

// expect checks a response's status.
func expect(step string, res interface{ StatusCode() int }, err error, want int) error {
	if err != nil {
		return fmt.Errorf("%s: %w", step, err)
	}
	if got := res.StatusCode(); got != want {
		return fmt.Errorf("%s: status %d, want %d", step, got, want)
	}
	return nil
}
