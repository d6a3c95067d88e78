// The client's typed surface. The request and answer types are generated from the API's OpenAPI snapshot
// (./types.d.ts); this file says which operation takes and answers which.
import type * as T from "./types.js";

export * from "./types.js";

/** The retry budget of one call (seconds): `attempts` in all (1: never retry) within `totalSeconds`. */
export interface RetryOptions {
  attempts?: number;
  totalSeconds?: number;
  backoff?: number;
  maxWait?: number;
}
export const DEFAULT_RETRY: Readonly<Required<RetryOptions>>;
/** No retries at all. */
export const NEVER: Readonly<Required<RetryOptions>>;
export const VERSION: string;

export interface AtlasOptions {
  /** The server's root URL (`/api/v1` may end it). */
  baseUrl: string;
  /** A token the dashboard or `atlas_token create` made (`atlas_…`). */
  token: string;
  retry?: RetryOptions;
  /** One attempt's timeout in seconds (default 30). */
  timeout?: number;
}

/** A playbook's step: the instruction alone, or an object with it. */
export type Step = T.PlaybookInRequest["steps"][number];
/** A write the server replays for a retry with the same key (a fresh one unless given). */
export interface Keyed {
  idempotencyKey?: string;
}
/** An edit that may name the version read (`etag` of the read or the last edit): a PreconditionFailed if it changed. */
export interface Conditional {
  ifMatch?: string;
}
interface OfSubject {
  subject: string;
}
interface OfWebhook {
  webhook_id: number;
}

/** An answer that carried an ETag has it as `etag`. */
export type Memory = T.MemoryOut & { etag?: string };
export type MemoryDetail = T.MemoryDetailOut & { etag?: string };
/** The stored turn, what recall found for it, and its hits (`recall.hits`). */
export type Turn = T.TurnOut & { hits: T.HitOut[] };
/** One line of an export (docs/export-format.md): the header, then one memory per line. */
export type ExportLine = Record<string, unknown>;

export interface OperationSpec {
  method: "GET" | "POST" | "PATCH" | "DELETE";
  path: string[];
  kind: "read" | "keyed" | "unkeyed";
  query?: string[];
  body?: string[];
  required?: string[];
  pages?: string;
  stream?: boolean;
  ifMatch?: boolean;
}
/** Every operation as data: what each method sends and how it is retried. */
export const OPERATIONS: Readonly<Record<string, OperationSpec>>;

/** The Atlas Memory REST API, one method per operation, named as the API's operationIds in camelCase. */
export class Atlas {
  constructor(options: AtlasOptions);
  readonly retry: Required<RetryOptions>;
  readonly timeout: number;

  /** What this token is and may do. */
  me(): Promise<T.MeOut>;
  /** The tenant's usage per UTC day (the last 30 unless `since`/`until`) and its budgets (tenant tokens). */
  usageGet(options?: T.UsageGetQuery): Promise<T.UsageOut>;
  subjectList(options?: T.SubjectListQuery): Promise<T.SubjectPageOut>;
  /** Every subject, page after page. */
  subjectListIter(options?: Omit<T.SubjectListQuery, "cursor">): AsyncGenerator<T.SubjectOut, void>;
  subjectCreate(options: T.SubjectInRequest): Promise<T.SubjectOut>;

  /** Store one user turn. */
  episodeWrite(options: OfSubject & T.EpisodeInRequest & Keyed): Promise<Memory>;
  /** Store the user's turn and recall for it in one round trip: `episode` and `hits`. */
  turn(options: OfSubject & T.TurnInRequest & Keyed): Promise<Turn>;
  /** Store a fact, optionally replacing older ones (`supersedes`); `status` pending when it waits for review. */
  factWrite(options: OfSubject & T.FactInRequest & Keyed): Promise<Memory>;
  /** Edit a fact: a new version replaces it (the old one stays in its chain). */
  factEdit(options: OfSubject & { memory_id: string } & T.PatchedFactEditInRequest & Conditional): Promise<Memory>;
  /** Store a playbook: steps that worked, each an instruction or `{instruction, tool, order}`. */
  playbookWrite(options: OfSubject & T.PlaybookInRequest & Keyed): Promise<Memory>;
  /** Record how a playbook went; refined steps replace its steps (version + 1). */
  playbookOutcome(options: OfSubject & { memory_id: string } & T.OutcomeInRequest & Keyed): Promise<Memory>;

  /** One search over every memory type and the catalog; `explain: true` says why each hit ranked there,
   * `expect: [ids]` what kept those memories out (in `explain`). */
  recall(options: OfSubject & Omit<T.RecallInRequest, "memory_types">): Promise<T.RecallOut>;
  /** One page of the subject's memories, newest first (`next_cursor` for the next). */
  memoryList(options: OfSubject & Omit<T.MemoryListQuery, "type" | "superseded">): Promise<T.MemoryPageOut>;
  /** Every memory `memoryList` would page through, one at a time. */
  memoryListIter(options: OfSubject & Omit<T.MemoryListQuery, "type" | "superseded" | "cursor">): AsyncGenerator<T.MemoryOut, void>;
  /** One memory with its provenance, and its `etag` for an edit. */
  memoryGet(options: OfSubject & { memory_id: string }): Promise<MemoryDetail>;
  /** A fact's versions, oldest first. */
  memoryChain(options: OfSubject & { memory_id: string }): Promise<T.ChainOut>;
  /** The subject's export, line by line as it streams; a break once lines came is a ConnectionFailed. */
  memoryExport(options: OfSubject): AsyncGenerator<ExportLine, void>;

