// The figures of scripts/chaos-real.mjs: what each seed's goals, transcripts, wire records and
// check files say (settled, stuck, twice, lost), the time to act after each restart,
// what a failing seed keeps, and the table of RELIABILITY.md.
import fs from 'node:fs'
import path from 'node:path'

/** How a continuation's text begins (crates/goal-core/src/text/prompts.rs). */
export const CONTINUATION_PREFIX = 'Keep working toward the session goal'
/**
 * The bound of docs/reliability.md ("Bounded silence"): at OpenChamber's settings an active goal
 * whose session is idle is acted on within 60 s of OpenCode answering again.
 */
export const SILENCE_BOUND_MS = 60_000

/**
 * One line on a goal that did not end complete: its status and cause, and the last messages of its
 * session (role, id, finished or not, finish, error name, continuation or claim), so a failing
 * seed says what the transcript looked like after the kills.
 */
export function diagnosis({ sessionId, goal, messages }) {
  const shown = messages.slice(-4).map((m) => {
    const info = m.info
    if (info.role === 'user') {
      const kind = m.parts.some((p) => p.type === 'text' && String(p.text).startsWith(CONTINUATION_PREFIX)) ? 'continuation' : /zCHK/.test(info.id) ? 'check' : 'user'
      return `user ${info.id} (${kind})`
    }
    const state = info.time?.completed ? 'finished' : 'unfinished'
    return `assistant ${info.id} (${state}${info.finish ? `, finish ${info.finish}` : ''}${info.error ? `, error ${info.error.name ?? '?'}` : ''})`
  })
  const cause = goal.cause ? ` [${goal.cause.code}${goal.cause.detail ? `: ${goal.cause.detail}` : ''}]` : ''
  return `${sessionId} ${goal.status}: ${goal.statusReason ?? ''}${cause}; last messages: ${shown.join(' → ') || 'none'}`
}

/** Whether the transcript ends in two cut turns in a row: the last two replies unfinished. */
function twoCutTurns(messages) {
  const replies = messages.filter((m) => m.info.role === 'assistant')
  const cut = (m) => !m.info.time?.completed && !m.info.finish && !m.info.error
  return replies.length >= 2 && replies.slice(-2).every(cut)
}

/**
 * The settled state a goal that is not complete is counted under. `blocked` with
 * `turnInterrupted` is what the loop settles after two turns in a row cut by restarts
 * (docs/provider-limits.md); it is
 * allowed only when the transcript shows them.
 */
function settledOtherwise({ goal, messages }) {
  if (goal.status === 'blocked' && goal.cause?.code === 'turnInterrupted') {
    return twoCutTurns(messages) ? 'allowed: blocked turnInterrupted after two cut turns in a row' : 'blocked turnInterrupted WITHOUT two cut turns'
  }
  return `${goal.status}: ${goal.statusReason}`
}

/** The figures of one seed, from the goals, the wire and the check files. */
export function judge(goals, sends, runsDir) {
  const figures = { goals: goals.length, complete: 0, allowed: 0, stuck: 0, otherwise: {}, sameIdReposts: 0, repostsAfterAnswer: 0, differentIdsOneTail: 0, checkRunsTwice: 0, writesLost: 0 }
  const delivered = sends.filter((s) => s.status !== null && s.status < 300 && s.continuation)
  // What the counters saw: continuation posts and check posts delivered, check runs made.
  figures.continuationPosts = delivered.length
  figures.shellPosts = sends.filter((s) => s.route === 'shell' && s.status !== null && s.status < 300).length
  figures.checkRuns = 0
  // What the kills did to the transcripts (not a failure): replies a restart cut, and goals with one.
  figures.cutReplies = 0
  figures.goalsWithCutReply = 0
  for (const { sessionId, goal, messages } of goals) {
    const cuts = messages.filter((m) => m.info.role === 'assistant' && !m.info.time?.completed && !m.info.finish && !m.info.error).length
    figures.cutReplies += cuts
    if (cuts > 0) figures.goalsWithCutReply++
    if (goal.status === 'complete') figures.complete++
    else if (goal.status === 'active') figures.stuck++
    else {
      const key = settledOtherwise({ goal, messages })
      if (key.startsWith('allowed')) figures.allowed++
      figures.otherwise[key] = (figures.otherwise[key] ?? 0) + 1
    }
    // A post of an id already posted: a stranded message posted again, or a post whose answer
    // was lost, is allowed; one made after the message was answered is a post too many.
    const seen = new Set()
    for (const s of delivered.filter((s) => s.sessionId === sessionId)) {
      if (!seen.has(s.messageID)) {
        seen.add(s.messageID)
        continue
      }
      figures.sameIdReposts++
      const answered = messages.some((m) => m.info.role === 'assistant' && m.info.parentID === s.messageID && m.info.time?.created < s.at)
      if (answered) figures.repostsAfterAnswer++
    }
    const perTail = new Map()
    let tail = null
    let continuations = 0
    for (const m of messages) {
      if (m.info.role === 'assistant') tail = m.info.id
      else if (m.parts.some((p) => p.type === 'text' && p.text.startsWith(CONTINUATION_PREFIX))) {
        continuations++
        perTail.set(tail, (perTail.get(tail) ?? 0) + 1)
      }
    }
    for (const n of perTail.values()) figures.differentIdsOneTail += n - 1
    if (typeof goal.turnsUsed !== 'number' || goal.turnsUsed < continuations) figures.writesLost++
    const tag = /\[scenario:chaos-\d+-(\d+)\]/.exec(String(goal.objective))
    const runs = tag && fs.existsSync(path.join(runsDir, `${tag[1]}.log`)) ? fs.readFileSync(path.join(runsDir, `${tag[1]}.log`), 'utf8').split('\n').filter(Boolean).length : 0
    figures.checkRuns += runs
    if (runs > 1) figures.checkRunsTwice += runs - 1
  }
  return figures
}

