// createPaymentsClient, through openapi-fetch, with a fake fetch that keeps what it is sent.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { HeadersOptions } from "openapi-fetch";
import { createPaymentsClient, retryAfter } from "../src/index.js";

/** The headers and the second fetch argument of every attempt of one GET /payments. */
async function sent(apiKey: string | undefined, options: { headers?: HeadersOptions; requestInitExt?: Record<string, unknown> }) {
  const attempts: { headers: Headers; init: unknown }[] = [];
  const fetch = retryAfter(async (request, init) => {
    attempts.push({ headers: request.headers, init });
    return attempts.length === 1
      ? new Response(null, { status: 429, headers: { "Retry-After": "0" } })
      : Response.json({ data: [], has_more: false });
  });
  await createPaymentsClient("http://payments.test", apiKey, { ...options, fetch }).GET("/payments");
  return attempts;
}

test("options.headers are sent in every form openapi-fetch accepts, beside the key", async () => {
  const cases: { headers: HeadersOptions; want: Record<string, string | null> }[] = [
    { headers: new Headers({ "X-Trace": "t1" }), want: { authorization: "Bearer k", "x-trace": "t1" } },
    { headers: [["X-Trace", "t1"], ["X-Trace", "t2"]], want: { authorization: "Bearer k", "x-trace": "t1, t2" } },
    {
      headers: { "X-Count": 2, "X-Flag": true, "X-List": ["a", 1], "X-None": undefined },
      want: { authorization: "Bearer k", "x-count": "2", "x-flag": "true", "x-list": "a, 1", "x-none": null },
    },
    { headers: { Authorization: "Bearer other" }, want: { authorization: "Bearer other" } },
    { headers: { Authorization: null }, want: { authorization: null } },
  ];
  for (const { headers, want } of cases) {
    for (const attempt of await sent("k", { headers })) {
      for (const [name, value] of Object.entries(want)) {
        assert.equal(attempt.headers.get(name), value, `${name} of ${JSON.stringify(headers)}`);
      }
    }
  }
});

test("without a key no Authorization is sent", async () => {
  const [attempt] = await sent(undefined, {});
  assert.equal(attempt?.headers.get("Authorization"), null);
});

test("requestInitExt reaches the fetch of every attempt", async () => {
  const requestInitExt = { dispatcher: "the caller's" };
  const attempts = await sent("k", { requestInitExt });
  assert.equal(attempts.length, 2);
  for (const { init } of attempts) assert.equal(init, requestInitExt);
});