  /** Forget one memory, with a receipt of every copy removed. */
  memoryForget(options: OfSubject & { memory_id: string }): Promise<T.ForgottenOut>;
  /** Forget everything about the subject; `confirm` repeats the subject's id. */
  memoryForgetAll(options: OfSubject & { confirm: string }): Promise<T.ForgottenAllOut>;

  proposalList(options: OfSubject & T.ProposalListQuery): Promise<T.ProposalPageOut>;
  proposalListIter(options: OfSubject & Omit<T.ProposalListQuery, "cursor">): AsyncGenerator<T.ProposalOut, void>;
  /** Accept a proposal (`text`: as you corrected it); `version` is the one you reviewed. */
  proposalAccept(options: OfSubject & { proposal_id: string; version: string; text?: string } & Keyed): Promise<Memory>;
  proposalReject(options: OfSubject & { proposal_id: string; version: string } & Keyed): Promise<T.ProposalRejectedOut>;

  catalogList(options?: T.CatalogListQuery): Promise<T.MemoryPageOut>;
  catalogListIter(options?: Omit<T.CatalogListQuery, "cursor">): AsyncGenerator<T.MemoryOut, void>;
  catalogWrite(options: T.CatalogInRequest & Keyed): Promise<Memory>;
  catalogGet(options: { entry_id: string }): Promise<Memory>;
  catalogEdit(options: { entry_id: string } & T.PatchedCatalogEditInRequest & Conditional): Promise<Memory>;
  catalogDelete(options: { entry_id: string }): Promise<T.ForgottenOut>;

  /** The tenant's webhook endpoints (never their secrets): tenant tokens that may read and write. */
  webhookList(): Promise<T.WebhookListOut>;
  /** Register an https endpoint; its signing secret (`secret`) is in this answer only. Not retried once sent. */
  webhookCreate(options: T.WebhookInRequest): Promise<T.WebhookCreatedOut>;
  webhookGet(options: OfWebhook): Promise<T.WebhookOut>;
  /** Change what is given (at least one); `enabled: true` also queues the deliveries still waiting. */
  webhookUpdate(options: OfWebhook & T.PatchedWebhookPatchInRequest): Promise<T.WebhookOut>;
  /** Remove the endpoint and its delivery log (answers nothing). */
  webhookDelete(options: OfWebhook): Promise<null>;
  /** A new signing secret, shown this once; the previous one signs beside it until `previous_secret_expires_at`. */
  webhookSecretRotate(options: OfWebhook): Promise<T.WebhookSecretOut>;
  /** The endpoint's delivery log, newest first; `before: page.next_before` for the older ones. */
  webhookDeliveries(options: OfWebhook & T.WebhookDeliveriesQuery): Promise<T.DeliveryPageOut>;
  /** Every delivery of the endpoint's log, newest first, page after page. */
  webhookDeliveriesIter(options: OfWebhook & Omit<T.WebhookDeliveriesQuery, "before">): AsyncGenerator<T.DeliveryOut, void>;
  /** Send a delivery's event again: a new delivery of the same event (the same `event_id`). */
  webhookRedeliver(options: OfWebhook & { delivery_id: number }): Promise<T.DeliveryOut>;
}

export interface FieldError {
  field: string;
  message: string;
}
export interface AtlasErrorOptions {
  status?: number | null;
  type?: string;
  title?: string;
  errors?: FieldError[];
  headers?: Headers;
  cause?: unknown;
  newest?: { id: string; external_id: string | null };
}
/** An answer of the API that is not a success (problem details), or no answer at all (`status` null). */
export class AtlasError extends Error {
  constructor(detail: string, options?: AtlasErrorOptions);
  readonly status: number | null;
  readonly type: string;
  readonly title: string;
  readonly detail: string;
  readonly errors: FieldError[];
  readonly headers: Headers;
  /** The problem's `newest` member (a replaced fact's newest version), or null. */
  readonly newestVersion: { id: string; external_id: string | null } | null;
  /** The last part of `urn:atlas-memory:problem:<code>`. */
  readonly code: string;
}
/** No answer from the server after every attempt the budget allowed. */
export class ConnectionFailed extends AtlasError {}
/** 400, 413, 415, 422: `fields` maps each refused field to its message. */
export class ValidationError extends AtlasError {
  readonly fields: Record<string, string>;
}
/** 401 */
export class Unauthorized extends AtlasError {}
/** 403 */
export class Forbidden extends AtlasError {}
/** 404: missing, or not this token's. */
export class NotFound extends AtlasError {}
/** 409: `newest` is a replaced fact's newest version (`newestExternalId` its external id), `version` a
 * changed proposal's current one. */
export class Conflict extends AtlasError {
  readonly newest: string | null;
  readonly newestExternalId: string | null;
  readonly version: string | null;
}
/** 412: `ifMatch` was stale. */
export class PreconditionFailed extends Conflict {}
/** 409 `idempotency_running`, once the budget is spent. */
export class StillRunning extends Conflict {}
/** 429, once the budget is spent; `retryAfter` in seconds. */
export class RateLimited extends AtlasError {
  readonly retryAfter: number | null;
}
/** 429 `quota_exceeded`: the tenant's daily write quota is spent; `retryAfter`: seconds to the next UTC midnight. */
export class QuotaExceeded extends RateLimited {}
/** 503, once the budget is spent; `retryAfter` in seconds. */
export class Unavailable extends AtlasError {
  readonly retryAfter: number | null;
}
