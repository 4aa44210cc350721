// The story of payments-api with the TypeScript client; exits non-zero at the first answer
// that differs from the contract's:
//
//   npm run story    # against http://localhost:8080, or PAYMENTS_API_URL
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
import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { Webhook } from "standardwebhooks";
import { createPaymentsClient, retryAfter, type components } from "../src/index.js";

type Client = ReturnType<typeof createPaymentsClient>;
type RateLimitOverrides = components["schemas"]["TestAccountRateLimitOverrides"];

const baseUrl = process.env.PAYMENTS_API_URL ?? "http://localhost:8080";
const directUrl = process.env.PAYMENTS_API_DIRECT_URL ?? baseUrl;
let retries = 0;
// 429 Too Many Requests: wait for Retry-After, then send the same request again.
const fetchWithRetries = retryAfter(globalThis.fetch, {
  onRetry: (_, waitMs) => {
    retries++;
    console.log(`429: retrying after ${waitMs} ms`);
  },
});
// Creating a throwaway account needs no key.
const anonymous = createPaymentsClient(baseUrl, undefined, { fetch: fetchWithRetries });

function expect(step: string, response: Response, want: number) {
  if (response.status !== want) throw new Error(`${step}: status ${response.status}, want ${want}`);
}

/** An empty account of the story's own, with quotas of its own if rateLimits asks for some. */
async function throwawayAccount(rateLimits?: RateLimitOverrides): Promise<{ api: Client; apiKey: string }> {
  const created = await anonymous.POST("/test/accounts", { body: rateLimits ? { rate_limits: rateLimits } : {} });
  expect("create a throwaway account", created.response, 201);
  const { account_id, api_key, rate_limits: quotas } = created.data!;
  console.log(
    `account ${account_id}: default quota ${quotas.default.quota} per ${quotas.default.window_seconds} s, ` +
      `writes ${quotas.writes.quota} per ${quotas.writes.window_seconds} s`,
  );
  return { api: createPaymentsClient(baseUrl, api_key, { fetch: fetchWithRetries }), apiKey: api_key };
}

// Idempotency: the answer to a create is lost (Prefer: fault=lost-response: the server commits,
// then closes the connection); the retry with the same key replays it; another body is refused.
async function idempotentPayment(api: Client, direct: Client) {
  const key = { "Idempotency-Key": `order-${randomUUID()}` };
  const body = { amount: 5000, currency: "usd", payment_method: "pm_card_visa" } as const;
  const lost = await direct.POST("/payments", { params: { header: { ...key, Prefer: "fault=lost-response" } }, body }).then(
    (answered) => `status ${answered.response.status}`,
    (err: unknown) => err,
  );
  // Node's fetch rejects with TypeError("fetch failed"), caused by undici's "other side closed".
  const cause = lost instanceof TypeError ? (lost.cause as { code?: string } | undefined) : undefined;
  if (cause?.code !== "UND_ERR_SOCKET") throw new Error(`create payment, answer lost: got ${lost}, want the connection closed`);
  console.log(`create payment: no answer (${lost}: ${cause})`);
  const created = await api.POST("/payments", { params: { header: key }, body });
  expect("retry with the same key", created.response, 201);
  if (created.response.headers.get("Idempotent-Replayed") !== "true") throw new Error("retry: not a replay");
  // The replay is the payment the lost request made, and no other was made since.
  const payment = created.data!;
  const since = await api.GET("/payments", { params: { query: { created_gte: payment.created_at } } });
  expect("list payments", since.response, 200);
  if (since.data!.data.length !== 1 || since.data!.data[0]?.id !== payment.id) {
    throw new Error(`retry: ${since.data!.data.length} payments since ${payment.created_at}, want only ${payment.id}`);
  }
  const reused = await api.POST("/payments", { params: { header: key }, body: { ...body, amount: 7000 } });
  expect("same key, another body", reused.response, 422);
  console.log(`payment ${payment.id} created once, replayed once; ${reused.error!.type}`);
  return { payment, etag: created.response.headers.get("ETag")! };
}

// A refund, which changes the payment and so its ETag.
async function refund(api: Client, paymentId: string) {
  const refunded = await api.POST("/refunds", {
    params: { header: { "Idempotency-Key": `refund-${randomUUID()}` } },
    body: { payment_id: paymentId, amount: 1000 },
  });
  expect("refund", refunded.response, 201);
  console.log(`refund ${refunded.data!.id} of ${refunded.data!.amount}`);
}

// Conditional requests: revalidate with If-None-Match (304), update with If-Match (412 when stale).
async function conditionalUpdate(api: Client, id: string, staleTag: string) {
  const read = await api.GET("/payments/{id}", { params: { path: { id } } });
  expect("read payment", read.response, 200);
  const etag = read.response.headers.get("ETag")!;
  const unchanged = await api.GET("/payments/{id}", { params: { path: { id }, header: { "If-None-Match": etag } } });
  expect("read with If-None-Match", unchanged.response, 304);
  const update = { description: "Order 1001" };
  const stale = await api.PATCH("/payments/{id}", { params: { path: { id }, header: { "If-Match": staleTag } }, body: update });
  expect("update with a stale If-Match", stale.response, 412);
  const updated = await api.PATCH("/payments/{id}", { params: { path: { id }, header: { "If-Match": etag } }, body: update });
  expect("update with the current If-Match", updated.response, 200);
  console.log(`payment ${id} updated: ETag ${etag} -> ${updated.response.headers.get("ETag")}`);
}

