#!/usr/bin/env node
// session-goal: create, steer and watch OpenCode session goals from a terminal.
//
// It talks to an OpenCode server directly (--url, default http://127.0.0.1:4096; HTTP basic auth
// as user "opencode" when OPENCODE_SERVER_PASSWORD is set) through the same native code a host
// uses. `watch` runs a goal runtime itself, fed from OpenCode's /global/event stream.
//
// Exit codes: 0 done, 1 the operation failed (a runtime error), 2 usage error (a bad command,
// flag or value; nothing was sent). Either way one line on stderr (with --json, the error object
// on stdout instead).
//
// The command line (usage, options, the goal's settings as flags, every usage error) is read by
// ./command-line.js; this file runs the commands and prints what they answer.
'use strict'

const path = require('node:path')
const { pathToFileURL } = require('node:url')
const { USAGE, UsageError, inputRules, parseArgs, validate, connection, promptRequest, budgetEdit, budgetFix, parseMillis } = require('./command-line.js')

const out = (line = '') => process.stdout.write(line + '\n')
const err = (line) => process.stderr.write(line + '\n')

function describeDispatch(result) {
  out(`session ${result.sessionId} (${result.directory})`)
  if (result.sourceSessionId) out(`forked from ${result.sourceSessionId}`)
  if (result.promptDispatched) out(result.dispatchedAsCommand ? `prompt dispatched as /${result.command}` : 'prompt dispatched')
  else out('no prompt sent')
  if (result.goalEnabled) out(result.goalTokenBudget ? `goal mode active (budget: ${result.goalTokenBudget})` : 'goal mode active')
  const goal = result.goal?.goal
  if (goal?.timeBudgetMs) out(`time budget: ${formatDuration(goal.timeBudgetMs)} of active time`)
  if (goal?.costBudget) out(`cost budget: ${usd(goal.costBudget)}`)
  if (goal?.activeHours) out(`working hours: ${goal.activeHours.start}-${goal.activeHours.end} ${goal.activeHours.timeZone}`)
  if (goal?.checks?.length) out(`acceptance checks: ${goal.checks.length} (run before the goal may complete)`)
  for (const warning of result.warnings) out(`warning: ${warning.message}`)
}

/** US dollars as the core writes them (two decimals, four below a cent); nothing known is $0.00. */
const usd = (dollars) => inputRules().formatUsd(Number(dollars) || 0)
const formatDuration = (ms) => inputRules().formatDuration(ms)

const oneLine = (text, max) => {
  const flat = String(text ?? '').replace(/\s+/g, ' ').trim()
  return flat.length > max ? flat.slice(0, max - 1) + '…' : flat
}

function printTable(rows) {
  const header = ['SESSION', 'STATUS', 'TURNS', 'TOKENS', 'COST', 'TIME', 'CHECKS', 'NOTE']
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)))
  const format = (cells) => cells.map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i]))).join('  ').trimEnd()
  out(format(header))
  for (const row of rows) out(format(row))
}

async function runHistory(control, sessionId, flags) {
  const records = await control.history(sessionId)
  if (flags.json) return out(JSON.stringify(records, null, 2))
  if (records.length === 0) return out(`no audit trail for ${sessionId}`)
  for (const r of records) {
    const when = new Date(r.time).toISOString().replace('T', ' ').slice(0, 19)
    const digest = r.digest || {}
    const facts = []
    if (digest.toolCalls !== undefined) facts.push(`tools ${digest.successfulToolCalls}/${digest.toolCalls} ok`)
    for (const f of digest.failingCommands || []) facts.push(`failing: ${oneLine(f.command, 40)} (exit ${f.exitCode ?? 'error'})`)
    if (typeof digest.filesChanged === 'number') facts.push(`files ${digest.filesChanged} (+${digest.additions}/-${digest.deletions})`)
    if (digest.todos) facts.push(`todos ${digest.todos.completed}/${digest.todos.total}`)
    if (r.auditTokens !== undefined) facts.push(`audit ${r.auditTokens} tokens`)
    const time = r.timeBudgetMs ? `${formatDuration(r.activeMs)}/${formatDuration(r.timeBudgetMs)}` : formatDuration(r.activeMs)
    out(`${when}  turn ${r.turn}  ${r.verdict ?? '-'} → ${r.action}${r.reason ? ` (${r.reason})` : ''}  time ${time}`)
    if (r.note) out(`    note: ${oneLine(r.note, 200)}`)
    if (facts.length) out(`    ${facts.join('; ')}`)
    if (r.evidence?.length) out(`    evidence: ${r.evidence.map((e) => oneLine(e, 80)).join('; ')}`)
    if (r.missing?.length) out(`    missing: ${r.missing.map((e) => oneLine(e, 80)).join('; ')}`)
  }
}

