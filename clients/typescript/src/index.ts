// The payments-api client: request and response types generated from api/openapi.yaml by
// openapi-typescript (schema.d.ts, never edited by hand), requests sent by openapi-fetch.
import createClient, { type ClientOptions, type HeadersOptions } from "openapi-fetch";
import type { paths } from "./schema.js";

export type { components, operations, paths, webhooks } from "./schema.js";

/**
 * A typed client of the server at baseUrl that authenticates every request with apiKey. Without
 * a key it sends none: enough for the operations that need none, such as POST /test/accounts.
 * options.headers are sent with every request, after the key: they may replace it, or remove it
 * with null.
 */
export function createPaymentsClient(baseUrl: string, apiKey?: string, options: Omit<ClientOptions, "baseUrl"> = {}) {
  const headers = new Headers(apiKey === undefined ? undefined : { Authorization: `Bearer ${apiKey}` });
  return createClient<paths>({
    fetch: retryAfter(),
    ...options,
    baseUrl,
    headers: setHeaders(headers, options.headers),
  });
}

/**
 * setHeaders sets each header of extra on headers, in every form HeadersOptions allows: a
 * Headers, an array of name-value pairs, or a record whose values may be numbers, booleans,
 * arrays of them (each value appended), null (removes the header) or undefined (ignored). A
 * spread would read a Headers or an array of pairs as a record, and lose them.
 */
function setHeaders(headers: Headers, extra: HeadersOptions | undefined): Headers {
  if (extra instanceof Headers || Array.isArray(extra)) {
    new Headers(extra).forEach((value, name) => headers.set(name, value));
    return headers;
  }
  for (const [name, value] of Object.entries(extra ?? {})) {
    if (value === undefined) continue;
    headers.delete(name);
    if (value === null) continue;
    for (const line of Array.isArray(value) ? value : [value]) headers.append(name, String(line));
  }
  return headers;
}

/**
 * The fetch openapi-fetch calls: with the request, and with the client's requestInitExt as
 * init (extensions to fetch's options, such as undici's dispatcher).
 */
export type Fetch = (input: Request, init?: RequestInit) => Promise<Response>;

export interface RetryOptions {
  /** Retries of one request (default 3); 0 or a negative number: none. */
  maxRetries?: number;
  /** Longest wait; a longer Retry-After is returned to the caller (default 10 000 ms). */
  maxWaitMs?: number;
  /** Told of every retry before its wait. */
  onRetry?: (response: Response, waitMs: number) => void;
}

/**
 * retryAfter wraps fetch so that a request is sent again, after waiting as long as the answer's
 * Retry-After says, when that answer is:
 * - 429 Too Many Requests, always: the server did nothing;
 * - 409 Conflict (/problems/idempotency-key-in-use) or 503 Service Unavailable
 *   (/problems/service-unavailable, /problems/processor-unavailable), only when sending the
 *   request again is safe: a GET, HEAD or OPTIONS, or a request with an Idempotency-Key, whose
 *   result the server replays. A keyless POST, PATCH or DELETE may have committed before a 503,
 *   so its answer goes back to the caller.
 *
 * The request sent again is the same, its Idempotency-Key included. An answer without a valid
 * Retry-After, or with one longer than maxWaitMs (or than setTimeout can wait, about 24.8
 * days), goes back to the caller. When the request's signal aborts during a wait, the wait
 * ends at once, rejecting with the signal's reason.
 */
