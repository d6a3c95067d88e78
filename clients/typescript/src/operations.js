// The REST API's operations as data, one entry each, named as the Python SDK's methods in camelCase
// (the API's operationIds). Fields keep the API's own names; the SDK's own options are camelCase
// (idempotencyKey, ifMatch). A test checks this table against the Python SDK's methods.

import { Kind } from "./retry.js";

const { READ, KEYED, UNKEYED } = Kind;
const MEMORY_FILTERS = ["types", "fact_type", "include_superseded", "session_id", "authority", "since", "until"];
// What scopes a memory within its subject (docs/scoping.md); `filters` selects by it.
const SCOPE = ["agent_id", "app_id", "run_id", "metadata"];
const EPISODE = ["text", "session_id", ...SCOPE, "role", "event_type", "timestamp", "external_id"];
const RECALL = ["k", "types", "include_superseded", "as_of", "known_at", "fact_type", "since", "until", "rerank"];
const RECALL_MORE = ["fold_evidence", "explain", "expect", "min_score", "filters"];

/**
 * Each operation: `method`; `path` (segments, `{name}` taken from the options); `kind` (how it is
 * retried); `query` or `body` (the fields sent there); `required` (body or query fields the caller must
 * give; path segments always are); `pages` (the list a page holds: an `…Iter` method follows its
 * cursor, or the option `pagesBy` names: `before`, read from the page's `next_before`); `stream` (answered as JSON lines); `ifMatch` (takes the ETag read before an edit).
 */
