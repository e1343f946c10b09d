// A copy keeps its objective: a goal written by OpenChamber's UI reads its objective from a file
// named after its session (`<dataDir>/goals/<sessionId>.md`), and a fork's copy has no such file.
// Adopting the copy paused copies the source's file to the copy's path, so resuming the copy
// drives it; when the source's file is gone the copy stays paused and explain says so. Against
// the mock OpenCode over real HTTP.
import fs from 'node:fs'
import { afterEach, describe, expect, it } from 'vitest'
import { setup, scriptedAuditor, sessionWithReply, goalOf, waitFor, sleep, pkg } from './helpers.mjs'
import { objectivePath } from './control-helpers.mjs'

let env
afterEach(async () => {
  await env?.cleanup()
  env = undefined
})

const continueVerdict = { verdict: 'continue', note: 'more to do' }
const OBJECTIVE = 'Make the CSV importer accept quoted newlines'

/** A session whose active goal keeps its objective in the file only, as OpenChamber's UI writes it. */
function fileBackedSession(mock, dataDir, { withFile = true } = {}) {
  const session = sessionWithReply(mock, { goal: { objective: '', objectiveFile: true } })
  const goal = { ...goalOf(mock, session.id), sessionId: session.id }
  mock.setMetadata(session.id, { openchamber: { goal } })
  if (withFile) {
    fs.mkdirSync(`${dataDir}/goals`, { recursive: true })
    fs.writeFileSync(objectivePath(dataDir, session.id), OBJECTIVE + '\n')
  }
  return session
}

const control = (env) => pkg.createSessionGoalControl({ openCode: { baseUrl: env.mock.url }, dataDir: env.dataDir })

describe("a fork's copy keeps its objective", () => {
  it('adoption copies the objective file; resuming the copy drives it toward that objective', async () => {
    const auditor = scriptedAuditor([continueVerdict])
    env = await setup({ auditor })
    const { mock, dataDir } = env
    const source = fileBackedSession(mock, dataDir)
    const fork = mock.forkSession(source.id)
    expect(fs.existsSync(objectivePath(dataDir, fork.id))).toBe(false)
    mock.setStatus(fork.id, 'idle')
    await waitFor(() => goalOf(mock, fork.id)?.status === 'paused', 5000)
    expect(goalOf(mock, fork.id)).toMatchObject({ statusReason: 'copied from another session', objectiveFile: true, cause: { code: 'inherited', detail: source.id } })
    // Copied in the same step as the adoption.
    expect(fs.readFileSync(objectivePath(dataDir, fork.id), 'utf8').trim()).toBe(OBJECTIVE)
    expect(mock.sends(fork.id)).toHaveLength(0)
    const report = await env.runtime.explain(fork.id)
    expect(report.findings.map((f) => f.code)).not.toContain('objectiveFileMissing')

    // Resume the copy, as the cause's fix says: it is driven, with the copied objective.
    const resumed = await control(env).resumeGoal({ sessionId: fork.id })
    expect(resumed.changed).toBe(true)
    await waitFor(() => mock.sends(fork.id).length === 1, 5000)
    const sent = JSON.stringify(mock.sends(fork.id)[0].body)
    expect(sent).toContain(OBJECTIVE)
    expect(goalOf(mock, fork.id)).toMatchObject({ status: 'active', sessionId: fork.id, turnsUsed: 1 })
  })

  it('when the source file is gone the copy stays paused and explain reports its objective file missing', async () => {
    const auditor = scriptedAuditor([continueVerdict])
    env = await setup({ auditor })
    const { mock, dataDir } = env
    const source = fileBackedSession(mock, dataDir, { withFile: false })
    const fork = mock.forkSession(source.id)
    mock.setStatus(fork.id, 'idle')
    await waitFor(() => goalOf(mock, fork.id)?.status === 'paused', 5000)
    await sleep(200)
    expect(goalOf(mock, fork.id)).toMatchObject({ status: 'paused', statusReason: 'copied from another session' })
    expect(fs.existsSync(objectivePath(dataDir, fork.id))).toBe(false)
    expect(mock.sends(fork.id)).toHaveLength(0)
    const report = await env.runtime.explain(fork.id)
    const missing = report.findings.find((f) => f.code === 'objectiveFileMissing')
    expect(missing.message).toContain(`goals/${fork.id}.md cannot be read`)
  })

  it("forkSession without a goal copies the objective file in the write that pauses the fork's copy", async () => {
    env = await setup({ forward: false })
    const { mock, dataDir } = env
    const source = fileBackedSession(mock, dataDir)
    const result = await control(env).forkSession({ sessionId: source.id, prompt: 'Try another route' })
    expect(goalOf(mock, result.sessionId)).toMatchObject({ status: 'paused', cause: { code: 'inherited', detail: source.id } })
    expect(fs.readFileSync(objectivePath(dataDir, result.sessionId), 'utf8').trim()).toBe(OBJECTIVE)
    // The source's own file is untouched.
    expect(fs.readFileSync(objectivePath(dataDir, source.id), 'utf8').trim()).toBe(OBJECTIVE)
  })
})
