// Problem details (RFC 9457) answers as errors: one class per status a caller handles differently,
// the same classes as the Python SDK's (clients/python/src/atlas_memory/errors.py).

/** An answer of the API that is not a success, or no answer at all (`status` null). */
export class AtlasError extends Error {
  constructor(detail, { status = null, type = "about:blank", title = "", errors = [], headers, cause, newest } = {}) {
    super(status ? `${status} ${title}: ${detail}` : detail, cause === undefined ? undefined : { cause });
    this.name = new.target.name;
    this.status = status;
    this.type = type;
    this.title = title;
    this.detail = detail;
    this.errors = errors;
    this.headers = headers ?? new Headers();
    // The problem's `newest` member (a 409 or 412 about a replaced fact): its newest version.
    this.newestVersion = newest && typeof newest === "object" ? newest : null;
  }

  /** The problem's code: the last part of `urn:atlas-memory:problem:<code>`. */
  get code() {
    return this.type.split(":").pop();
  }
}

/** No answer from the server (refused, reset, timed out) after every attempt the budget allowed. */
export class ConnectionFailed extends AtlasError {}

/** 400, 413, 415 or 422: the request was refused; `fields` maps each field to what was wrong with it. */
export class ValidationError extends AtlasError {
  get fields() {
    return Object.fromEntries(this.errors.map((e) => [e.field, e.message]));
  }
}

/** 401: no token, or one that is unknown, revoked or expired. */
export class Unauthorized extends AtlasError {}

/** 403: the token lacks the scope the operation needs (or may not decide its own proposal). */
export class Forbidden extends AtlasError {}

/** 404: missing, or not this token's (the API answers both alike). */
export class NotFound extends AtlasError {}

// A changed proposal's current version is named in the detail only (memory/services/gate.py); the tests
// against the live server keep this in step with its wording.
const VERSION = /\(version ([^)\s]+)\)/;

/** 409: the write collides with what is stored. `newest`: the id of a replaced fact's newest version
 * (edit that one instead) and `newestExternalId` its external id, from the problem's `newest` member;
 * `version`: a changed proposal's current version. */
export class Conflict extends AtlasError {
  get newest() {
    return this.newestVersion?.id ?? null;
  }

  get newestExternalId() {
    return this.newestVersion?.external_id ?? null;
  }

  get version() {
    const found = VERSION.exec(this.detail);
    return found ? found[1] : null;
  }
}

/** 412: `ifMatch` named a version that is no longer current (read it again; `newest` when replaced). */
export class PreconditionFailed extends Conflict {}

/** 409 `idempotency_running`: a request with this Idempotency-Key is still running (retried until the
 * budget ran out). */
export class StillRunning extends Conflict {}

/** 429: this token's rate limit; `retryAfter` is the seconds the server asked to wait. */
export class RateLimited extends AtlasError {
  get retryAfter() {
    return retryAfterOf(this.headers);
  }
}

/** 429 `quota_exceeded`: the tenant's daily write quota is spent; `retryAfter` is the seconds to the next
 * UTC midnight, when writes are accepted again (never retried within a call's budget). */
export class QuotaExceeded extends RateLimited {}

/** 503: a dependency of the server (Elasticsearch, the broker) is down or busy. */
export class Unavailable extends AtlasError {
  get retryAfter() {
    return retryAfterOf(this.headers);
  }
}

const BY_STATUS = {
  400: ValidationError,
  401: Unauthorized,
  403: Forbidden,
  404: NotFound,
  409: Conflict,
  412: PreconditionFailed,
  413: ValidationError,
  415: ValidationError,
  422: ValidationError,
  429: RateLimited,
  503: Unavailable,
};

/** The `Retry-After` header in seconds (delta-seconds only: the API never sends a date), or null. */
export function retryAfterOf(headers) {
  const value = headers.get("Retry-After");
  if (value === null || value.trim() === "") return null;
  const seconds = Number(value);
  return Number.isFinite(seconds) ? Math.max(0, seconds) : null;
}

function problemOf(text, statusText) {
  try {
    const body = JSON.parse(text);
    if (body && typeof body === "object" && !Array.isArray(body)) return body;
  } catch {
    // not JSON: the text itself is the detail
  }
  return { detail: text.slice(0, 500) || statusText };
}

/** The error for a non-success answer whose body was read as `text`. */
export function errorFrom(response, text) {
  const body = problemOf(text, response.statusText);
  const type = String(body.type ?? "about:blank");
  let Kind = BY_STATUS[response.status] ?? AtlasError;
  if (Kind === Conflict && type.endsWith(":idempotency_running")) Kind = StillRunning;
  if (Kind === RateLimited && type.endsWith(":quota_exceeded")) Kind = QuotaExceeded;
  const errors = (Array.isArray(body.errors) ? body.errors : [])
    .filter((e) => e && typeof e === "object")
    .map((e) => ({ field: String(e.field ?? ""), message: String(e.message ?? "") }));
  return new Kind(String(body.detail ?? ""), {
    status: response.status,
    type,
    title: String(body.title ?? response.statusText),
    errors,
    headers: response.headers,
    newest: body.newest,
  });
}