// The status with what a person needs beside it: busy, and the cause's code (why it stopped or
// waits; `doctor` explains it).
function statusCell(goal, working) {
  const notes = []
  if (working) notes.push('busy')
  if (goal.cause && typeof goal.cause.code === 'string') notes.push(goal.cause.code)
  return notes.length ? `${goal.status} (${notes.join(', ')})` : goal.status
}

async function runStatus(control, directory, flags) {
  if (flags.history !== undefined) return runHistory(control, flags.history, flags)
  const goals = await control.listGoals(directory)
  if (flags.json) return out(JSON.stringify(goals, null, 2))
  if (goals.length === 0) return out(`no goals in ${directory}`)
  printTable(
    goals.map(({ sessionId, goal, working }) => [
      sessionId,
      statusCell(goal, working),
      String(goal.turnsUsed),
      goal.tokenBudget ? `${goal.tokensUsed}/${goal.tokenBudget}` : String(goal.tokensUsed),
      goal.costBudget ? `${usd(goal.costUsed)}/${usd(goal.costBudget)}` : usd(goal.costUsed),
      goal.timeBudgetMs ? `${formatDuration(goal.activeMs)}/${formatDuration(goal.timeBudgetMs)}` : formatDuration(goal.activeMs),
      String(goal.checks?.length ?? 0),
      goal.wakeAt ? `${oneLine(goal.statusReason, 40)} until ${new Date(goal.wakeAt).toISOString().slice(11, 19)}Z` : oneLine(goal.note || goal.statusReason, 60),
    ]),
  )
}

async function runAction(control, command, sessionId, directory, flags) {
  const method = { pause: 'pauseGoal', resume: 'resumeGoal', complete: 'completeGoal', clear: 'clearGoal' }[command]
  const edit = command === 'resume' ? budgetEdit(flags) : {}
  // A new budget is an edit, which resumes the goal with it.
  const result = Object.keys(edit).length
    ? await control.editGoal({ sessionId, directory, ...edit })
    : await control[method]({ sessionId, directory })
  if (flags.json) return out(JSON.stringify(result, null, 2))
  const past = { pause: 'paused', resume: 'resumed', complete: 'marked complete', clear: 'cleared' }[command]
  if (!result.changed) return out(`${sessionId}: goal already ${result.goal ? result.goal.status : past}`)
  let line = `${sessionId}: goal ${past} (was ${result.previousStatus})`
  if (result.aborted === true) line += '; running turn aborted'
  out(line)
  for (const warning of result.warnings) out(`warning: ${warning.message}`)
}

const when = (ms) => new Date(ms).toISOString().replace('T', ' ').slice(0, 19) + ' UTC'

