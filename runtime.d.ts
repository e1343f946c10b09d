// Types of the package entry (runtime.js). The native API and its documentation are generated
// into index.d.ts by @napi-rs/cli. This file declares exactly the values lib/exports.json lists
// (the native ones re-exported by name, the JavaScript helpers below) and every type of
// index.d.ts as a type only: the native module's internal functions and classes are not values
// of the package (__test__/exports.test.mjs checks both entries against the list).
export type * from './index'
export {
  goalRuntimeDefaults,
  intakePayloadTypes,
  inputRules,
} from './index'

// ---- The goal runtime (runtime.js wraps the native one) ------------------------------------------
import type {
  AssistTunablesInput,
  GoalTunablesInput,
  OpenCodeConnection,
  SessionMetadataKeyWrite,
  SmallModelRequest,
  SmallModelResult,
  SessionAssistRuntime,
  SessionAssistRuntimeOptions as NativeAssistRuntimeOptions,
  SessionGoalRuntime as NativeGoalRuntime,
  SessionGoalRuntimeOptions as NativeGoalRuntimeOptions,
} from './index'

/**
 * OpenChamber's flat names for the connection and the small model, accepted beside the nested
 * `openCode` and `smallModel` and moved into them by the package entry (lib/drop-in.js); one
 * setting given both ways is refused (`invalidInput`).
 */
export interface OpenChamberConnection {
  /** `openCode.buildUrl`. */
  buildOpenCodeUrl?: (path: string, prefix: string) => string
  /** `openCode.getHeaders`. */
  getOpenCodeAuthHeaders?: () => Record<string, string> | Promise<Record<string, string>>
  /** `openCode.fetchTimeoutMs`. */
  fetchTimeoutMs?: number
  /** Resolves to a service with `generateSmallModelText(request)` (`smallModel.generate`). */
  getSmallModelService?: () => Promise<{ generateSmallModelText(request: SmallModelRequest): Promise<SmallModelResult> } | null | undefined>
  /** `smallModel.generate` (wins over `getSmallModelService`). */
  generateSmallModelText?: (request: SmallModelRequest) => Promise<SmallModelResult>
}

/** The connection's former name. */
export type OpenCodeTarget = OpenCodeConnection
/** The built-in small model's choice, as `smallModel` took it before it held `generate`. */
export type SmallModelChoice = { providerID: string; modelID: string }

/**
 * Options of `createSessionGoalRuntime`: the native options, plus OpenChamber's flat connection
 * and each tunable flat beside them, as OpenChamber passes `idleQuietMs`, `kickoffQuietMs`,
 * `maxAutoTurns` and `deriveCriteria`. The package entry moves flat ones into `openCode`,
 * `smallModel` and `tunables` (lib/drop-in.js); one setting given both ways is refused
 * (`invalidInput`).
 */
export type SessionGoalRuntimeOptions = NativeGoalRuntimeOptions & OpenChamberConnection & GoalTunablesInput

/** Options of `createSessionAssistRuntime`: the native options, plus the flat connection and `quietMs`, `messageFetchLimit` and `modelTimeoutMs` flat, moved into the nested objects as for the goal runtime. */
export type SessionAssistRuntimeOptions = NativeAssistRuntimeOptions & OpenChamberConnection & AssistTunablesInput

// ---- OpenCode's event stream (the native follower, src/event_follower.rs) -------------------------
import type { EventFollower, EventFollowerOptions } from './index'

/**
 * Options of `createEventFollower`: the native options, plus OpenChamber's flat connection names
 * (`buildOpenCodeUrl`, `getOpenCodeAuthHeaders`), moved into `openCode` by the package entry.
 */
export type EventFollowerHostOptions = EventFollowerOptions & Omit<OpenChamberConnection, 'getSmallModelService' | 'generateSmallModelText'>

