// The payments-api client: request and response types generated from api/openapi.yaml by
// openapi-typescript (schema.d.ts, never edited by hand), requests sent by openapi-fetch.
import createClient, { type ClientOptions } from "openapi-fetch";
import type { paths } from "./schema.js";

export type { components, operations, paths, webhooks } from "./schema.js";

/**
 * A typed client of the server at baseUrl that authenticates every request with apiKey. Without
 * a key it sends none: enough for the operations that need none, such as POST /test/accounts.
 */
export function createPaymentsClient(baseUrl: string, apiKey?: string, options: Omit<ClientOptions, "baseUrl"> = {}) {
  return createClient<paths>({
    fetch: retryAfter(),
    ...options,
    baseUrl,
    headers: { ...(apiKey === undefined ? {} : { Authorization: `Bearer ${apiKey}` }), ...options.headers },
  });
}

export interface RetryOptions {
  /** Retries of one request (default 3). */
  maxRetries?: number;
  /** Longest wait; a longer Retry-After is returned to the caller (default 10 000 ms). */
  maxWaitMs?: number;
  /** Told of every retry before its wait. */
  onRetry?: (response: Response, waitMs: number) => void;
}

/**
 * retryAfter wraps fetch so that a 429 Too Many Requests with Retry-After is sent again
 * after waiting as long as it says. A 429 means the server did nothing, so sending the same
 * request again is always safe (a POST keeps its Idempotency-Key).
 */
export function retryAfter(next: (input: Request) => Promise<Response> = globalThis.fetch, options: RetryOptions = {}) {
  const { maxRetries = 3, maxWaitMs = 10_000, onRetry } = options;
  return async (request: Request): Promise<Response> => {
    for (let retry = 0; ; retry++) {
      const response = await next(request.clone());
      const waitMs = retryAfterMs(response.headers.get("Retry-After"), Date.now());
      if (response.status !== 429 || retry === maxRetries || waitMs === undefined || waitMs > maxWaitMs) {
        return response;
      }
      onRetry?.(response, waitMs);
      await response.body?.cancel();
      await new Promise((resolve) => setTimeout(resolve, waitMs));
    }
  };
}

/** Retry-After as delay-seconds or an HTTP-date (RFC 9110 section 10.2.3), in milliseconds. */
export function retryAfterMs(value: string | null, now: number): number | undefined {
  if (value === null) return undefined;
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(at - now, 0);
}