function printExplanation(report) {
  const status = report.status ? `goal ${report.status}${report.statusReason ? ` (${report.statusReason})` : ''}` : 'no goal'
  out(`session ${report.sessionId}: ${status}`)
  const cause = report.cause
  if (cause) {
    const parts = [cause.code]
    if (cause.detail) parts.push(`(${cause.detail})`)
    if (cause.since) parts.push(`since ${when(cause.since)}`)
    if (cause.until) parts.push(`until ${when(cause.until)}`)
    out(`cause: ${parts.join(' ')}`)
    if (cause.fix) out(`fix: ${cause.fix}`)
  } else if (report.status === 'active') out('cause: none (running)')
  if (report.nextWakeAt) out(`next wake-up: ${when(report.nextWakeAt)}`)
  if (report.lease) out(`lease: ${report.lease.holder} until ${when(report.lease.expiresAt)}`)
  for (const p of report.pending) out(`pending: ${p.kind} ${p.id}${p.permission ? ` (${p.permission})` : ''}`)
  const audit = report.lastAudit
  if (audit) out(`last audit: ${audit.time ? when(audit.time) : '-'}  ${audit.verdict ?? 'failed'} → ${audit.action}${audit.note ? ` — ${oneLine(audit.note, 120)}` : ''}`)
  if (report.cost?.budget) out(`cost: ${usd(report.cost.used)} of ${usd(report.cost.budget)}`)
  if (report.checks?.length) out(`checks: ${report.checks.length}`)
  for (const run of report.lastChecks) {
    const exit = run.exitStatus === null || run.exitStatus === undefined ? '' : `, exit ${run.exitStatus}`
    out(`  check ${run.index + 1}: ${run.result}${exit}, ${formatDuration(run.durationMs)}  ${oneLine(run.command, 80)}`)
  }
  const review = report.lastReview
  if (review) {
    out(`last review: ${when(review.at)}  ${review.verdict} in session ${review.sessionId}${review.cost ? `, ${usd(review.cost)}` : ''}`)
    for (const finding of review.findings) out(`  finding: ${oneLine(finding, 120)}`)
    for (const cited of review.cited) out(`  cited: ${cited.path}${cited.exists ? '' : ' (not found)'}`)
  } else if (report.review) out('review: asked for, none yet')
  for (const f of report.findings) out(`finding: ${f.code}: ${f.message}`)
}

// doctor changes nothing; --fix applies only the action the cause names, after printing it.
async function runDoctor(control, sessionId, directory, flags) {
  const report = await control.explain(sessionId, directory)
  if (!flags.fix) {
    flags.json ? out(JSON.stringify(report, null, 2)) : printExplanation(report)
    return 0
  }
  if (!flags.json) printExplanation(report)
  const action = report.fixAction ?? 'none'
  const edit = budgetEdit(flags)
  const say = (line) => (flags.json ? err(line) : out(line))
  let result
  if (action === 'resume') {
    say(`applying fix: resume ${sessionId}`)
    result = await control.resumeGoal({ sessionId, directory })
  } else if (budgetFix(action)) {
    // A fix that resumes with a new budget: the budget's flag (command-line.js) must give it.
    const { needs, flag, shown } = budgetFix(action)
    if (edit[needs] === undefined) {
      err(`session-goal: --fix for ${report.cause.code} needs ${flag}`)
      return 2
    }
    say(`applying fix: resume ${sessionId} with ${shown(edit[needs])}`)
    result = await control.editGoal({ sessionId, directory, [needs]: edit[needs] })
  } else {
    say(report.cause?.fix ? `nothing to apply: ${report.cause.fix}` : 'nothing to apply')
  }
  if (flags.json) out(JSON.stringify({ ...report, fixed: result ? { action, status: result.goal?.status ?? null } : null }, null, 2))
  else if (result) out(`${sessionId}: goal ${result.goal?.status ?? 'unchanged'}`)
  return 0
}

async function loadAuditor() {
  const modulePath = process.env.SESSION_GOAL_TEST_AUDITOR
  if (!modulePath) return undefined
  const loaded = await import(pathToFileURL(path.resolve(modulePath)).href)
  const generate = loaded.generateSmallModelText ?? loaded.default?.generateSmallModelText ?? loaded.default
  if (typeof generate !== 'function') throw new Error('SESSION_GOAL_TEST_AUDITOR module exports no generateSmallModelText')
  return generate
}

