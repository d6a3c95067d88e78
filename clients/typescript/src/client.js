// `Atlas`: one method per REST operation (src/operations.js), each call sent with `fetch` and retried
// within its budget (src/retry.js); paged lists as async iterators, the export as a stream of lines.

import { ConnectionFailed } from "./errors.js";
import { OPERATIONS, optionsOf, requiredOf } from "./operations.js";
import { Attempts, DEFAULT_RETRY, Kind, describe, failure, sleep } from "./retry.js";

export const VERSION = "0.1.0";
const IN_NODE = typeof process !== "undefined" && Boolean(process.versions?.node);

/** A request body or query value from an option: null and undefined left out, Dates as ISO 8601. */
function wire(value) {
  if (value instanceof Date) return value.toISOString();
  if (Array.isArray(value)) return value.map(wire);
  if (value && typeof value === "object") {
    const entries = Object.entries(value).filter(([, v]) => v !== undefined && v !== null);
    return Object.fromEntries(entries.map(([k, v]) => [k, wire(v)]));
  }
  return value;
}

function queryOf(names, options) {
  const query = new URLSearchParams();
  for (const name of names) {
    const value = wire(options[name]);
    if (value === undefined || value === null) continue;
    // An object (scope filters) travels as one parameter holding its JSON, as the API reads it.
    if (typeof value === "object" && !Array.isArray(value)) query.append(name, JSON.stringify(value));
    else for (const item of Array.isArray(value) ? value : [value]) query.append(name, String(item));
  }
  const text = query.toString();
  return text ? `?${text}` : "";
}

function checked(name, operation, options) {
  if (!options || typeof options !== "object") throw new TypeError(`${name}() takes an options object`);
  const allowed = new Set(optionsOf(operation));
  const unknown = Object.keys(options).filter((key) => !allowed.has(key) && options[key] !== undefined);
  if (unknown.length) throw new TypeError(`${name}() does not take ${unknown.join(", ")}`);
  const missing = requiredOf(operation).filter((key) => options[key] === undefined || options[key] === null);
  if (missing.length) throw new TypeError(`${name}() needs ${missing.join(", ")}`);
  return options;
}

/** The request one operation sends for `options` (checked), and how it is retried. */
function callOf(name, operation, options) {
  checked(name, operation, options);
  const segments = operation.path.map((s) => (s.startsWith("{") ? String(options[s.slice(1, -1)]) : s));
  const headers = {};
  if (operation.kind === Kind.KEYED) headers["Idempotency-Key"] = options.idempotencyKey ?? `atlas-ts-${crypto.randomUUID()}`;
  if (options.ifMatch) headers["If-Match"] = options.ifMatch;
  let body;
  if (operation.body) {
    body = JSON.stringify(wire(Object.fromEntries(operation.body.map((field) => [field, options[field]]))));
    headers["Content-Type"] = "application/json";
  }
  const path = `/api/v1/${segments.map(encodeURIComponent).join("/")}${queryOf(operation.query ?? [], options)}`;
  return { method: operation.method, path, kind: operation.kind, headers, body };
}

/** The answer's JSON, with the ETag it carried (`etag`: send it as `ifMatch` to edit safely), and a
 * turn's hits beside its recall. */
function answerOf(name, response, text) {
  const answer = text ? JSON.parse(text) : null;
  if (answer && typeof answer === "object") {
    const etag = response.headers.get("ETag");
    if (etag) answer.etag = etag;
    if (name === "turn") answer.hits = answer.recall?.hits ?? [];
  }
  return answer;
}

async function* linesOf(response, deadline) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  try {
    for (;;) {
      deadline.arm();
      const { done, value } = await reader.read();
      deadline.disarm();
      buffer += done ? decoder.decode() : decoder.decode(value, { stream: true });
      const lines = buffer.split("\n");
      buffer = done ? "" : lines.pop();
      for (const line of lines) if (line.trim()) yield JSON.parse(line);
      if (done) return;
    }
  } finally {
    deadline.disarm(); // a broken stream, or a caller that stopped reading: no timer left, the body let go
    reader.cancel().catch(() => {});
  }
}