/**
 * What a failing seed keeps about a goal not complete: its record, its transcript (ids, roles,
 * parents, times, finish, error, part types and the first characters of text), the posts the
 * proxy saw for it, when it was created; times in ms from t0.
 */
export function goalEvidence({ sessionId, goal, messages }, sends, created, t0) {
  const rel = (at) => (typeof at === 'number' ? at - t0 : at)
  return {
    sessionId,
    created: created.find((c) => c.sessionId === sessionId) ?? null,
    goal,
    messages: messages.map(({ info, parts }) => ({
      id: info.id,
      role: info.role,
      parentID: info.parentID,
      created: rel(info.time?.created),
      completed: rel(info.time?.completed),
      finish: info.finish,
      error: info.error?.name,
      parts: parts.map((p) => `${p.type}${p.type === 'text' ? `: ${String(p.text).slice(0, 60)}` : p.type === 'tool' ? ` ${p.tool} ${p.state?.status}` : ''}`),
    })),
    sends: sends.filter((x) => x.sessionId === sessionId).map((x) => ({ ...x, at: rel(x.at) })),
  }
}

/**
 * Time to act after each restart, OpenCode's or a host's: for each goal active when the restarted
 * process was killed (created before the kill, not settled yet), the time from the restart
 * (`upAt`: OpenCode answering its health check again, or the host's new process connected) to
 * the goal's first action after the kill that OpenCode answered with 2xx (a post, or a write of
 * its goal, at the proxy), whichever host made it; 0 when one landed before `upAt`. A goal whose
 * next action comes after the next kill is counted under that kill instead (`superseded`); one
 * with no action at all under `none` (it is stuck). A lease a killed host left on the goal earns
 * no exemption: a live host waits it out within the bound, and the killed host's successor is
 * the same holder (docs/forks-and-restarts.md). Times in ms; `late` lists the actions later than
 * the bound; `hostN` and `hostMaxMs` are the host restarts' own.
 */
export function timeToAct(timeline, created, proxy, t0) {
  const answered = (r) => r.status !== null && r.status < 300
  const actions = new Map()
  for (const r of [...proxy.sends, ...proxy.writes]) {
    if (!answered(r)) continue
    if (!actions.has(r.sessionId)) actions.set(r.sessionId, [])
    actions.get(r.sessionId).push(r.at - t0)
  }
  for (const list of actions.values()) list.sort((a, b) => a - b)
  const settledAt = new Map()
  for (const w of proxy.writes) {
    if (answered(w) && w.goalStatus !== 'active') settledAt.set(w.sessionId, Math.min(settledAt.get(w.sessionId) ?? Infinity, w.at - t0))
  }
  const times = []
  const hostTimes = []
  const late = []
  let superseded = 0
  let none = 0
  timeline.forEach((restart, i) => {
    const nextKill = timeline[i + 1]?.killedAt ?? Infinity
    for (const goal of created) {
      if (goal.createdAt >= restart.killedAt || (settledAt.get(goal.sessionId) ?? Infinity) < restart.killedAt) continue
      const next = (actions.get(goal.sessionId) ?? []).find((at) => at >= restart.killedAt)
      if (next === undefined) none++
      else if (next > nextKill) superseded++
      else {
        const ms = Math.max(0, next - restart.upAt)
        times.push(ms)
        if (restart.target !== 'opencode') hostTimes.push(ms)
        if (ms > SILENCE_BOUND_MS) late.push({ goal: goal.goal, sessionId: goal.sessionId, target: restart.target, killedAt: restart.killedAt, upAt: restart.upAt, actedAt: next, ms })
      }
    }
  })
  times.sort((a, b) => a - b)
  return {
    n: times.length,
    p50Ms: times.length ? times[Math.floor((times.length - 1) / 2)] : null,
    maxMs: times.length ? times.at(-1) : null,
    hostN: hostTimes.length,
    hostMaxMs: hostTimes.length ? Math.max(...hostTimes) : null,
    overBound: late.length,
    superseded,
    none,
    late,
  }
}

/** The seeds' rows as RELIABILITY.md's table. */
export function table(rows) {
  const lines = [
    '| seed | goals | kills (OpenCode / host) | settled complete | settled otherwise | stuck | time to act after a restart (p50 / max; pairs) | of which after a host restart (max; pairs) | continuations posted (wire) | same-id re-posts (wire; after an answer) | different ids after one tail | checks run | checks run twice | writes lost | s |',
    '|---:|---:|---|---:|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|',
  ]
  const seconds = (ms) => (ms === null ? '-' : `${(ms / 1000).toFixed(1)} s`)
  for (const r of rows) {
    const acted = `${seconds(r.timeToAct.p50Ms)} / ${seconds(r.timeToAct.maxMs)}; ${r.timeToAct.n}`
    const afterHost = `${seconds(r.timeToAct.hostMaxMs)}; ${r.timeToAct.hostN}`
    lines.push(`| ${r.seed} | ${r.goals} | ${r.kills.opencode} / ${r.kills.host} | ${r.complete} | ${Object.entries(r.otherwise).map(([why, n]) => `${n} ${why}`).join('; ') || 0} | ${r.stuck} | ${acted} | ${afterHost} | ${r.continuationPosts} | ${r.sameIdReposts}; ${r.repostsAfterAnswer} | ${r.differentIdsOneTail} | ${r.checkRuns} | ${r.checkRunsTwice} | ${r.writesLost} | ${r.seconds} |`)
  }
  return lines.join('\n')
}