/**
 * Follows OpenCode's event stream (`GET /global/event`) until `close()`: by default each event
 * reaches every runtime of this JavaScript environment that talks to the same server, and each
 * connection makes a goal runtime scan its directories; `onPayload` hands the host each payload
 * (with `deliver: false`, for a host that forwards them to `processPayload` itself). Reconnects
 * after a failure, `firstRetryMs` doubling up to 10 s. Never keeps Node alive. Throws
 * `SessionGoalError` `invalidInput` for unusable options.
 */
export declare function createEventFollower(options: EventFollowerHostOptions): EventFollower

/**
 * Writes `metadata.openchamber.<key>` through the per-session write queue of the calling
 * JavaScript environment, the one its runtimes use (see index.d.ts); the connection's flat names
 * are accepted as for the runtimes.
 */
export declare function writeSessionMetadataKey(write: SessionMetadataKeyWrite & OpenChamberConnection): Promise<boolean>

/** The goal runtime a host holds. Every method's failure is a `SessionGoalError`. */
export interface GoalRuntime extends Omit<NativeGoalRuntime, 'explain'> {
  /** `processPayload` under the name OpenChamber's server calls it by. */
  onPayload(payload: unknown, directoryHint?: string): void
  /** Why the goal is where it is; rejects with a `SessionGoalError` (`openCode`, `timeout`) when OpenCode cannot be read. */
  explain(sessionId: string, directory?: string): Promise<GoalExplanation>
}

/**
 * Creates the goal runtime. It runs on its own threads; `processPayload` only queues work.
 * Throws `SessionGoalError` `invalidInput` for unusable options.
 */
export declare function createSessionGoalRuntime(options: SessionGoalRuntimeOptions): GoalRuntime

/**
 * Creates the session assist runtime (recap and suggestion after a quiet idle). Throws
 * `SessionGoalError` `invalidInput` for unusable options.
 */
export declare function createSessionAssistRuntime(options: SessionAssistRuntimeOptions): AssistRuntime

/** The assist runtime a host holds. */
export interface AssistRuntime extends SessionAssistRuntime {
  /** `processPayload` under the name OpenChamber's server calls it by. */
  onPayload(payload: unknown, directoryHint?: string): void
}

// ---- Goal creation and control (lib/goals.js) ---------------------------------------------------
import type {
  GoalControl,
  GoalControlOptions,
  GoalExplanation,
  GoalSettingsInput,
  InstalledGoal,
  ObjectiveWritten,
  SessionGoalRequest,
} from './index'

/** The error codes (docs/errors.md). */
export type SessionGoalErrorCode = 'invalidInput' | 'notFound' | 'conflict' | 'tooLarge' | 'openCode' | 'timeout' | 'local'

/**
 * The one error class: every failure of a public function is thrown as one (or rejects a
 * promise with one). `toJSON()` is an HTTP error body.
 */
export declare class SessionGoalError extends Error {
  constructor(
    details: { code: SessionGoalErrorCode; message: string; field?: string; status?: number; partialAction?: string; sessionId?: string; directory?: string },
    options?: { cause?: unknown },
  )
  name: 'SessionGoalError'
  /** What kind of failure (a closed list, docs/errors.md). */
  code: SessionGoalErrorCode
  /** The request field at fault, when one is. */
  field?: string
  /** The HTTP status OpenCode answered with, when it answered. */
  status?: number
  /** The HTTP status a host answering a request would use (400, 404, 409, 413, 500, 502, 504, or OpenCode's own 4xx refusal). */
  readonly statusCode: number
  /** Some step had already taken effect (see `partialAction`). */
  partial: boolean
  /** Which step: `session-created`, `fork-created` or `goal-configured`. */
  partialAction?: 'session-created' | 'fork-created' | 'goal-configured'
  /** The session concerned (the new one after create or fork). */
  sessionId?: string
  /** Its directory. */
  directory?: string
  /** The underlying failure (napi's conversion error, OpenCode's failure), when there was one. */
  cause?: unknown
  toJSON(): { error: string; code: SessionGoalErrorCode; field?: string; partial?: true; partialAction?: string; sessionId?: string; directory?: string }
}