/** One attempt's timeout: aborts the request when `seconds` pass while armed. */
class Deadline {
  constructor(seconds) {
    this.seconds = seconds;
    this.controller = new AbortController();
    this.timer = null;
  }

  arm() {
    this.disarm();
    this.timer = setTimeout(() => this.controller.abort(new Error(`timed out after ${this.seconds} s`)), this.seconds * 1000);
  }

  disarm() {
    clearTimeout(this.timer);
    this.timer = null;
  }
}

/** The Atlas Memory REST API, one method per operation:
 *
 *     const atlas = new Atlas({ baseUrl: "http://127.0.0.1:8000", token });
 *     const turn = await atlas.turn({ subject: "alice", text: "I moved to Lisbon" });
 *
 * `retry` bounds the retries (`{attempts, totalSeconds, backoff, maxWait}`; `NEVER` for none);
 * `timeout` is one attempt's, in seconds. */
export class Atlas {
  #root;
  #headers;

  constructor({ baseUrl, token, retry, timeout = 30 } = {}) {
    if (!baseUrl || !token) throw new TypeError("new Atlas({ baseUrl, token }) needs both");
    this.retry = { ...DEFAULT_RETRY, ...retry };
    this.timeout = timeout;
    this.#root = String(baseUrl).replace(/\/+$/, "").replace(/\/api\/v1$/, "");
    this.#headers = { Authorization: `Bearer ${token}`, Accept: "application/json" };
    if (IN_NODE) this.#headers["User-Agent"] = `atlas-memory-client-ts/${VERSION}`;
  }

  /** One attempt: `{response, text}` (the body read unless it is a success to stream) or `{failure, sent}`. */
  async #attempt(call, deadline, { stream = false } = {}) {
    deadline.arm();
    try {
      const response = await fetch(this.#root + call.path, {
        method: call.method,
        headers: { ...this.#headers, ...call.headers },
        body: call.body,
        signal: deadline.controller.signal,
      });
      if (stream && response.ok) return { response };
      return { response, text: await response.text() };
    } catch (error) {
      return failure(error);
    } finally {
      deadline.disarm();
    }
  }

  async _run(name, call) {
    const attempts = new Attempts(this.retry, call.kind);
    for (;;) {
      const outcome = await this.#attempt(call, new Deadline(this.timeout));
      if (outcome.response?.ok) return answerOf(name, outcome.response, outcome.text);
      await sleep(attempts.wait(outcome));
    }
  }

  async *_pages(name, operation, options) {
    const by = operation.pagesBy ?? "cursor";
    if (options && by in options) throw new TypeError(`${name}Iter() follows the ${by} itself`);
    let marker = null;
    do {
      const page = await this._run(name, callOf(name, operation, { ...options, [by]: marker }));
      yield* page[operation.pages];
      marker = page[`next_${by}`];
    } while (marker);
  }

  /** The stream's lines; opening it is retried as a read, a break once lines came is not (a stream
   * cannot resume where it broke). */
  async *_lines(name, operation, options) {
    const call = callOf(name, operation, options);
    const attempts = new Attempts(this.retry, call.kind);
    let yielded = false;
    for (;;) {
      const deadline = new Deadline(this.timeout);
      let outcome = await this.#attempt(call, deadline, { stream: true });
      if (outcome.response?.ok) {
        try {
          for await (const line of linesOf(outcome.response, deadline)) {
            yielded = true;
            yield line;
          }
          return;
        } catch (error) {
          if (yielded) throw new ConnectionFailed(`the stream broke after it began: ${describe(error)}`, { cause: error });
          outcome = failure(error);
        }
      }
      await sleep(attempts.wait(outcome));
    }
  }
}

for (const [name, operation] of Object.entries(OPERATIONS)) {
  const method = operation.stream
    ? function (options = {}) {
        return this._lines(name, operation, options);
      }
    : async function (options = {}) {
        return this._run(name, callOf(name, operation, options));
      };
  Object.defineProperty(Atlas.prototype, name, { value: method, writable: true, configurable: true });
  if (operation.pages) {
    const iterate = function (options = {}) {
      return this._pages(name, operation, options);
    };
    Object.defineProperty(Atlas.prototype, `${name}Iter`, { value: iterate, writable: true, configurable: true });
  }
}
