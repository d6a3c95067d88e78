// The TypeScript/JavaScript client of the Atlas Memory REST API (no dependencies: fetch, AbortController,
// crypto.randomUUID).
export { Atlas, VERSION } from "./client.js";
export { DEFAULT_RETRY, NEVER } from "./retry.js";
export { OPERATIONS } from "./operations.js";
export {
  AtlasError,
  Conflict,
  ConnectionFailed,
  Forbidden,
  NotFound,
  PreconditionFailed,
  QuotaExceeded,
  RateLimited,
  StillRunning,
  Unauthorized,
  Unavailable,
  ValidationError,
} from "./errors.js";
