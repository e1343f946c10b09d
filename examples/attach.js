#!/usr/bin/env node
// npm run attach -- --url http://127.0.0.1:4096
//
// Attaches the goal runtime to your own OpenCode server: it follows `GET /global/event`, keeps
// every session that carries an active goal (metadata.openchamber.goal) working, audits with the
// built-in small model (your OpenCode `small_model`, else a small model of the session's own
// provider), and prints each goal transition until Ctrl-C.
//
// Options:
//   --url URL               OpenCode server (default http://127.0.0.1:4096)
//   --directory DIR         a project directory to scan for active goals at start (repeatable)
//   --small-model P/M       the small model to audit with (overrides OpenCode's small_model)
//   --header "Name: value"  an extra header for every OpenCode request (repeatable), e.g. auth
//   --quiet-ms N            quiet window after a session goes idle (default 15000)
//   --max-turns N           auto-continuation cap per goal (default 20)
//   --data-dir DIR          OpenChamber data directory: objective files and audit trails
//                           (default $OPENCHAMBER_DATA_DIR, else ~/.config/openchamber)
'use strict'

const path = require('node:path')
const { createGoalProgress, elapsed } = require('./progress.js')

const root = path.resolve(__dirname, '..')

function parseArgs(argv) {
  const options = { url: 'http://127.0.0.1:4096', directories: [], headers: {}, quietMs: undefined, maxTurns: undefined, smallModel: undefined, dataDir: undefined }
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i]
    const value = () => {
      const next = argv[++i]
      if (next === undefined) throw new Error(`${flag} needs a value`)
      return next
    }
    if (flag === '--url') options.url = value()
    else if (flag === '--directory') options.directories.push(path.resolve(value()))
    else if (flag === '--small-model') {
      const [providerID, ...rest] = value().split('/')
      if (!providerID || !rest.length) throw new Error('--small-model takes provider/model')
      options.smallModel = { providerID, modelID: rest.join('/') }
    } else if (flag === '--header') {
      const raw = value()
      const colon = raw.indexOf(':')
      if (colon <= 0) throw new Error('--header takes "Name: value"')
      options.headers[raw.slice(0, colon).trim()] = raw.slice(colon + 1).trim()
    } else if (flag === '--quiet-ms') options.quietMs = Number(value())
    else if (flag === '--max-turns') options.maxTurns = Number(value())
    else if (flag === '--data-dir') options.dataDir = path.resolve(value())
    else if (flag === '--help' || flag === '-h') options.help = true
    else throw new Error(`unknown option ${flag}`)
  }
  if (!/^https?:\/\//.test(options.url)) throw new Error('--url must be an http(s) URL')
  return options
}

async function main() {
  let options
  try {
    options = parseArgs(process.argv.slice(2))
  } catch (error) {
    console.error(`attach: ${error.message}\nusage: npm run attach -- --url http://127.0.0.1:4096 [--directory DIR] [--small-model provider/model]`)
    process.exit(2)
  }
  if (options.help) {
    console.log('usage: npm run attach -- --url http://127.0.0.1:4096 [--directory DIR]... [--small-model provider/model] [--header "Name: value"]... [--quiet-ms N] [--max-turns N] [--data-dir DIR]')
    return
  }
  const pkg = require(path.join(root, 'runtime.js'))
  const start = Date.now()
  const say = (line, sessionId) => console.log(`${elapsed(start)} ${sessionId ? sessionId + ' ' : ''}${line}`)

  const runtime = pkg.createSessionGoalRuntime({
    openCode: { baseUrl: options.url, headers: options.headers },
    directories: options.directories,
    ...(options.dataDir ? { settings: { dataDir: options.dataDir } } : {}),
    ...(options.smallModel ? { smallModel: options.smallModel } : {}),
    tunables: {
      ...(Number.isFinite(options.quietMs) ? { idleQuietMs: options.quietMs } : {}),
      ...(Number.isFinite(options.maxTurns) ? { maxAutoTurns: options.maxTurns } : {}),
    },
    emitGoalNotification: (event) => say(`notification: ${event.title} — ${event.body}`, event.sessionId),
    logger: (level, message) => {
      if (level === 'warn' || level === 'error') say(`runtime ${level}: ${message}`)
    },
  })
  const progress = createGoalProgress({ print: say, maxAutoTurns: Number.isFinite(options.maxTurns) ? options.maxTurns : 20 })
  // The package's event follower delivers each event to the runtime (every connection makes it
  // scan its directories) and hands each payload to the progress lines.
  const stream = pkg.createEventFollower({
    openCode: { baseUrl: options.url, headers: options.headers },
    onPayload: (payload) => progress.onPayload(payload),
    onStatus: ({ state, reason, retryInMs }) =>
      say(state === 'connected' ? `connected to ${options.url}; watching goals (Ctrl-C to stop)` : `event stream disconnected (${reason}); reconnecting in ${retryInMs} ms…`),
  })
  // The follower never keeps a host alive; this tool's whole job is to stay.
  const keepAlive = setInterval(() => {}, 60_000)

  let stopping = false
  const stop = async () => {
    if (stopping) return
    stopping = true
    clearInterval(keepAlive)
    stream.close()
    await runtime.stop()
    const snapshot = runtime.snapshot()
    say(`detached (${snapshot.ticks} ticks, ${snapshot.continuations} continuations, ${snapshot.settled} settled)`)
    process.exit(0)
  }
  process.on('SIGINT', stop)
  process.on('SIGTERM', stop)
}

main()
