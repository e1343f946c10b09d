// Type check of the installed package from ESM (compiled with --module nodenext, not run).
import { buildGoalIntroText, createSessionGoal, createSessionGoalRuntime, SessionGoalError } from 'session-goal-runtime'
import type { SessionGoalRuntimeOptions } from 'session-goal-runtime'

const options: SessionGoalRuntimeOptions = { openCode: { baseUrl: 'http://127.0.0.1:4096' }, idleQuietMs: 15000 }
const runtime = createSessionGoalRuntime(options)
runtime.processPayload({ type: 'session.status' }, '/tmp')
const intro: string = buildGoalIntroText(1000)
const pending: Promise<unknown> = createSessionGoal({
  baseUrl: 'http://127.0.0.1:4096',
  sessionID: 'ses_1',
  objective: intro,
  onWarning: (message: string, error: Error) => void [message, error.message],
})
export const checks = [pending, SessionGoalError]