export const OPERATIONS = Object.freeze({
  me: { method: "GET", path: ["me"], kind: READ },
  usageGet: { method: "GET", path: ["usage"], kind: READ, query: ["since", "until"] },
  subjectList: { method: "GET", path: ["subjects"], kind: READ, query: ["page_size", "cursor"], pages: "subjects" },
  subjectCreate: { method: "POST", path: ["subjects"], kind: UNKEYED, body: ["id", "display_name"], required: ["id"] },
  episodeWrite: {
    method: "POST",
    path: ["subjects", "{subject}", "episodes"],
    kind: KEYED,
    body: EPISODE,
    required: ["text"],
  },
  turn: {
    method: "POST",
    path: ["subjects", "{subject}", "turn"],
    kind: KEYED,
    body: [...EPISODE, "recall"],
    required: ["text"],
  },
  factWrite: {
    method: "POST",
    path: ["subjects", "{subject}", "facts"],
    kind: KEYED,
    body: ["text", "fact_type", "confidence", "source_episodes", "valid_from", "valid_to", "supersedes"]
      .concat(["contradiction", "external_id", ...SCOPE]),
    required: ["text"],
  },
  factEdit: {
    method: "PATCH",
    path: ["subjects", "{subject}", "facts", "{memory_id}"],
    kind: UNKEYED,
    body: ["text", "fact_type", "confidence", "contradiction", "source_episodes"],
    ifMatch: true,
  },
  playbookWrite: {
    method: "POST",
    path: ["subjects", "{subject}", "playbooks"],
    kind: KEYED,
    body: ["name", "trigger_text", "steps", "description", "external_id", ...SCOPE],
    required: ["name", "trigger_text", "steps"],
  },
  playbookOutcome: {
    method: "POST",
    path: ["subjects", "{subject}", "playbooks", "{memory_id}", "outcome"],
    kind: KEYED,
    body: ["success", "refined_steps"],
    required: ["success"],
  },
  recall: {
    method: "POST",
    path: ["subjects", "{subject}", "recall"],
    kind: READ,
    body: ["query", ...RECALL, ...RECALL_MORE],
    required: ["query"],
  },
  memoryList: {
    method: "GET",
    path: ["subjects", "{subject}", "memories"],
    kind: READ,
    query: [...MEMORY_FILTERS, "filters", "page_size", "cursor"],
    pages: "memories",
  },
  memoryGet: { method: "GET", path: ["subjects", "{subject}", "memories", "{memory_id}"], kind: READ },
  memoryChain: { method: "GET", path: ["subjects", "{subject}", "memories", "{memory_id}", "chain"], kind: READ },
  memoryExport: {
    method: "GET",
    path: ["subjects", "{subject}", "export"],
    kind: READ,
    query: ["filters"],
    stream: true,
  },
  memoryForget: { method: "DELETE", path: ["subjects", "{subject}", "memories", "{memory_id}"], kind: UNKEYED },
  memoryForgetAll: {
    method: "DELETE",
    path: ["subjects", "{subject}", "memories"],
    kind: UNKEYED,
    body: ["confirm", "filters"],
    required: ["confirm"],
  },
  proposalList: {
    method: "GET",
    path: ["subjects", "{subject}", "proposals"],
    kind: READ,
    query: ["written_by", "page_size", "cursor"],
    pages: "proposals",
  },
  proposalAccept: {
    method: "POST",
    path: ["subjects", "{subject}", "proposals", "{proposal_id}", "accept"],
    kind: KEYED,
    body: ["version", "text"],
    required: ["version"],
  },
  proposalReject: {
    method: "POST",
    path: ["subjects", "{subject}", "proposals", "{proposal_id}", "reject"],
    kind: KEYED,
    body: ["version"],
    required: ["version"],
  },
  catalogList: { method: "GET", path: ["catalog"], kind: READ, query: ["page_size", "cursor"], pages: "memories" },
  catalogWrite: {
    method: "POST",
    path: ["catalog"],
    kind: KEYED,
    body: ["title", "text", "category", "tags", "external_id"],
    required: ["title", "text"],
  },
  catalogGet: { method: "GET", path: ["catalog", "{entry_id}"], kind: READ },
  catalogEdit: {
    method: "PATCH",
    path: ["catalog", "{entry_id}"],
    kind: UNKEYED,
    body: ["title", "text", "category", "tags"],
    ifMatch: true,
  },
  catalogDelete: { method: "DELETE", path: ["catalog", "{entry_id}"], kind: UNKEYED },
  webhookList: { method: "GET", path: ["webhooks"], kind: READ },
  // Not keyed: the server replays no answer for it, as the answer holds the signing secret.
  webhookCreate: {
    method: "POST",
    path: ["webhooks"],
    kind: UNKEYED,
    body: ["url", "events", "description"],
    required: ["url", "events"],
  },
  webhookGet: { method: "GET", path: ["webhooks", "{webhook_id}"], kind: READ },
  webhookUpdate: {
    method: "PATCH",
    path: ["webhooks", "{webhook_id}"],
    kind: UNKEYED,
    body: ["url", "events", "description", "enabled"],
  },
  webhookDelete: { method: "DELETE", path: ["webhooks", "{webhook_id}"], kind: UNKEYED },
  webhookSecretRotate: { method: "POST", path: ["webhooks", "{webhook_id}", "rotate-secret"], kind: UNKEYED },
  webhookDeliveries: {
    method: "GET",
    path: ["webhooks", "{webhook_id}", "deliveries"],
    kind: READ,
    query: ["page_size", "before"],
    pages: "deliveries",
    pagesBy: "before",
  },
  webhookRedeliver: {
    method: "POST",
    path: ["webhooks", "{webhook_id}", "deliveries", "{delivery_id}", "redeliver"],
    kind: UNKEYED,
  },
});

/** The path segments an operation takes from its options (`{subject}` → "subject"). */
export const pathFields = (operation) =>
  operation.path.filter((s) => s.startsWith("{")).map((s) => s.slice(1, -1));

/** Every option an operation's method takes: path, query and body fields, and the SDK's own. */
export function optionsOf(operation) {
  return [
    ...pathFields(operation),
    ...(operation.query ?? []),
    ...(operation.body ?? []),
    ...(operation.kind === Kind.KEYED ? ["idempotencyKey"] : []),
    ...(operation.ifMatch ? ["ifMatch"] : []),
  ];
}

/** The options a caller must give. */
export const requiredOf = (operation) => [...pathFields(operation), ...(operation.required ?? [])];
