'use strict'
// The command line of session-goal as the CLI reads it: the usage text, the commands and their
// options, every usage error (exit code 2: nothing was sent), and the request each command's
// flags make. The goal's settings are one table, GOAL_FLAGS: a setting the CLI takes is one
// entry there (and its lines in USAGE).
//
// Input rules (durations, budgets, checks, working hours, session ids) are the core's, reached
// through the binding's `inputRules` (src/validate.rs): none is written out here.

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
  --goal-no-wrap-up            Stop cold at a limit: no wrap-up turn (a handoff posted in place of
                               the turn that would cross it; docs/verdicts.md) (requires --goal)
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

/** A bad command, flag or value: reported in one line, exit code 2, nothing sent. */
class UsageError extends Error {}

// The core's input rules (src/validate.rs), loaded on first use: --help and --version need no
// native binary.
let loadedRules = null
const inputRules = () => (loadedRules ??= require('../runtime.js').inputRules)

/** The value a core rule accepted, or a usage error naming `flag` and the rule's reason. */
function ruled(flag, outcome) {
  if (outcome.problem) throw new UsageError(`${flag}: ${outcome.problem}`)
  return outcome.value
}

/** `outcome` (a core rule's answer) with `value` in place of the rule's own when it accepted. */
const accepted = (outcome, value) => (outcome.problem ? outcome : { value })

// The goal's settings as flags of create, send and fork (each requires --goal), in the order they
// are read. `field`: the setting's name in the request's `goal: {…}`; `read(raw, rules)`: the
// flag's text (a list for a repeatable flag, true for a switch) to the rule's outcome
// `{value?, problem?}`, checked by the core's rule (`rules` is inputRules); `budget`: a budget
// resume and doctor --fix take too, with the fix action that resumes with a new one (`explain`'s
// fixAction), the flag as that fix names it, and how the new value reads.
const GOAL_FLAGS = [
  {
    flag: 'goal-token-budget',
    field: 'tokenBudget',
    // Same contract as the reference CLI's parseGoalTokenBudget: digits only ("1e5" or "5000.0"
    // are refused here, before the number reaches the rule); the bounds are the core's.
    read: (raw, rules) => rules.tokenBudget(/^\d+$/.test(raw) ? Number(raw) : NaN),
    budget: { fix: 'resumeWithTokenBudget', shownFlag: '--goal-token-budget N', shown: (n) => `token budget ${n}` },
  },
  {
    flag: 'goal-cost-budget',
    field: 'costBudget',
    // US dollars: a plain decimal number (5, 2.50), as the goal's costBudget stores it; "1e2" or
    // "$5" are refused here, before the number reaches the rule.
    read: (raw, rules) => {
      const text = String(raw).trim()
      return rules.costBudget(/^\d+(\.\d+)?$/.test(text) ? Number(text) : NaN)
    },
    budget: { fix: 'resumeWithCostBudget', shownFlag: '--goal-cost-budget USD', shown: (d, rules) => `cost budget ${usdOf(rules, d)}` },
  },
  {
    flag: 'goal-time-budget',
    field: 'timeBudgetMs',
    read: (raw, rules) => rules.timeBudget(raw),
    budget: { fix: 'resumeWithTimeBudget', shownFlag: '--goal-time-budget D', shown: (ms, rules) => `time budget ${rules.formatDuration(ms)}` },
  },
  {
    flag: 'goal-active-hours',
    field: 'activeHours',
    // The flag's own syntax (start-end@zone) is split here; the window itself is the core's rule.
    read: (raw, rules) => {
      const match = /^([^-@\s]+)-([^-@\s]+)@(\S+)$/.exec(String(raw).trim())
      if (!match) throw new UsageError(`--goal-active-hours must look like 09:00-17:00@Europe/Berlin (got "${raw}")`)
      const [, start, end, timeZone] = match
      return accepted(rules.activeHours(start, end, timeZone), { start, end, timeZone })
    },
  },
  {
    flag: 'goal-check',
    field: 'checks',
    repeatable: true,
    // One line each (OpenCode runs it inside a quoted eval); how many and how long is the core's rule.
    read: (commands, rules) => accepted(rules.checks(commands), commands.map((command) => ({ command }))),
  },
  {
    flag: 'goal-criterion',
    field: 'criteria',
    repeatable: true,
    // How many and how long is the core's rule.
    read: (texts, rules) => accepted(rules.criteria(texts), texts),
  },
  { flag: 'goal-review', field: 'review', switch: true, read: () => ({ value: true }) },
  // Wrapping up is on by default (the host's wrapUp): the flag only turns it off for this goal.
  { flag: 'goal-no-wrap-up', field: 'wrapUp', switch: true, read: () => ({ value: false }) },
]
const BUDGET_FLAGS = GOAL_FLAGS.filter((setting) => setting.budget).map((setting) => setting.flag)

