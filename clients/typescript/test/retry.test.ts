// retryAfter and retryAfterMs, with a fake fetch that answers from a script, and once through
// a real server.
import assert from "node:assert/strict";
import { getEventListeners } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";
import { retryAfter, retryAfterMs } from "../src/index.js";

const url = "http://payments.test/payments";

/** A fetch that answers status with Retry-After first, then 200, counting its calls. */
function answersOnce(status: number, retryAfterValue = "0") {
  const fake = async (request: Request) => {
    fake.calls++;
    if (request.signal.aborted) throw request.signal.reason;
    if (fake.calls > 1) return new Response(null, { status: 200 });
    return new Response(null, { status, headers: { "Retry-After": retryAfterValue } });
  };
  fake.calls = 0;
  return fake;
}

test("a 429 is always sent again; a 409 or a 503 only when a repeat is safe", async () => {
  const cases: { method: string; key?: string; status: number; calls: number }[] = [
    { method: "POST", status: 429, calls: 2 },
    { method: "POST", key: "k1", status: 409, calls: 2 },
    { method: "POST", key: "k1", status: 503, calls: 2 },
    { method: "PATCH", key: "k1", status: 503, calls: 2 },
    { method: "GET", status: 503, calls: 2 },
    { method: "HEAD", status: 503, calls: 2 },
    { method: "OPTIONS", status: 409, calls: 2 },
    { method: "POST", status: 409, calls: 1 },
    { method: "POST", status: 503, calls: 1 }, // it may have committed
    { method: "PATCH", status: 503, calls: 1 },
    { method: "DELETE", status: 503, calls: 1 },
    { method: "GET", status: 500, calls: 1 },
  ];
  for (const { method, key, status, calls } of cases) {
    const next = answersOnce(status);
    const headers = key === undefined ? undefined : { "Idempotency-Key": key };
    const body = ["GET", "HEAD", "OPTIONS"].includes(method) ? undefined : "{}";
    const response = await retryAfter(next)(new Request(url, { method, headers, body }));
    const want = calls === 1 ? status : 200;
    assert.deepEqual([response.status, next.calls], [want, calls], `${method} (key ${key}) answered ${status}`);
  }
});

test("maxRetries bounds the retries; zero or negative means none", async () => {
  for (const [maxRetries, calls] of [[undefined, 4], [2, 3], [0, 1], [-1, 1]] as const) {
    let sent = 0;
    const always429 = async () => {
      if (++sent > 10) throw new Error("retried without end");
      return new Response(null, { status: 429, headers: { "Retry-After": "0" } });
    };
    const response = await retryAfter(always429, { maxRetries })(new Request(url));
    assert.deepEqual([response.status, sent], [429, calls], `maxRetries ${maxRetries}`);
  }
});

test("a NaN for maxRetries or maxWaitMs is refused, not taken for no bound", () => {
  for (const options of [{ maxRetries: Number(undefined) }, { maxWaitMs: Number("soon") }]) {
    assert.throws(() => retryAfter(answersOnce(429, "0"), options), RangeError, JSON.stringify(Object.keys(options)));
  }
});

test("a Retry-After longer than maxWaitMs, or not one, goes back to the caller", async () => {
  for (const value of ["60", "9300000000", "soon", "1.5", "-1"]) {
    const next = answersOnce(429, value);
    const response = await retryAfter(next, { maxWaitMs: 1000 })(new Request(url));
    assert.deepEqual([response.status, next.calls], [429, 1], `Retry-After ${value}`);
  }
});

test("a Retry-After longer than setTimeout can wait goes back, whatever maxWaitMs says", async () => {
  const next = answersOnce(429, "2592000"); // 30 days
  const response = await retryAfter(next, { maxWaitMs: Infinity })(new Request(url));
  assert.deepEqual([response.status, next.calls], [429, 1]);
});

test("every attempt gets fetch's second argument", async () => {
  const inits: unknown[] = [];
  const init = { dispatcher: "the caller's" } as RequestInit;
  const next = answersOnce(429);
  await retryAfter(async (request, got) => {
    inits.push(got);
    return next(request);
  })(new Request(url), init);
  assert.deepEqual(inits, [init, init]);
  assert.equal(inits[1], init);
});

