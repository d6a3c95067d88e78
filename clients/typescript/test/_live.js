// What the tests share: the live server pytest started (tests/clients/test_typescript.py passes its URL,
// tokens and proxies in the environment), quick retries, and a fresh subject per test.
import { Atlas } from "../src/index.js";

function env(name) {
  const value = process.env[name];
  if (!value) {
    throw new Error(
      `${name} is not set: these tests run against a live server; ` +
        "run `.venv/bin/python -m pytest tests/clients/test_typescript.py`, which starts one and sets it",
    );
  }
  return value;
}

export const live = {
  get url() {
    return env("ATLAS_URL");
  },
  get token() {
    return env("ATLAS_TOKEN");
  },
  get readOnly() {
    return env("ATLAS_TOKEN_RO");
  },
  /** alice's own token (read, write): a subject token. */
  get own() {
    return env("ATLAS_TOKEN_OWN");
  },
  proxy: (name) => env(`ATLAS_PROXY_${name}`),
  env,
};

/** Retries quick enough for a test, long enough for the server's Retry-After of 1-2 s. */
export const FAST = { attempts: 5, totalSeconds: 20, backoff: 0.05, maxWait: 0.5 };

export function client({ token = live.token, baseUrl = live.url, retry = FAST } = {}) {
  return new Atlas({ baseUrl, token, retry, timeout: 60 });
}

/** A subject of its own for one test (test files run at once, against one tenant). */
export async function fresh(atlas, prefix = "ts") {
  const id = `${prefix}-${crypto.randomUUID().slice(0, 8)}`;
  await atlas.subjectCreate({ id });
  return id;
}

export async function all(iterator) {
  const items = [];
  for await (const item of iterator) items.push(item);
  return items;
}

/** The error `promise` rejects with (the test fails when it resolves). */
export async function refusal(promise) {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected an error, the call succeeded");
}