async function runWatch(pkg, control, target, directory, flags) {
  let auditor = await loadAuditor()
  if (!auditor && flags.auditor === 'none') {
    err('note: no auditor (--auditor none): audits are unavailable, so each goal gets one unaudited continuation and then blocks with "progress audit unavailable"')
    auditor = async () => ({ error: { statusCode: 404 } })
  }
  const [smallProvider, ...smallModelRest] = (flags['small-model'] || '').split('/')
  const smallModel = smallProvider && smallModelRest.length ? { providerID: smallProvider, modelID: smallModelRest.join('/') } : undefined
  const known = new Map()
  const stamp = () => new Date().toISOString().slice(11, 19)
  const say = (sessionId, text) => out(`${stamp()} ${sessionId} ${text}`)
  const detail = (goal) => {
    const parts = []
    if (goal.statusReason) parts.push(`(${oneLine(goal.statusReason, 80)})`)
    const until = goal.cause && typeof goal.cause.until === 'number' ? goal.cause.until : null
    if (until) parts.push(`until ${new Date(until).toISOString().slice(11, 19)}Z`)
    if (goal.note) parts.push(`— ${oneLine(goal.note, 120)}`)
    if (goal.cause && typeof goal.cause.code === 'string') parts.push(`[cause ${goal.cause.code}${goal.cause.detail ? `: ${oneLine(goal.cause.detail, 120)}` : ''}]`)
    return parts.length ? ' ' + parts.join(' ') : ''
  }
  const observe = (sessionId, goal) => {
    const previous = known.get(sessionId)
    if (!goal) {
      if (previous) {
        known.delete(sessionId)
        say(sessionId, 'goal cleared')
      }
      return
    }
    known.set(sessionId, { id: goal.id, status: goal.status, turnsUsed: goal.turnsUsed, statusReason: goal.statusReason })
    if (!previous || previous.id !== goal.id) return say(sessionId, `goal ${goal.status} (turns ${goal.turnsUsed})${detail(goal)}`)
    if (previous.status !== goal.status) return say(sessionId, `${previous.status} → ${goal.status}${detail(goal)}`)
    if (goal.statusReason !== previous.statusReason && goal.statusReason === 'waiting for provider limit') return say(sessionId, `parked${detail(goal)}`)
    if (goal.turnsUsed > previous.turnsUsed) say(sessionId, `continuation ${goal.turnsUsed}`)
  }
  const readGoal = (info) => {
    const goal = info && info.metadata && info.metadata.openchamber && info.metadata.openchamber.goal
    if (!goal || typeof goal !== 'object' || typeof goal.id !== 'string' || !goal.id || typeof goal.status !== 'string') return null
    return { id: goal.id, status: goal.status, turnsUsed: Number(goal.turnsUsed) || 0, statusReason: String(goal.statusReason || ''), note: String(goal.note || ''), cause: goal.cause && typeof goal.cause === 'object' ? goal.cause : null }
  }

  const runtime = pkg.createSessionGoalRuntime({
    openCode: { baseUrl: target.url, headers: target.headers },
    settings: { dataDir: control.dataDir },
    directories: [directory],
    tunables: { idleQuietMs: parseMillis(flags, 'idle-quiet-ms'), kickoffQuietMs: parseMillis(flags, 'kickoff-quiet-ms') },
    ...(auditor || smallModel ? { smallModel: { ...smallModel, ...(auditor ? { generate: auditor } : {}) } } : {}),
    // watch prints the transitions itself (and --json needs a clean stdout): no console lines.
    logger: null,
  })
  // The hint create gives when no server answers, once: watch itself goes on trying.
  let hinted = false
  function hintOnce() {
    if (!hinted) err(`session-goal: ${serverHint(target)}`)
    hinted = true
  }
  try {
    for (const entry of await control.listGoals(directory)) {
      known.set(entry.sessionId, { id: entry.goal.id, status: entry.goal.status, turnsUsed: entry.goal.turnsUsed })
      say(entry.sessionId, `goal ${entry.goal.status} (turns ${entry.goal.turnsUsed})${detail(entry.goal)}`)
    }
  } catch (error) {
    err(`warning: could not list the goals of ${directory} at ${target.url}: ${error.message}`)
    if (unreachable(error)) hintOnce()
  }
  let everConnected = false
  // The package's follower of the event stream (src/event_follower.rs): it delivers each event
  // to the runtime, and every connection (the first, and each after a drop: OpenCode restarted,
  // say) makes the runtime scan the directory for active goals whose events were missed. Here
  // it also hands over each payload, for the transitions this command prints.
  const stream = pkg.createEventFollower({
    openCode: { baseUrl: target.url, headers: target.headers },
    onStatus: ({ state, reason, retryInMs }) => {
      err(state === 'disconnected' ? `event stream disconnected from ${target.url}: ${reason}; reconnecting in ${retryInMs} ms` : `event stream connected (${target.url})`)
      // A server that answered with a status is there; one that never answered may not be.
      if (state === 'connected') everConnected = true
      else if (!everConnected && !/^HTTP /.test(reason ?? '')) hintOnce()
    },
    onPayload: (payload) => {
      if (payload.type !== 'session.updated') return
      const info = payload.properties && payload.properties.info
      if (!info || typeof info.id !== 'string' || info.parentID) return
      observe(info.id, readGoal(info))
    },
  })
  out(`watching ${target.url} for goal transitions (Ctrl-C to stop)`)
  // The event stream and the runtime never keep Node alive on their own (a host owns its
  // lifetime); here the watch is the whole program, so hold the process open until a signal.
  const keepAlive = setInterval(() => {}, 1 << 30)
  await new Promise((resolve) => {
    const stop = () => resolve()
    process.once('SIGINT', stop)
    process.once('SIGTERM', stop)
  })
  clearInterval(keepAlive)
  stream.close()
  await runtime.stop()
}

