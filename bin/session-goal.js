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
// Input rules (durations, budgets, checks, working hours, session ids) are the core's, reached
// through the binding's `inputRules` (src/validate.rs): none is written out here.
'use strict'

const path = require('node:path')
const { pathToFileURL } = require('node:url')
const { parseArgs: parseArgv } = require('node:util')

const DEFAULT_URL = 'http://127.0.0.1:4096'

const USAGE = `Usage: session-goal <command> [options]

Commands:
  create                 Create a session (optionally with a first prompt and a goal)
  send <sessionId>       Send a prompt to a session (optionally starting a goal)
  fork <sessionId>       Fork a session (at --message) and prompt the fork
  status                 Table of the goals in a directory (tokens, cost and time used against
                         their budgets);
                         --history <sessionId> prints that goal's audit trail instead
  pause <sessionId>      Pause the goal and abort the running turn
  resume <sessionId>     Resume the goal (fresh turn allowance); with --goal-token-budget,
                         --goal-cost-budget or --goal-time-budget, resume with that budget
  doctor <sessionId>     Why the goal is where it is: status, cause and fix, next wake-up, lease,
                         pending requests, last audit and checks, findings. Changes nothing;
                         --fix applies the one action the cause names, after printing it
  complete <sessionId>   Mark the goal complete
  clear <sessionId>      Remove the goal (and abort the turn if it was active)
  watch                  Run the goal loop here and print goal transitions as they happen

Options for create, send, fork:
  --prompt <text>              Prompt; a leading /name runs that OpenCode command
  --goal                       Make the prompt the goal objective
  --goal-token-budget <n>      Token budget of the goal (1000..100000000; requires --goal)
  --goal-cost-budget <usd>     Cost budget of the goal in US dollars, e.g. 5 or 2.50 (at least
                               0.01; requires --goal): the goal stops budgetLimited once its
                               replies cost that much (OpenCode prices each reply from the
                               model's configured price; a model without one costs 0 and never
                               reaches it)
  --goal-time-budget <d>       Time budget of the goal, active time only (90m, 2h, 1h30m, 45s, 1d;
                               requires --goal)
  --goal-active-hours <w>      Working hours HH:MM-HH:MM@TimeZone, e.g. 09:00-17:00@Europe/Berlin
                               (IANA zone; end before start crosses midnight; requires --goal)
  --goal-check <command>       An acceptance check, repeatable (at most 8): the goal settles
                               complete only once every check exits 0 (requires --goal)
  --goal-criterion <text>      An acceptance criterion, repeatable (at most 8, each at most 300
                               characters): the auditor must grade every one met, citing
                               evidence, before the goal completes (requires --goal)
  --goal-review                A reviewer (a read-only child session on the goal's model) signs
                               off before the goal completes; see docs/review.md (requires --goal)
  --model <provider/model>     Model (send/fork default: the last user message's)
  --agent <name>               Agent
  --variant <name>             Model variant
  --title <text>               Session title (create)
  --message <messageId>        Fork before this message (fork)

Options for doctor:
  --fix                        Apply the cause's fix (resume; a spent budget needs
                               --goal-token-budget, --goal-cost-budget or --goal-time-budget)

Options for watch:
  --auditor builtin|none       Small model for audits (default builtin: --small-model, else
                               OpenCode's small_model, else a small model of the session's own
                               provider, else the session's model). With none every audit is
                               unavailable, so a goal gets one unaudited continuation and then
                               blocks with "progress audit unavailable".
  --small-model <provider/model>  The built-in auditor's model
  --idle-quiet-ms <n>          Quiet window after a turn ends (default 15000)
  --kickoff-quiet-ms <n>       Delay before a fresh goal starts (default 3000)

Common options:
  --url <url>                  OpenCode server (default ${DEFAULT_URL})
  --directory <path>           Project directory (default: the current directory)
  --data-dir <path>            OpenChamber data directory for objective files
                               (default: $OPENCHAMBER_DATA_DIR, else ~/.config/openchamber)
  --json                       Print results as JSON
  -h, --help                   Show this help
  -V, --version                Print the package version

Environment:
  OPENCODE_SERVER_PASSWORD     Sent as HTTP basic auth (user: $OPENCODE_SERVER_USERNAME or "opencode")
  SESSION_GOAL_TEST_AUDITOR    For testing only: path of a module exporting
                               generateSmallModelText(request), used by watch as the auditor
`

class UsageError extends Error {}

