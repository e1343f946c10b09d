// A setting added by the recipe in docs/api.md alone: set, stored, returned, edited, cleared,
// refused by name, and an unreadable stored value stops the goal with the guard's fix.
import { afterEach, describe, expect, it } from 'vitest'
import { pkg, tempDataDir } from './helpers.mjs'
import { startMockOpenCode } from './mock/opencode.mjs'

const { createSessionGoalControl } = pkg

const cleanups = []
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()()
})

describe('priority (a setting added by the recipe)', () => {
  it('is set, returned, edited, cleared and refused by name', async () => {
    const mock = await startMockOpenCode({ heartbeatMs: 60_000 })
    cleanups.push(() => mock.close())
    const control = createSessionGoalControl({ openCode: { baseUrl: mock.url }, dataDir: tempDataDir() })
    const session = mock.createSession({ directory: '/tmp/project' })
    const stored = () => mock.getSession(session.id).metadata.openchamber.goal
    const created = await control.createSessionGoal({ sessionId: session.id, directory: '/tmp/project', objective: 'Ship it', priority: 2 })
    expect(created.goal.priority).toBe(2)
    expect(stored().priority).toBe(2)
    const edited = await control.editGoal({ sessionId: session.id, priority: 4 })
    expect(edited.goal.priority).toBe(4)
    const refused = await control.editGoal({ sessionId: session.id, priority: 9 }).catch((e) => e)
    expect([refused.code, refused.field, refused.message]).toEqual(['invalidInput', 'priority', 'priority: must be a whole number from 1 to 5'])
    const nested = await control.sendPrompt({ sessionId: session.id, prompt: 'x', goal: { priority: 0 } }).catch((e) => e)
    expect([nested.code, nested.field]).toEqual(['invalidInput', 'goal.priority'])
    const cleared = await control.editGoal({ sessionId: session.id, clearPriority: true })
    expect(cleared.goal.priority).toBeUndefined()
    expect(stored().priority).toBeUndefined()
  })
})