async function main(argv) {
  let parsed
  try {
    parsed = parseArgs(argv)
    if (parsed.help) {
      process.stdout.write(USAGE)
      return 0
    }
    if (parsed.version) {
      // Read from the package itself: no native binary is needed to answer.
      const { name, version } = require('../package.json')
      process.stdout.write(`${name} ${version}\n`)
      return 0
    }
    validate(parsed)
  } catch (error) {
    if (error instanceof UsageError) {
      err(`session-goal: ${error.message}`)
      return 2
    }
    throw error
  }
  const { command, flags, sessionId } = parsed
  const target = connection(flags)
  const directory = path.resolve(flags.directory ?? process.cwd())
  const pkg = require('../runtime.js')
  const control = pkg.createSessionGoalControl({
    openCode: { baseUrl: target.url, headers: target.headers },
    ...(flags['data-dir'] ? { dataDir: path.resolve(flags['data-dir']) } : {}),
  })
  try {
    switch (command) {
      case 'create': {
        const result = await control.createSession({ directory, title: flags.title, ...promptRequest(parsed) })
        flags.json ? out(JSON.stringify(result, null, 2)) : describeDispatch(result)
        break
      }
      case 'send':
      case 'fork': {
        const request = { sessionId, directory, ...promptRequest(parsed) }
        if (command === 'fork' && flags.message) request.messageId = flags.message
        const result = command === 'send' ? await control.sendPrompt(request) : await control.forkSession(request)
        flags.json ? out(JSON.stringify(result, null, 2)) : describeDispatch(result)
        break
      }
      case 'status':
        await runStatus(control, directory, flags)
        break
      case 'watch':
        await runWatch(pkg, control, target, directory, flags)
        break
      case 'doctor':
        return await runDoctor(control, sessionId, directory, flags)
      default:
        await runAction(control, command, sessionId, directory, flags)
    }
  } catch (error) {
    reportFailure(pkg, error, target, flags)
    return 1
  }
  return 0
}

// OpenCode's core names a connection it could not make `network error: …` or `timed out`
// (goal-core's HttpError), behind an openCode or timeout SessionGoalError.
// The port a URL names (its scheme's default when it names none), for the hint to start a
// server where the CLI looked.
function portOf(url) {
  try {
    const parsed = new URL(url)
    return parsed.port || (parsed.protocol === 'https:' ? '443' : '80')
  } catch {
    return '4096'
  }
}

/** What to do when no server answers at the CLI's URL. */
const serverHint = (target) =>
  `no OpenCode server answered at ${target.url}: start one with \`opencode serve --port ${portOf(target.url)}\`, or pass --url with the address it listens on`

const unreachable = (error) => (error.code === 'openCode' || error.code === 'timeout') && /: (network error: .*|timed out)$/.test(error.message)

/** A runtime failure, reported once: the error object on stdout with --json, else one line. */
function reportFailure(pkg, error, target, flags) {
  if (!(error instanceof pkg.SessionGoalError)) return err(`session-goal: ${error && error.message ? error.message : error}`)
  const hint = unreachable(error) ? serverHint(target) : undefined
  if (flags.json) return out(JSON.stringify({ ...error.toJSON(), ...(hint ? { url: target.url, hint } : {}) }, null, 2))
  let line = `session-goal: ${error.message}`
  if (error.partialAction) line += ` (partial: ${error.partialAction}${error.sessionId ? `, session ${error.sessionId}` : ''})`
  err(line)
  if (hint) err(`session-goal: ${hint}`)
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code
  },
  (error) => {
    err(`session-goal: ${error && error.message ? error.message : error}`)
    process.exitCode = 1
  },
)