const PROMPT_FLAGS = ['prompt', 'goal', 'goal-token-budget', 'goal-cost-budget', 'goal-time-budget', 'goal-active-hours', 'goal-check', 'goal-criterion', 'goal-review', 'model', 'agent', 'variant']
const COMMON_FLAGS = ['url', 'directory', 'data-dir', 'json', 'help']
const COMMANDS = {
  create: { positionals: 0, flags: [...PROMPT_FLAGS, 'title'] },
  send: { positionals: 1, flags: PROMPT_FLAGS },
  fork: { positionals: 1, flags: [...PROMPT_FLAGS, 'message'] },
  status: { positionals: 0, flags: ['history'] },
  pause: { positionals: 1, flags: [] },
  resume: { positionals: 1, flags: ['goal-token-budget', 'goal-cost-budget', 'goal-time-budget'] },
  doctor: { positionals: 1, flags: ['fix', 'goal-token-budget', 'goal-cost-budget', 'goal-time-budget'] },
  complete: { positionals: 1, flags: [] },
  clear: { positionals: 1, flags: [] },
  watch: { positionals: 0, flags: ['auditor', 'small-model', 'idle-quiet-ms', 'kickoff-quiet-ms'] },
}
const BOOLEAN_FLAGS = new Set(['goal', 'json', 'help', 'fix', 'goal-review'])
// Flags that may be given more than once: their values are collected in order.
const REPEATABLE_FLAGS = new Set(['goal-check', 'goal-criterion'])

// The core's input rules (src/validate.rs), loaded on first use: --help and --version need no
// native binary.
let loadedRules = null
const inputRules = () => (loadedRules ??= require('../runtime.js').inputRules)

/** The value a core rule accepted, or a usage error naming `flag` and the rule's reason. */
function ruled(flag, outcome) {
  if (outcome.problem) throw new UsageError(`${flag}: ${outcome.problem}`)
  return outcome.value
}

/** The options of `command` as `node:util` parseArgs declares them. */
function optionsOf(allowed) {
  const options = {}
  for (const name of allowed) options[name] = { type: BOOLEAN_FLAGS.has(name) ? 'boolean' : 'string', multiple: REPEATABLE_FLAGS.has(name) }
  options.help = { type: 'boolean', short: 'h' }
  return options
}

/** Edits (insertions, deletions, substitutions) between two short strings. */
function editDistance(a, b) {
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i)
  for (let i = 1; i <= a.length; i++) {
    const current = [i]
    for (let j = 1; j <= b.length; j++) current[j] = Math.min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1))
    previous = current
  }
  return previous[b.length]
}

/** The option an unknown `--name` most likely meant: the command's own, else which commands take it. */
function meantOption(name, command, allowed) {
  const scored = [...allowed].map((known) => [known, editDistance(name, known)]).sort((a, b) => a[1] - b[1])
  const [closest, distance] = scored[0] ?? []
  if (closest !== undefined && distance <= Math.max(1, Math.floor(name.length / 3))) return `did you mean --${closest}?`
  const takers = Object.keys(COMMANDS).filter((other) => other !== command && COMMANDS[other].flags.includes(name))
  return takers.length ? `it is an option of ${takers.join(', ')}` : 'run session-goal --help'
}

/** The command line as `node:util` parseArgs reads it, checked against the command's options. */
function parseArgs(argv) {
  if (argv.length === 0) throw new UsageError('missing command (run session-goal --help)')
  if (argv[0] === '-h' || argv[0] === '--help' || argv[0] === 'help') return { help: true }
  if (argv[0] === '-V' || argv[0] === '--version' || argv[0] === 'version') return { version: true }
  const command = argv[0]
  const spec = COMMANDS[command]
  if (!spec) throw new UsageError(`unknown command "${command}" (run session-goal --help)`)
  const allowed = new Set([...spec.flags, ...COMMON_FLAGS])
  // Not strict: an unknown option or a missing value is reported here, in the CLI's own words.
  const { tokens } = parseArgv({ args: argv.slice(1), options: optionsOf(allowed), strict: false, allowPositionals: true, tokens: true })
  const flags = {}
  const positionals = []
  for (const token of tokens) {
    if (token.kind === 'positional') positionals.push(token.value)
    if (token.kind !== 'option') continue
    const { name, rawName, value } = token
    if (!allowed.has(name)) throw new UsageError(`unknown option ${rawName} for ${command} (${meantOption(name, command, allowed)})`)
    if (name in flags && !REPEATABLE_FLAGS.has(name) && name !== 'help') throw new UsageError(`--${name} given twice`)
    if (BOOLEAN_FLAGS.has(name)) {
      if (value !== undefined) throw new UsageError(`--${name} takes no value`)
      flags[name] = true
    } else if (value === undefined || (!token.inlineValue && value.startsWith('--'))) {
      throw new UsageError(`--${name} needs a value`)
    } else if (REPEATABLE_FLAGS.has(name)) (flags[name] ??= []).push(value)
    else flags[name] = value
  }
  if (flags.help) return { help: true }
  if (positionals.length !== spec.positionals) {
    throw new UsageError(spec.positionals === 1 ? `${command} needs exactly one session id` : `${command} takes no arguments (got "${positionals[0]}")`)
  }
  if (positionals[0] !== undefined) checkSessionId(positionals[0], `${command}`)
  if (flags.history !== undefined) checkSessionId(flags.history, '--history')
  return { command, flags, sessionId: positionals[0] }
}