test("a retry leaves nothing behind: the answer it drops is cancelled, its abort listener removed", async () => {
  let cancelled = false;
  let sent = 0;
  const next = async () => {
    if (++sent > 1) return new Response(null, { status: 200 });
    const body = new ReadableStream({
      cancel: () => {
        cancelled = true;
      },
    });
    return new Response(body, { status: 429, headers: { "Retry-After": "0" } });
  };
  const request = new Request(url, { signal: new AbortController().signal });
  const response = await retryAfter(next)(request);
  assert.deepEqual([response.status, sent], [200, 2]);
  assert.ok(cancelled, "the dropped 429's body was never cancelled");
  assert.equal(getEventListeners(request.signal, "abort").length, 0, "the wait's abort listener is still there");
});

// A generous bound: the wait is 5 s, so ending under 2 s means the abort ended it.
const prompt = 2000;

test("an abort during a wait ends it at once, with the signal's reason", async () => {
  const controller = new AbortController();
  const next = answersOnce(429, "5");
  const fetch = retryAfter(next, { onRetry: () => setTimeout(() => controller.abort(), 50) });
  const began = performance.now();
  await assert.rejects(fetch(new Request(url, { signal: controller.signal })), (err) => err === controller.signal.reason);
  assert.equal((controller.signal.reason as Error).name, "AbortError");
  assert.ok(performance.now() - began < prompt, `rejected after ${performance.now() - began} ms`);
  assert.equal(next.calls, 1);
});

test("a wait for a request already aborted rejects at once", async () => {
  const controller = new AbortController();
  const next = answersOnce(429, "5");
  const fetch = retryAfter(next, { onRetry: () => controller.abort() });
  const began = performance.now();
  await assert.rejects(fetch(new Request(url, { signal: controller.signal })), { name: "AbortError" });
  assert.ok(performance.now() - began < prompt, `rejected after ${performance.now() - began} ms`);
  assert.equal(next.calls, 1);
});

test("a 503 to a POST with an Idempotency-Key is sent again whole to a real server", async (t) => {
  const received: { key: string | undefined; body: string }[] = [];
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => (body += chunk.toString()));
    req.on("end", () => {
      received.push({ key: req.headers["idempotency-key"] as string | undefined, body });
      res.writeHead(received.length === 1 ? 503 : 201, { "Retry-After": "0" }).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.after(() => server.close());
  const { port } = server.address() as AddressInfo;
  const request = new Request(`http://127.0.0.1:${port}/payments`, {
    method: "POST",
    headers: { "Idempotency-Key": "order-1" },
    body: '{"amount":5000}',
    signal: AbortSignal.timeout(5000),
  });
  const response = await retryAfter()(request);
  assert.equal(response.status, 201);
  assert.deepEqual(received, [
    { key: "order-1", body: '{"amount":5000}' },
    { key: "order-1", body: '{"amount":5000}' },
  ]);
});

test("retryAfterMs reads delay-seconds and the three forms of an HTTP-date, and nothing else", () => {
  const now = Date.UTC(2026, 0, 2, 3, 4, 5);
  const cases: [string | null, number | undefined][] = [
    ["3", 3000],
    ["0", 0],
    ["2099", 2_099_000], // seconds, not a year
    ["Fri, 02 Jan 2026 03:04:15 GMT", 10_000], // IMF-fixdate
    ["Friday, 02-Jan-26 03:04:15 GMT", 10_000], // RFC 850
    ["Fri Jan  2 03:04:15 2026", 10_000], // asctime
    ["Mon Jan 12 03:04:15 2026", 10 * 86_400_000 + 10_000],
    ["Fri, 02 Jan 2026 03:04:00 GMT", 0], // in the past: at once
    ["Sunday, 06-Nov-94 08:49:37 GMT", 0], // 1994
    ["Wednesday, 01-Jan-76 00:00:00 GMT", Date.UTC(2076, 0, 1) - now], // within 50 years: 2076
    ["Saturday, 01-Jan-77 00:00:00 GMT", 0], // further: 1977
    [null, undefined],
    ["", undefined],
    ["soon", undefined],
    ["1.5", undefined],
    ["-1", undefined],
    ["+5", undefined],
    ["2099-01-01", undefined],
    ["2026-01-02T03:04:15Z", undefined],
    ["Jan 2 2026", undefined],
    ["Fri, 02 Jan 2026 03:04:15 UTC", undefined],
    ["fri, 02 jan 2026 03:04:15 GMT", undefined],
    ["Fri, 30 Feb 2026 03:04:15 GMT", undefined],
    ["Fri, 02 Jan 2026 24:00:00 GMT", undefined],
    ["Fri, 02 Foo 2026 03:04:15 GMT", undefined],
  ];
  for (const [value, want] of cases) assert.equal(retryAfterMs(value, now), want, `Retry-After ${JSON.stringify(value)}`);
});