// Async jobs: 202 with the job that builds the report, polled as its Retry-After says, then the file.
async function report(api: Client) {
  const now = Date.now();
  const requested = await api.POST("/reports", {
    params: { header: { "Idempotency-Key": `report-${randomUUID()}` } },
    body: { type: "payments", created_gte: new Date(now - 3_600_000).toISOString(), created_lt: new Date(now + 60_000).toISOString() },
  });
  expect("request a report", requested.response, 202);
  let job = requested.data!;
  let retryAfterHeader = requested.response.headers.get("Retry-After");
  while (job.status === "queued" || job.status === "running") {
    if (retryAfterHeader === null) throw new Error(`job ${job.id} is ${job.status} without a Retry-After`);
    await new Promise((resolve) => setTimeout(resolve, Number(retryAfterHeader) * 1000));
    const poll = await api.GET("/jobs/{id}", { params: { path: { id: job.id } } });
    expect("poll the job", poll.response, 200);
    job = poll.data!;
    retryAfterHeader = poll.response.headers.get("Retry-After");
  }
  if (job.status !== "succeeded") throw new Error(`job ${job.id} ${job.status}`);
  const file = await api.GET("/reports/{id}/download", { params: { path: { id: job.result!.report_id } }, parseAs: "text" });
  expect("download the report", file.response, 200);
  console.log(`report ${job.result!.report_id}: ${String(file.data).split("\n").length - 1} lines of ${file.response.headers.get("Content-Type")}`);
}

// Webhooks: a receiver on this machine hears of a new payment, and verifies the signature with
// the Standard Webhooks library. Only a server that allows private networks calls it.
async function webhook(api: Client) {
  let verifier: Webhook | undefined;
  let heard: (event: { type: string; data: { id: string } }) => void = () => {};
  const receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      try {
        const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)]));
        heard(verifier!.verify(Buffer.concat(chunks).toString("utf8"), headers) as { type: string; data: { id: string } });
        res.writeHead(204).end();
      } catch (err) {
        res.writeHead(400).end(String(err));
      }
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  try {
    const { port } = receiver.address() as AddressInfo;
    const endpoint = await api.POST("/webhook-endpoints", {
      body: { url: `http://127.0.0.1:${port}/webhooks`, enabled_events: ["payment.succeeded"] },
    });
    if (endpoint.response.status === 400 && endpoint.error?.errors?.some((e) => e.field === "/url")) {
      console.log("webhook: skipped: this server calls no address on this machine (start it with WEBHOOK_ALLOW_PRIVATE_NETWORKS=true to receive one)");
      return;
    }
    expect("register a webhook endpoint", endpoint.response, 201);
    verifier = new Webhook(endpoint.data!.secret);
    const delivered = new Promise<{ type: string; data: { id: string } }>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("no payment.succeeded webhook within 10 s")), 10_000);
      heard = (event) => {
        clearTimeout(timer);
        resolve(event);
      };
    });
    const paid = await api.POST("/payments", {
      params: { header: { "Idempotency-Key": `order-${randomUUID()}` } },
      body: { amount: 2500, currency: "usd", payment_method: "pm_card_visa" },
    });
    expect("create a payment to hear about", paid.response, 201);
    const event = await delivered;
    if (event.data.id !== paid.data!.id) throw new Error(`webhook for ${event.data.id}, want ${paid.data!.id}`);
    console.log(`webhook ${event.type} for ${event.data.id} verified`);
  } finally {
    receiver.close();
  }
}

// Rate limits: an account with a writes quota of its own, 2 per 6 seconds, sent 3 writes in a
// row. The third comes within 3 seconds of the first, however slow the machine, so it is
// refused with 429 and a Retry-After of at most 3 seconds, which is honoured: every write
// succeeds in the end.
async function rateLimit(): Promise<Client> {
  const { api } = await throwawayAccount({ writes: { quota: 2, window_seconds: 6 } });
  const before = retries;
  for (let i = 0; i < 3; i++) {
    const burst = await api.POST("/payments", {
      params: { header: { "Idempotency-Key": `burst-${randomUUID()}` } },
      body: { amount: 100 + i, currency: "usd", payment_method: "pm_card_visa" },
    });
    expect("write in a burst", burst.response, 201);
    console.log(`write ${i + 1}: ${burst.response.headers.get("RateLimit")}`);
  }
  if (retries === before) throw new Error("burst: three writes against a quota of 2 per 6 s met no 429");
  return api;
}

async function story() {
  const { api, apiKey } = await throwawayAccount();
  // The same account, straight to the server (see PAYMENTS_API_DIRECT_URL above).
  const direct = createPaymentsClient(directUrl, apiKey);
  const { payment, etag } = await idempotentPayment(api, direct);
  await refund(api, payment.id);
  // The refund changed the payment, so the ETag the create answered is stale now.
  await conditionalUpdate(api, payment.id, etag);
  await report(api);
  await webhook(api);
  const limited = await rateLimit();
  for (const client of [api, limited]) {
    const deleted = await client.DELETE("/account");
    expect("delete the throwaway account", deleted.response, 204);
  }
  console.log("throwaway accounts deleted");
}

await story().then(
  () => console.log("story: every answer was the contract's"),
  (err: unknown) => {
    const cause = err instanceof Error && err.cause ? ` (${err.cause})` : "";
    console.error(`story: ${err instanceof Error ? err.message : String(err)}${cause}`);
    process.exitCode = 1;
  },
);