function checkSessionId(id, where) {
  if (!inputRules().isSessionId(id)) throw new UsageError(`${where}: "${id}" is not a session id (4 to 128 letters, digits, _ or -, e.g. ses_2f1c…)`)
}

// Same contract as the reference CLI's parseGoalTokenBudget; the bounds are the core's.
function parseGoalTokenBudget(flags) {
  const raw = flags['goal-token-budget']
  if (raw === undefined) return undefined
  if (!flags.goal) throw new UsageError('--goal-token-budget requires --goal.')
  // Digits only: "1e5" or "5000.0" are refused here, before the number reaches the rule.
  return ruled('--goal-token-budget', inputRules().tokenBudget(/^\d+$/.test(raw) ? Number(raw) : NaN))
}

// US dollars: a plain decimal number (5, 2.50), as the goal's costBudget stores it.
function parseGoalCostBudget(flags) {
  const raw = flags['goal-cost-budget']
  if (raw === undefined) return undefined
  if (!flags.goal) throw new UsageError('--goal-cost-budget requires --goal.')
  // A plain decimal only: "1e2" or "$5" are refused here, before the number reaches the rule.
  const text = String(raw).trim()
  return ruled('--goal-cost-budget', inputRules().costBudget(/^\d+(\.\d+)?$/.test(text) ? Number(text) : NaN))
}

function parseGoalTimeBudget(flags) {
  const raw = flags['goal-time-budget']
  if (raw === undefined) return undefined
  if (!flags.goal) throw new UsageError('--goal-time-budget requires --goal.')
  return ruled('--goal-time-budget', inputRules().timeBudget(raw))
}

function parseGoalActiveHours(flags) {
  const raw = flags['goal-active-hours']
  if (raw === undefined) return undefined
  if (!flags.goal) throw new UsageError('--goal-active-hours requires --goal.')
  // The flag's own syntax (start-end@zone) is split here; the window itself is the core's rule.
  const match = /^([^-@\s]+)-([^-@\s]+)@(\S+)$/.exec(String(raw).trim())
  if (!match) throw new UsageError(`--goal-active-hours must look like 09:00-17:00@Europe/Berlin (got "${raw}")`)
  const [, start, end, timeZone] = match
  ruled('--goal-active-hours', inputRules().activeHours(start, end, timeZone))
  return { start, end, timeZone }
}

const formatDuration = (ms) => inputRules().formatDuration(ms)

function parseMillis(flags, name) {
  const raw = flags[name]
  if (raw === undefined) return undefined
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(Number(raw))) throw new UsageError(`--${name} must be a whole number of milliseconds`)
  return Number(raw)
}

