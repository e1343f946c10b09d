// Turns OpenCode event payloads into one readable line per goal transition: a goal set, an agent
// turn finished, a continuation with the auditor's note, a pause, a resume, the final status.
// Shared by examples/demo.js and examples/attach.js. It only reads what the runtime writes into
// `metadata.openchamber.goal`, so what it prints is what a UI would show.
'use strict'

const number = (n) => Math.round(Number(n) || 0).toLocaleString('en-US')

function tokensText(goal) {
  const used = `${number(goal.tokensUsed)} tokens`
  return goal.tokenBudget ? `${used} of ${number(goal.tokenBudget)} budget` : `${used} (no budget)`
}

function excerpt(text, max = 90) {
  const flat = String(text ?? '').replace(/\s+/g, ' ').trim()
  return flat.length > max ? flat.slice(0, max - 1) + '…' : flat
}

const FINAL = { complete: 'COMPLETE', blocked: 'BLOCKED', budgetLimited: 'BUDGET LIMITED' }

/**
 * @param {{ print: (line: string, sessionId: string) => void, maxAutoTurns?: number,
 *           onSettled?: (sessionId: string, goal: object) => void }} options
 */
function createGoalProgress(options) {
  const maxTurns = options.maxAutoTurns ?? 20
  const goals = new Map() // sessionId -> last goal seen
  const finishedTurns = new Set() // assistant message ids already reported

  const onGoal = (sessionId, goal) => {
    const previous = goals.get(sessionId)
    if (!goal || typeof goal !== 'object') {
      if (previous) options.print('goal cleared', sessionId)
      goals.delete(sessionId)
      return
    }
    goals.set(sessionId, goal)
    if (!previous || previous.id !== goal.id) {
      const budget = goal.tokenBudget ? `budget ${number(goal.tokenBudget)} tokens` : 'no token budget'
      const objective = goal.objectiveFile ? '(objective in a file)' : `"${excerpt(goal.objective)}"`
      options.print(`goal ${goal.status}: ${objective}, ${budget}`, sessionId)
      return
    }
    if (goal.status !== previous.status) {
      if (FINAL[goal.status]) {
        const note = goal.note ? ` — auditor: "${excerpt(goal.note, 120)}"` : ''
        options.print(`goal ${FINAL[goal.status]}: ${goal.statusReason || 'settled'}${note} (${goal.turnsUsed} continuations, ${tokensText(goal)})`, sessionId)
        options.onSettled?.(sessionId, goal)
      } else if (goal.status === 'paused') {
        // A pause the person asked for in the chat quotes them, and ends the run like a settle:
        // nothing moves until they resume it.
        const asked = goal.cause?.code === 'userAskedToPause'
        const quoted = asked && goal.cause.detail ? ` — they wrote: "${excerpt(goal.cause.detail, 120)}"` : ''
        options.print(`goal paused: ${goal.statusReason || 'by the user'}${quoted}`, sessionId)
        if (asked) options.onSettled?.(sessionId, goal)
      } else if (goal.status === 'active') {
        options.print(`goal ${goal.statusReason === 'resumed' ? 'resumed' : 'active again'}`, sessionId)
      }
      return
    }
    if (goal.status === 'active' && goal.turnsUsed > previous.turnsUsed) {
      const note = goal.note ? `auditor: "${excerpt(goal.note, 120)}"` : 'unaudited'
      options.print(`continuation ${goal.turnsUsed}/${maxTurns} sent — ${note} · ${tokensText(goal)}`, sessionId)
    }
  }

  const onAssistant = (sessionId, info) => {
    if (!info?.id || finishedTurns.has(info.id) || !(info.time?.completed > 0)) return
    // The runtime's own acceptance-check runs (their user message id carries the zCHK mark) are
    // no agent turn.
    if (/^msg_[0-9a-f]{12}zCHK/.test(info.parentID ?? '')) return
    finishedTurns.add(info.id)
    if (finishedTurns.size > 5000) finishedTurns.clear()
    if (info.error?.name === 'MessageAbortedError') {
      options.print('agent turn aborted', sessionId)
      return
    }
    const tokens = info.tokens ?? {}
    const total = (tokens.input ?? 0) + (tokens.output ?? 0) + (tokens.reasoning ?? 0) + (tokens.cache?.read ?? 0) + (tokens.cache?.write ?? 0)
    const failure = info.error ? `, error ${info.error.name ?? 'unknown'}` : ''
    options.print(`agent turn finished (${number(total)} tokens, finish ${info.finish ?? 'none'}${failure})`, sessionId)
  }

  return {
    /** Feeds one payload (the global envelope already unwrapped). */
    onPayload(payload) {
      const properties = payload?.properties
      if (payload?.type === 'session.updated' && properties?.info?.id && !properties.info.parentID) {
        onGoal(properties.info.id, properties.info.metadata?.openchamber?.goal)
      } else if (payload?.type === 'message.updated' && properties?.info?.role === 'assistant') {
        const sessionId = properties.info.sessionID ?? properties.sessionID
        if (goals.has(sessionId)) onAssistant(sessionId, properties.info)
      }
    },
    /** The last goal seen for a session. */
    goalOf: (sessionId) => goals.get(sessionId),
  }
}

/** A clock prefix: seconds since `start`. */
function elapsed(start) {
  return `[${((Date.now() - start) / 1000).toFixed(1).padStart(5)}s]`
}

module.exports = { createGoalProgress, elapsed }
