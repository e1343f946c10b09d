// What explain and history return is what index.d.ts says: the binding builds typed objects
// (GoalExplanation, GoalHistoryRecord), so every key of a real answer is a declared member and
// every required member is there. Against the built addon and the mock OpenCode.
import { afterEach, describe, expect, it } from 'vitest'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'
import { pkg, scriptedAuditor, sessionWithReply, setup, waitFor } from './helpers.mjs'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')

let env
afterEach(async () => {
  await env?.cleanup()
  env = undefined
})

/** The members of an interface of index.d.ts: name → optional. */
function declared(name) {
  const file = ts.createSourceFile('index.d.ts', fs.readFileSync(path.join(root, 'index.d.ts'), 'utf8'), ts.ScriptTarget.Latest)
  const node = file.statements.find((s) => ts.isInterfaceDeclaration(s) && s.name.text === name)
  if (!node) throw new Error(`index.d.ts declares no ${name}`)
  return new Map(node.members.map((m) => [m.name.text, Boolean(m.questionToken)]))
}

function expectShape(value, name) {
  const members = declared(name)
  for (const key of Object.keys(value)) expect(members.has(key), `${name}.${key} is not declared`).toBe(true)
  for (const [key, optional] of members) if (!optional) expect(value, `${name}.${key}`).toHaveProperty(key)
}

describe('typed answers', () => {
  it('explain (runtime and control) and history give exactly the declared members', async () => {
    const auditor = scriptedAuditor([{ verdict: 'continue', note: 'not yet', evidence: [], missing: ['tests'] }])
    env = await setup({ auditor })
    const session = sessionWithReply(env.mock, { goal: { tokenBudget: 50000 } })
    env.mock.scriptReplies(session.id, [{ text: 'working on it', completed: false }])
    env.mock.setStatus(session.id, 'idle')
    await waitFor(async () => (await env.runtime.history(session.id)).length >= 1, 8000)

    const [record] = await env.runtime.history(session.id)
    expect(record).toMatchObject({ verdict: 'continue', action: 'continue', tail: expect.any(String) })
    expectShape(record, 'GoalHistoryRecord')

    const explained = await env.runtime.explain(session.id, '/tmp/project')
    expect(explained).toMatchObject({ sessionId: session.id, status: 'active', lastAudit: expect.objectContaining({ verdict: 'continue' }) })
    expectShape(explained, 'GoalExplanation')

    const control = pkg.createSessionGoalControl({ openCode: { baseUrl: env.mock.url }, dataDir: env.dataDir })
    const viaControl = await control.explain(session.id, '/tmp/project')
    expectShape(viaControl, 'GoalExplanation')
    expect(viaControl.goalId).toBe(explained.goalId)
    const trail = await control.history(session.id)
    expect(trail).toHaveLength((await env.runtime.history(session.id)).length)
    for (const line of trail) expectShape(line, 'GoalHistoryRecord')
  })

  it('explain of a session without a goal: nulls where a part is unknown, still the declared shape', async () => {
    env = await setup({ forward: false })
    const plain = env.mock.createSession({ directory: '/tmp/project', metadata: {} })
    const explained = await env.runtime.explain(plain.id, '/tmp/project')
    expect(explained).toMatchObject({ sessionId: plain.id, status: null, findings: [expect.objectContaining({ code: 'noGoal' })] })
    expectShape(explained, 'GoalExplanation')
  })
})