/** Where the objective store lives: `dataDir`, else `settings.dataDir`, else `OPENCHAMBER_DATA_DIR`, else `~/.config/openchamber`. */
export interface ObjectiveStoreOptions {
  dataDir?: string
  settings?: { dataDir?: string }
}

/** Writes `<dataDir>/goals/<sessionId>.md` (trimmed, ≤ 5,000 chars, atomic). Throws `SessionGoalError` `invalidInput` (invalid id, empty) or `local`. */
export declare function writeObjective(sessionId: string, content: string, options?: ObjectiveStoreOptions): Promise<ObjectiveWritten>
/** The objective text, or `null` (missing, unreadable or empty file). Throws `invalidInput` for an invalid id. */
export declare function readObjective(sessionId: string, options?: ObjectiveStoreOptions): Promise<string | null>
/** Deletes the objective file, best effort; whether one was removed. Throws `invalidInput` for an invalid id. */
export declare function deleteObjective(sessionId: string, options?: ObjectiveStoreOptions): Promise<boolean>

/** Options of the objective routes. */
export interface ObjectiveRouteOptions extends ObjectiveStoreOptions {
  /** Route path (default `/api/goals/objective/:sessionId`). */
  path?: string
  /** Receives `(level, message)` for failures answered with 5xx (default `console.warn`). */
  logger?: (level: string, message: string) => unknown
}

/** One objective request, without a framework. */
export interface ObjectiveRequest {
  method: string
  sessionId: string
  /** PUT: `{content: string}`. */
  body?: unknown
}

/**
 * PUT → `{ok: true}` or `{error}` (400/500); GET → `{content}` or 404 `{error: 'objective not found'}`;
 * DELETE → `{ok: true}` (400 for an invalid id); other methods 405.
 */
export declare function handleObjectiveRequest(
  request: ObjectiveRequest,
  options?: ObjectiveRouteOptions,
): Promise<{ status: number; body: { ok: true } | { content: string } | { error: string } }>

/** The subset of an Express app the routes need. */
export interface RouteApp {
  put(path: string, handler: (req: any, res: any) => unknown): unknown
  get(path: string, handler: (req: any, res: any) => unknown): unknown
  delete(path: string, handler: (req: any, res: any) => unknown): unknown
}

/** Registers PUT/GET/DELETE `/api/goals/objective/:sessionId` (request bodies over 1 MB: 413). */
export declare function registerSessionGoalRoutes<App extends RouteApp>(app: App, options?: ObjectiveRouteOptions): App

/**
 * Goal creation and control: the native `GoalControl`'s methods and types (index.d.ts), each
 * failure re-thrown as a `SessionGoalError`.
 */
export interface SessionGoalControl extends GoalControl {}

/** Creates a goal control (same connection options as the runtime, OpenChamber's flat names accepted). */
export declare function createSessionGoalControl(options: GoalControlOptions & OpenChamberConnection): SessionGoalControl

/** Options of the one-call `createSessionGoal` (connection + request; the reference's names accepted). */
export type CreateSessionGoalOptions = GoalControlOptions &
  OpenChamberConnection &
  Partial<SessionGoalRequest> &
  GoalSettingsInput & {
    /** Reference name of `sessionId`. */
    sessionID?: string
    /** Reference form of `openCode.baseUrl`. */
    baseUrl?: string
    /** Reference form of `openCode.headers`. */
    authHeaders?: Record<string, string>
    /** Called with each non-fatal warning's message (e.g. the objective was stored inline) and an Error with that message and the warning's `code`, as the reference calls it. */
    onWarning?: (message: string, error: Error) => void
  }

/** Installs a fresh active goal on a session in one call. Throws `SessionGoalError`. */
export declare function createSessionGoal(options: CreateSessionGoalOptions): Promise<InstalledGoal>

/**
 * The `<system-reminder>` goal-mode text a host attaches (as a synthetic text part) after a
 * goal's first prompt. A positive budget (a number, or a numeric string from a JSON body) adds
 * one sentence naming it; anything else means no budget.
 */
export declare function buildGoalIntroText(tokenBudget?: number | string | null): string
