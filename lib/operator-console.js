// The default logger: when a host passes no `logger` option, the operator lines of the runtime
// (a goal settled, a continuation turn was sent, an audit failed; see goal-core's operator.rs)
// go to the console as the reference prints them. Only lines the core marks as operator lines
// (`[session-goal] …`) are printed; they never carry prompts, model output or credentials.
'use strict'

const OPERATOR_PREFIX = '[session-goal] '

// The native side hands each runtime's lines to that runtime's logger only, so every runtime
// without a logger option gets the console logger of its own: each line is printed once, and a
// runtime with `logger: null` prints nothing, whatever other runtimes (or Workers) do.

function printOperatorLine(level, message) {
  if (typeof message !== 'string' || !message.startsWith(OPERATOR_PREFIX)) return
  if (level === 'warn' || level === 'error') console.warn(message)
  else console.log(message)
}

/**
 * Options with the console logger added when the host gave no `logger` key at all (an explicit
 * `logger: null` or `false` keeps the runtime silent).
 */
function withDefaultLogger(options) {
  if (options !== null && typeof options === 'object' && 'logger' in options) return options
  return { ...(options && typeof options === 'object' ? options : {}), logger: printOperatorLine }
}

module.exports = { withDefaultLogger, printOperatorLine }
