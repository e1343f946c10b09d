// Subscribes to OpenCode's `GET /global/event` SSE stream and hands each payload to a callback
// the way OpenChamber's server does: the global envelope unwrapped, `global` directory → ''.
// Reconnects with capped exponential backoff; `close()` ends it and never keeps Node alive.
// An attempt the server accepts but never answers (OpenCode does that to requests that reach it
// while it is still starting) is given up after `connectTimeoutMs` and counts as a failed one.
'use strict'

const http = require('node:http')
const https = require('node:https')

function parseBlock(block) {
  const data = block
    .split('\n')
    .filter((line) => line.startsWith('data:'))
    .map((line) => line.slice(5).replace(/^ /, ''))
    .join('\n')
  if (!data) return null
  try {
    return JSON.parse(data)
  } catch {
    return null
  }
}

/**
 * Splits an SSE text stream into blocks (separated by a blank line) in time linear in its size:
 * chunks of a block are collected and joined once, and each chunk is searched only once, so a
 * 10 MB event (a session.updated carrying large metadata) costs one pass, not one pass per chunk.
 */
function blockSplitter(onBlock) {
  let parts = []
  let carriage = false // the previous chunk ended in '\r' (a CRLF split across chunks)
  let newline = false // the previous chunk ended in '\n' (a blank line split across chunks)
  return {
    push(text) {
      let chunk = text
      if (carriage && chunk.startsWith('\n')) chunk = chunk.slice(1)
      carriage = chunk.endsWith('\r')
      chunk = chunk.replace(/\r\n?/g, '\n')
      for (;;) {
        if (newline && chunk.startsWith('\n')) {
          const block = parts.join('')
          parts = []
          newline = false
          onBlock(block.slice(0, -1))
          chunk = chunk.slice(1)
          continue
        }
        const index = chunk.indexOf('\n\n')
        if (index < 0) {
          if (chunk) {
            parts.push(chunk)
            newline = chunk.endsWith('\n')
          }
          return
        }
        parts.push(chunk.slice(0, index))
        const block = parts.join('')
        parts = []
        newline = false
        chunk = chunk.slice(index + 2)
        onBlock(block)
      }
    },
  }
}

/** A socket error in words: its code and message (`ECONNREFUSED: connect ECONNREFUSED …`). */
function socketReason(error) {
  if (!error) return 'connection lost'
  return error.code && !String(error.message).includes(error.code) ? `${error.code}: ${error.message}` : String(error.message || error.code)
}

function unwrap(raw) {
  if (!raw || typeof raw !== 'object') return null
  const payload = raw.payload && typeof raw.payload === 'object' ? raw.payload : raw
  if (!payload || payload.type === 'sync') return null
  const directory = typeof raw.directory === 'string' && raw.directory !== 'global' ? raw.directory : ''
  return { payload, directory }
}

/** How long an attempt waits for the answer's headers (OpenCode sends them at once when it is up). */
const CONNECT_TIMEOUT_MS = 5000

/**
 * @param {{ url: string, headers?: Record<string,string>, onPayload: (payload: object, directory: string) => void,
 *           onStatus?: (status: 'connected'|'disconnected', why?: {reason: string, retryInMs: number}) => void,
 *           maxBackoffMs?: number, connectTimeoutMs?: number }} options
 * `why` comes with 'disconnected': what ended the stream (an HTTP status, the server closing it, a
 * socket error) and when the next attempt is.
 */
function subscribeGlobalEvents(options) {
  const base = String(options.url).replace(/\/+$/, '')
  const maxBackoff = options.maxBackoffMs ?? 5000
  const connectTimeout = options.connectTimeoutMs ?? CONNECT_TIMEOUT_MS
  let closed = false
  let request = null
  let retryTimer = null
  let attempt = 0

  const connect = () => {
    if (closed) return
    const target = new URL(base + '/global/event')
    const client = target.protocol === 'https:' ? https : http
    // Events of an attempt given up (or replaced) are ignored: one retry per attempt.
    const current = () => request === mine && !closed
    const fail = (reason) => {
      if (!current()) return
      clearTimeout(unanswered)
      request = null
      mine.destroy()
      scheduleRetry(reason)
    }
    const mine = client.get(target, { headers: { accept: 'text/event-stream', ...(options.headers || {}) } }, (response) => {
      clearTimeout(unanswered)
      if (!current()) {
        response.resume()
        return
      }
      if (response.statusCode !== 200) {
        response.resume()
        fail(`HTTP ${response.statusCode}${response.statusCode === 401 ? ' (check OPENCODE_SERVER_PASSWORD)' : ''}`)
        return
      }
      attempt = 0
      options.onStatus?.('connected')
      response.setEncoding('utf8')
      const blocks = blockSplitter((block) => {
        const event = unwrap(parseBlock(block))
        if (event) {
          try {
            options.onPayload(event.payload, event.directory)
          } catch {
            // A subscriber error must not kill the stream.
          }
        }
      })
      response.on('data', (chunk) => blocks.push(chunk))
      response.on('end', () => fail('the server closed the stream'))
      response.on('error', (error) => fail(socketReason(error)))
    })
    request = mine
    const unanswered = setTimeout(() => fail(`no answer within ${connectTimeout} ms`), connectTimeout)
    unanswered.unref()
    mine.on('error', (error) => fail(socketReason(error)))
    mine.on('socket', (socket) => socket.unref())
  }

  const scheduleRetry = (reason) => {
    if (closed || retryTimer) return
    const delay = Math.min(maxBackoff, 250 * 2 ** Math.min(attempt, 10))
    options.onStatus?.('disconnected', { reason, retryInMs: delay })
    attempt += 1
    retryTimer = setTimeout(() => {
      retryTimer = null
      connect()
    }, delay)
    retryTimer.unref()
  }

  connect()
  return {
    close() {
      closed = true
      if (retryTimer) clearTimeout(retryTimer)
      if (request) request.destroy()
    },
  }
}

module.exports = { subscribeGlobalEvents }