function connection(flags) {
  const url = flags.url ?? DEFAULT_URL
  let parsed
  try {
    parsed = new URL(url)
  } catch {
    throw new UsageError(`--url is not a URL: ${url}`)
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new UsageError('--url must be an http(s) URL')
  const headers = {}
  const password = process.env.OPENCODE_SERVER_PASSWORD
  if (password) {
    const user = process.env.OPENCODE_SERVER_USERNAME || 'opencode'
    headers.authorization = 'Basic ' + Buffer.from(`${user}:${password}`).toString('base64')
  }
  return { url: url.replace(/\/+$/, ''), headers }
}

function promptRequest(parsed) {
  const { command, flags } = parsed
  const budget = parseGoalTokenBudget(flags)
  const prompt = flags.prompt
  if (command !== 'create' && (prompt === undefined || !prompt.trim())) throw new UsageError('--prompt is required.')
  if (flags.goal && (prompt === undefined || !prompt.trim())) throw new UsageError('--goal requires --prompt.')
  if (flags.model !== undefined && !/^[^/\s]+\/\S+$/.test(flags.model)) throw new UsageError('--model must look like provider/model')
  const request = { prompt, model: flags.model, agent: flags.agent, variant: flags.variant }
  // The goal's settings nest under `goal` (each flag checks it was given with --goal).
  const goal = {}
  if (budget !== undefined) goal.tokenBudget = budget
  const costBudget = parseGoalCostBudget(flags)
  if (costBudget !== undefined) goal.costBudget = costBudget
  const timeBudget = parseGoalTimeBudget(flags)
  if (timeBudget !== undefined) goal.timeBudgetMs = timeBudget
  const activeHours = parseGoalActiveHours(flags)
  if (activeHours !== undefined) goal.activeHours = activeHours
  const checks = parseGoalChecks(flags)
  if (checks !== undefined) goal.checks = checks
  if (flags['goal-criterion'] !== undefined) {
    if (!flags.goal) throw new UsageError('--goal-criterion requires --goal.')
    // How many and how long is the core's rule.
    ruled('--goal-criterion', inputRules().criteria(flags['goal-criterion']))
    goal.criteria = flags['goal-criterion']
  }
  if (flags['goal-review']) {
    if (!flags.goal) throw new UsageError('--goal-review requires --goal.')
    goal.review = true
  }
  if (flags.goal) request.goal = goal
  return request
}

// --goal-check, repeatable: one line each (OpenCode runs it inside a quoted eval); how many and
// how long is the core's rule.
function parseGoalChecks(flags) {
  const raw = flags['goal-check']
  if (raw === undefined) return undefined
  if (!flags.goal) throw new UsageError('--goal-check requires --goal.')
  ruled('--goal-check', inputRules().checks(raw))
  return raw.map((command) => ({ command }))
}

// resume and doctor --fix: an optional new budget (resuming with it).
function budgetEdit(flags) {
  const edit = {}
  const tokens = parseGoalTokenBudget({ ...flags, goal: true })
  if (tokens !== undefined) edit.tokenBudget = tokens
  const time = parseGoalTimeBudget({ ...flags, goal: true })
  if (time !== undefined) edit.timeBudgetMs = time
  const cost = parseGoalCostBudget({ ...flags, goal: true })
  if (cost !== undefined) edit.costBudget = cost
  return edit
}

function validate(parsed) {
  const { command, flags } = parsed
  connection(flags)
  if (['create', 'send', 'fork'].includes(command)) promptRequest(parsed)
  if (command === 'resume' || command === 'doctor') budgetEdit(flags)
  if (command === 'watch') {
    if (flags.auditor !== undefined && flags.auditor !== 'none' && flags.auditor !== 'builtin') {
      throw new UsageError(`--auditor must be "builtin" or "none" (got "${flags.auditor}")`)
    }
    if (flags['small-model'] !== undefined && !/^[^/\s]+\/\S+$/.test(flags['small-model'])) {
      throw new UsageError(`--small-model must look like provider/model (got "${flags['small-model']}")`)
    }
    parseMillis(flags, 'idle-quiet-ms')
    parseMillis(flags, 'kickoff-quiet-ms')
  }
}

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

async function runStatus(control, directory, flags) {
  if (flags.history !== undefined) return runHistory(control, flags.history, flags)
  const goals = await control.listGoals(directory)
  if (flags.json) return out(JSON.stringify(goals, null, 2))
  if (goals.length === 0) return out(`no goals in ${directory}`)
  printTable(
    goals.map(({ sessionId, goal, working }) => [
      sessionId,
      goal.status + (working ? ' (busy)' : ''),
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

// The fixes that resume with a new budget: the edit field, the flag that gives it, how it reads.
const BUDGET_FIXES = {
  resumeWithTokenBudget: { needs: 'tokenBudget', flag: '--goal-token-budget N', shown: (n) => `token budget ${n}` },
  resumeWithTimeBudget: { needs: 'timeBudgetMs', flag: '--goal-time-budget D', shown: (ms) => `time budget ${formatDuration(ms)}` },
  resumeWithCostBudget: { needs: 'costBudget', flag: '--goal-cost-budget USD', shown: (d) => `cost budget ${usd(d)}` },
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
  } else if (BUDGET_FIXES[action]) {
    const { needs, flag, shown } = BUDGET_FIXES[action]
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
  const { subscribeGlobalEvents } = require('../lib/event-stream.js')
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
  let reconnecting = false
  let everConnected = false
  const stream = subscribeGlobalEvents({
    url: target.url,
    headers: target.headers,
    onStatus: (status, why) => {
      err(why ? `event stream ${status} from ${target.url}: ${why.reason}; reconnecting in ${why.retryInMs} ms` : `event stream ${status} (${target.url})`)
      // A server that answered with a status is there; one that never answered may not be.
      if (status === 'connected') everConnected = true
      else if (!everConnected && !/^HTTP /.test(why?.reason ?? '')) hintOnce()
      // Back after a drop (OpenCode restarted, say): events lost meanwhile announce nothing, and a
      // turn cut by the restart is announced by no event at all, so scan for active goals now.
      if (status === 'disconnected') reconnecting = true
      else if (status === 'connected' && reconnecting) {
        reconnecting = false
        runtime.recover()
      }
    },
    onPayload: (payload, payloadDirectory) => {
      runtime.processPayload(payload, payloadDirectory)
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
