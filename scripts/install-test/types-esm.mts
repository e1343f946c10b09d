// Type check of the installed package from ESM (compiled with --module nodenext, not run).
import { buildGoalIntroText, createEventFollower, createSessionGoal, createSessionGoalRuntime, SessionGoalError } from 'session-goal-runtime'
import type { EventFollower, EventStreamStatus, SessionGoalRuntimeOptions } from 'session-goal-runtime'

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
// The event follower: the nested connection, a host's payloads, its status.
const follower: EventFollower = createEventFollower({
  openCode: { baseUrl: 'http://127.0.0.1:4096' },
  deliver: false,
  firstRetryMs: 250,
  onPayload: (payload: Record<string, any>, directory: string) => runtime.processPayload(payload, directory),
  onStatus: (status: EventStreamStatus) => (status.state === 'disconnected' ? status.retryInMs : 0),
})
const running: boolean = follower.isRunning()
follower.close()
export const checks = [pending, SessionGoalError, running]