export function retryAfter(next: Fetch = globalThis.fetch, options: RetryOptions = {}): Fetch {
  const { maxRetries = 3, maxWaitMs = 10_000, onRetry } = options;
  // NaN compares false with everything, so it would mean "retry without end" and "wait for any
  // Retry-After": what Number(process.env.UNSET) gives is refused, not taken for that.
  for (const [name, value] of [["maxRetries", maxRetries], ["maxWaitMs", maxWaitMs]] as const) {
    if (Number.isNaN(value)) throw new RangeError(`retryAfter: ${name} is NaN; leave it out for its default`);
  }
  return async (request, init) => {
    for (let retry = 0; ; retry++) {
      const response = await next(request.clone(), init);
      const waitMs = retryAfterMs(response.headers.get("Retry-After"), Date.now());
      if (retry >= maxRetries || !maySendAgain(request, response.status) || waitMs === undefined || waitMs > Math.min(maxWaitMs, longestTimeout)) {
        return response;
      }
      onRetry?.(response, waitMs);
      await response.body?.cancel();
      await wait(waitMs, request.signal);
    }
  };
}

/** The longest delay setTimeout keeps: a longer one fires at once, with a warning. */
const longestTimeout = 2 ** 31 - 1;

/**
 * maySendAgain says whether an answer with this status may be retried with request as it is.
 * The server sends Retry-After with a 409 only when the request's Idempotency-Key is in use,
 * and with a 503 when it could not serve: a keyless write may have committed before the 503.
 */
function maySendAgain(request: Request, status: number): boolean {
  switch (status) {
    case 429:
      return true;
    case 409:
    case 503:
      return ["GET", "HEAD", "OPTIONS"].includes(request.method) || Boolean(request.headers.get("Idempotency-Key"));
    default:
      return false;
  }
}

/** wait resolves after ms, or rejects with signal's reason as soon as it aborts. */
function wait(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const abort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", abort);
      resolve();
    }, ms);
    signal.addEventListener("abort", abort, { once: true });
  });
}

/**
 * Retry-After in milliseconds: delay-seconds, or an HTTP-date (RFC 9110 sections 10.2.3 and
 * 5.6.7); a date in the past is 0. Anything else, such as "1.5" or "-1", is undefined.
 */
export function retryAfterMs(value: string | null, now: number): number | undefined {
  if (value === null) return undefined;
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  const at = httpDate(value, new Date(now).getUTCFullYear());
  return at === undefined ? undefined : Math.max(at - now, 0);
}

const months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

// The three forms of an HTTP-date (RFC 9110 section 5.6.7), those Go's http.ParseTime reads:
// IMF-fixdate, then the obsolete RFC 850 and asctime forms. Date.parse would also take "1.5",
// "-1" or "2099" for dates.
const timeOfDay = String.raw`(?<hour>\d\d):(?<minute>\d\d):(?<second>\d\d)`;
const httpDates = [
  new RegExp(String.raw`^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), (?<day>\d\d) (?<month>\w{3}) (?<year>\d{4}) ${timeOfDay} GMT$`),
  new RegExp(String.raw`^(?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day, (?<day>\d\d)-(?<month>\w{3})-(?<year>\d\d) ${timeOfDay} GMT$`),
  new RegExp(String.raw`^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (?<month>\w{3}) (?<day>[ \d]\d) ${timeOfDay} (?<year>\d{4})$`),
];

/** httpDate is the time of an HTTP-date in milliseconds since the epoch, or undefined. */
function httpDate(value: string, thisYear: number): number | undefined {
  const parts = httpDates.map((form) => form.exec(value)?.groups).find((groups) => groups !== undefined);
  if (parts === undefined) return undefined;
  const field = (name: string) => Number(parts[name]);
  const month = months.indexOf(parts.month!);
  const [day, hour, minute, second] = [field("day"), field("hour"), field("minute"), field("second")];
  let year = field("year");
  if (parts.year!.length === 2) {
    // RFC 850's two digits: the year that ends so within 50 years of this one.
    year += thisYear - (thisYear % 100);
    if (year > thisYear + 50) year -= 100;
    else if (year <= thisYear - 50) year += 100;
  }
  const at = Date.UTC(year, month, day, hour, minute, second);
  // Date.UTC carries an overflow into the next field (Feb 30 is Mar 2): such a date is none.
  if (month < 0 || new Date(at).getUTCDate() !== day || hour > 23 || minute > 59 || second > 59) return undefined;
  return at;
}
