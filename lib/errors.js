// The package's one error class. Every failure of a public function reaches the host as a
// thrown SessionGoalError (or a promise rejected with one) whose `code` is one of ERROR_CODES
// (docs/errors.md). The native module throws (or rejects with) an Error whose own properties
// are the failure's parts (code, field, status, partialAction, sessionId, directory, cause), and
// napi throws its own error for an argument it cannot convert; this file is the one place
// either becomes a SessionGoalError.
'use strict'

/** The closed list of error codes, with the HTTP status a host answering a request would use. */
const ERROR_CODES = Object.freeze({
  invalidInput: 400,
  notFound: 404,
  conflict: 409,
  tooLarge: 413,
  openCode: 502,
  timeout: 504,
  local: 500,
})


const PARTIAL_ACTIONS = new Set(['session-created', 'fork-created', 'goal-configured'])

class SessionGoalError extends Error {
  /**
   * @param {{code: string, message: string, field?: string, status?: number, partialAction?: string, sessionId?: string, directory?: string}} details
   * @param {{cause?: unknown}} [options]
   */
  constructor(details, options) {
    super(String(details.message ?? 'goal operation failed'), options && 'cause' in options ? { cause: options.cause } : undefined)
    this.name = 'SessionGoalError'
    if (!Object.hasOwn(ERROR_CODES, details.code)) throw new TypeError(`SessionGoalError: unknown code ${details.code}`)
    this.code = details.code
    if (typeof details.field === 'string' && details.field) this.field = details.field
    if (Number.isInteger(details.status)) this.status = details.status
    this.partial = PARTIAL_ACTIONS.has(details.partialAction)
    if (this.partial) this.partialAction = details.partialAction
    if (details.sessionId) this.sessionId = details.sessionId
    if (details.directory) this.directory = details.directory
  }

  /**
   * The HTTP status a host answering a request would use: the code's own, or OpenCode's 4xx
   * refusal passed on as it was.
   */
  get statusCode() {
    if (this.code === 'openCode' && this.status >= 400 && this.status < 500) return this.status
    return ERROR_CODES[this.code]
  }

  /** The HTTP error body: {error, code, field?, partial?, partialAction?, sessionId?, directory?}. */
  toJSON() {
    const body = { error: this.message, code: this.code }
    if (this.partial) body.partial = true
    for (const key of ['field', 'partialAction', 'sessionId', 'directory']) if (this[key]) body[key] = this[key]
    return body
  }
}

/** Whether the native module threw it for a failed operation: its `code` is one of ours. */
function isNativeFailure(error) {
  return error instanceof Error && typeof error.code === 'string' && Object.hasOwn(ERROR_CODES, error.code)
}

// napi's own codes for an argument it could not convert (a number where a string belongs…).
const CONVERSION_CODES = /^(InvalidArg|\w+Expected)$/

/**
 * An error thrown by the native module or a JavaScript check, as a SessionGoalError: a native
 * failure keeps its parts, napi's conversion errors are bad input, anything else is `otherwise`
 * (the failure the call can have).
 */
function fromThrown(error, otherwise = 'local') {
  if (error instanceof SessionGoalError) return error
  // Same parts, the one public class; the cause is the failure underneath (OpenCode's), if any.
  if (isNativeFailure(error)) return new SessionGoalError(error, error.cause === undefined ? undefined : { cause: error.cause })
  const message = error && typeof error.message === 'string' ? error.message : String(error)
  const conversion = error instanceof TypeError || (error && CONVERSION_CODES.test(String(error.code)))
  return new SessionGoalError({ code: conversion ? 'invalidInput' : otherwise, message: conversion ? `invalid request: ${message}` : message }, { cause: error })
}

/** Bad input found by a JavaScript check. */
function invalidInput(message, field) {
  return new SessionGoalError({ code: 'invalidInput', message, field })
}

/** Resolves what `invoke` resolves, or throws its failure as a SessionGoalError. */
async function settle(invoke, otherwise) {
  try {
    return await invoke()
  } catch (error) {
    throw fromThrown(error, otherwise)
  }
}

module.exports = { SessionGoalError, ERROR_CODES, fromThrown, invalidInput, settle }
