// When a failed attempt is tried again, and after how long: the Python SDK's rule
// (clients/python/src/atlas_memory/_retry.py), with its defaults.
//
// Three kinds of call, by what a second attempt risks:
// - READ (GETs, recall): nothing; retried on connection errors, 429 and 503.
// - KEYED (POSTs that take an Idempotency-Key): nothing either, as every attempt carries the same key and
//   the server replays the first answer; retried on connection errors, 429, 503 and the 409 "still running".
// - UNKEYED (PATCH, DELETE, creating a subject): only when the first attempt surely never ran: the
//   connection was never made, or the rate limit refused it (429).
// Waits honour Retry-After; otherwise they grow from `backoff` (doubling, jittered, at most `maxWait`).
// The budget is both a number of attempts and a total of seconds since the first.

import { ConnectionFailed, errorFrom, retryAfterOf } from "./errors.js";

export const Kind = Object.freeze({ READ: "read", KEYED: "keyed", UNKEYED: "unkeyed" });

/** The retry budget: `attempts` in all (1: never retry) within `totalSeconds` of the first; seconds. */
export const DEFAULT_RETRY = Object.freeze({ attempts: 5, totalSeconds: 60, backoff: 0.5, maxWait: 10 });
export const NEVER = Object.freeze({ ...DEFAULT_RETRY, attempts: 1 });

// Error codes (Node's, undici's) that say the request never left: no connection was made.
const NOT_SENT = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EADDRNOTAVAIL",
  "UND_ERR_CONNECT_TIMEOUT",
]);

function codesOf(error, depth = 0) {
  if (!error || typeof error !== "object" || depth > 4) return [];
  const own = typeof error.code === "string" ? [error.code] : [];
  const nested = Array.isArray(error.errors) ? error.errors.flatMap((e) => codesOf(e, depth + 1)) : [];
  return [...own, ...nested, ...codesOf(error.cause, depth + 1)];
}

/** A failed attempt without an answer; `sent` false only when the request surely never left. */
export function failure(error) {
  const codes = codesOf(error);
  return { failure: error, sent: !(codes.length > 0 && codes.every((code) => NOT_SENT.has(code))) };
}

/** "TypeError: fetch failed (ECONNREFUSED …)": what went wrong, for a ConnectionFailed's message. */
export function describe(error) {
  const codes = codesOf(error);
  const cause = error?.cause?.message ? `: ${error.cause.message}` : "";
  return `${error?.name ?? "Error"}: ${error?.message ?? error}${cause}${codes.length ? ` (${codes.join(", ")})` : ""}`;
}

function retryable(kind, outcome) {
  if (outcome.failure) return kind !== Kind.UNKEYED || !outcome.sent;
  const { status } = outcome.response;
  if (status === 429) return true;
  if (status === 503) return kind !== Kind.UNKEYED;
  if (status === 409 && kind === Kind.KEYED) return errorFrom(outcome.response, outcome.text).code === "idempotency_running";
  return false;
}

const now = () => performance.now() / 1000;

/** One call's attempts so far, against its budget. */
export class Attempts {
  constructor(policy, kind) {
    this.policy = { ...DEFAULT_RETRY, ...policy };
    this.kind = kind;
    this.made = 0;
    this.started = now();
  }

  /** The seconds to wait before the next attempt after a failed `outcome` (`{failure, sent}` or
   * `{response, text}`); throws the error when the outcome is final or the budget is spent. */
  wait(outcome) {
    this.made += 1;
    const delay = retryable(this.kind, outcome) ? this.#delay(outcome) : null;
    if (delay !== null) return delay;
    if (outcome.failure) throw new ConnectionFailed(describe(outcome.failure), { cause: outcome.failure });
    throw errorFrom(outcome.response, outcome.text);
  }

  #delay(outcome) {
    if (this.made >= this.policy.attempts) return null;
    let wait = outcome.response ? retryAfterOf(outcome.response.headers) : null;
    if (wait === null) {
      const grown = Math.min(this.policy.maxWait, this.policy.backoff * 2 ** (this.made - 1));
      wait = grown * (0.5 + Math.random() / 2);
    }
    return now() - this.started + wait > this.policy.totalSeconds ? null : wait;
  }
}

export const sleep = (seconds) => new Promise((resolve) => setTimeout(resolve, seconds * 1000));