/** US dollars as the core writes them (two decimals, four below a cent); nothing known is $0.00. */
const usdOf = (rules, dollars) => rules.formatUsd(Number(dollars) || 0)

const PROMPT_FLAGS = ['prompt', 'goal', ...GOAL_FLAGS.map((setting) => setting.flag), 'model', 'agent', 'variant']
const COMMON_FLAGS = ['url', 'directory', 'data-dir', 'json', 'help']
const COMMANDS = {
  create: { positionals: 0, flags: [...PROMPT_FLAGS, 'title'] },
  send: { positionals: 1, flags: PROMPT_FLAGS },
  fork: { positionals: 1, flags: [...PROMPT_FLAGS, 'message'] },
  status: { positionals: 0, flags: ['history'] },
  pause: { positionals: 1, flags: [] },
  resume: { positionals: 1, flags: BUDGET_FLAGS },
  doctor: { positionals: 1, flags: ['fix', ...BUDGET_FLAGS] },
  complete: { positionals: 1, flags: [] },
  clear: { positionals: 1, flags: [] },
  watch: { positionals: 0, flags: ['auditor', 'small-model', 'idle-quiet-ms', 'kickoff-quiet-ms'] },
}
const BOOLEAN_FLAGS = new Set(['goal', 'json', 'help', 'fix', ...GOAL_FLAGS.filter((s) => s.switch).map((s) => s.flag)])
// Flags that may be given more than once: their values are collected in order.
const REPEATABLE_FLAGS = new Set(GOAL_FLAGS.filter((s) => s.repeatable).map((s) => s.flag))

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

/** One goal setting's flag, read and checked: its value, or undefined when not given. */
function readGoalFlag(setting, flags) {
  const raw = flags[setting.flag]
  if (raw === undefined || raw === false) return undefined
  if (!flags.goal) throw new UsageError(`--${setting.flag} requires --goal.`)
  return ruled(`--${setting.flag}`, setting.read(raw, inputRules()))
}

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

/** The request of create, send and fork: the prompt, its selection, and the goal's settings. */
function promptRequest(parsed) {
  const { command, flags } = parsed
  const prompt = flags.prompt
  if (command !== 'create' && (prompt === undefined || !prompt.trim())) throw new UsageError('--prompt is required.')
  if (flags.goal && (prompt === undefined || !prompt.trim())) throw new UsageError('--goal requires --prompt.')
  if (flags.model !== undefined && !/^[^/\s]+\/\S+$/.test(flags.model)) throw new UsageError('--model must look like provider/model')
  const request = { prompt, model: flags.model, agent: flags.agent, variant: flags.variant }
  // The goal's settings nest under `goal` (each flag checks it was given with --goal).
  const goal = {}
  for (const setting of GOAL_FLAGS) {
    const value = readGoalFlag(setting, flags)
    if (value !== undefined) goal[setting.field] = value
  }
  if (flags.goal) request.goal = goal
  return request
}

/** resume and doctor --fix: an optional new budget (resuming with it). */
function budgetEdit(flags) {
  const edit = {}
  for (const setting of GOAL_FLAGS.filter((s) => s.budget)) {
    const value = readGoalFlag(setting, { ...flags, goal: true })
    if (value !== undefined) edit[setting.field] = value
  }
  return edit
}

/** The budget a doctor fix action resumes with (`resumeWithTokenBudget`…): the edit field it
 * needs, the flag that gives it, and how a value reads; undefined for any other action. */
function budgetFix(action) {
  const setting = GOAL_FLAGS.find((s) => s.budget?.fix === action)
  if (!setting) return undefined
  return { needs: setting.field, flag: setting.budget.shownFlag, shown: (value) => setting.budget.shown(value, inputRules()) }
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

module.exports = { GOAL_FLAGS, USAGE, UsageError, inputRules, parseArgs, validate, connection, promptRequest, budgetEdit, budgetFix, parseMillis }
