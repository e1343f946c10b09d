// The objective store and its routes, against the built addon and a real HTTP server.
import { afterEach, describe, expect, it } from 'vitest'
import fs from 'node:fs'
import path from 'node:path'
import { pkg, tempDataDir, tempDir } from './helpers.mjs'
import { goalFiles, objectivePath, startMiniApp } from './control-helpers.mjs'

const { writeObjective, readObjective, deleteObjective, handleObjectiveRequest, registerSessionGoalRoutes, SessionGoalError } = pkg

const cleanups = []
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()()
})

const HOSTILE_IDS = ['../../etc/passwd', '..', 'ses/../../x', 'a b c d', 'ses.md', 'abc', 'x'.repeat(129), 'sés_abcd', '', 'ses_ok\u0000']

describe('objective store', () => {
  it('writes atomically, trims and clamps to 5000 chars, reads and deletes', async () => {
    const dataDir = tempDataDir()
    const long = `  ${'é'.repeat(5200)}  `
    const written = await writeObjective('ses_store1', long, { dataDir })
    expect(written.content).toHaveLength(5000)
    expect(fs.readFileSync(objectivePath(dataDir, 'ses_store1'), 'utf8')).toBe(written.content)
    expect(await readObjective('ses_store1', { dataDir })).toBe(written.content)
    expect(goalFiles(dataDir)).toEqual(['ses_store1.md'])

    await writeObjective('ses_store1', 'second version', { settings: { dataDir } })
    expect(await readObjective('ses_store1', { dataDir })).toBe('second version')

    expect(await deleteObjective('ses_store1', { dataDir })).toBe(true)
    expect(await deleteObjective('ses_store1', { dataDir })).toBe(false)
    expect(await readObjective('ses_store1', { dataDir })).toBeNull()
  })

  it('refuses hostile ids and empty content with statusCode 400, writing nothing anywhere', async () => {
    const root = tempDir('goal-hostile-')
    const dataDir = path.join(root, 'data')
    fs.mkdirSync(dataDir)
    for (const id of HOSTILE_IDS) {
      const error = await writeObjective(id, 'payload', { dataDir }).catch((e) => e)
      expect(error, id).toBeInstanceOf(SessionGoalError)
      expect(error.statusCode, id).toBe(400)
      expect(error.message).toBe('invalid session id')
      expect(error.code, id).toBe('invalidInput')
      expect((await readObjective(id, { dataDir }).catch((e) => e)).code, id).toBe('invalidInput')
      expect((await deleteObjective(id, { dataDir }).catch((e) => e)).code, id).toBe('invalidInput')
    }
    for (const empty of ['', '   \n\t ']) {
      const error = await writeObjective('ses_empty1', empty, { dataDir }).catch((e) => e)
      expect(error.statusCode).toBe(400)
    }
    const notText = await writeObjective('ses_empty1', { content: 'x' }, { dataDir }).catch((e) => e)
    expect(notText.statusCode).toBe(400)
    // Nothing was created: not under the data dir, not beside it.
    expect(fs.readdirSync(dataDir)).toEqual([])
    expect(fs.readdirSync(root)).toEqual(['data'])
  })

  it('reports a file-system failure as statusCode 500', async () => {
    const dataDir = tempDataDir()
    fs.writeFileSync(path.join(dataDir, 'goals'), 'a file where the goals directory belongs')
    const error = await writeObjective('ses_fsfail', 'objective', { dataDir }).catch((e) => e)
    expect(error).toBeInstanceOf(SessionGoalError)
    expect(error.statusCode).toBe(500)
  })

  it('defaults to OPENCHAMBER_DATA_DIR, read at call time', async () => {
    const dataDir = tempDataDir()
    const previous = process.env.OPENCHAMBER_DATA_DIR
    process.env.OPENCHAMBER_DATA_DIR = dataDir
    cleanups.push(() => {
      if (previous === undefined) delete process.env.OPENCHAMBER_DATA_DIR
      else process.env.OPENCHAMBER_DATA_DIR = previous
    })
    await writeObjective('ses_envdir', 'from the environment')
    expect(fs.readFileSync(objectivePath(dataDir, 'ses_envdir'), 'utf8')).toBe('from the environment')
  })
})

describe('handleObjectiveRequest (no framework)', () => {
  it('answers PUT, GET, DELETE and unknown methods', async () => {
    const dataDir = tempDataDir()
    const options = { dataDir }
    expect(await handleObjectiveRequest({ method: 'GET', sessionId: 'ses_plain1' }, options)).toEqual({ status: 404, body: { error: 'objective not found' } })
    expect(await handleObjectiveRequest({ method: 'PUT', sessionId: 'ses_plain1', body: { content: ' ship ' } }, options)).toEqual({ status: 200, body: { ok: true } })
    expect(await handleObjectiveRequest({ method: 'get', sessionId: 'ses_plain1' }, options)).toEqual({ status: 200, body: { content: 'ship' } })
    expect(await handleObjectiveRequest({ method: 'PUT', sessionId: 'ses_plain1', body: { content: 42 } }, options)).toMatchObject({ status: 400 })
    expect(await handleObjectiveRequest({ method: 'PUT', sessionId: 'ses_plain1', body: 'content' }, options)).toMatchObject({ status: 400 })
    expect(await handleObjectiveRequest({ method: 'PUT', sessionId: '../x', body: { content: 'x' } }, options)).toEqual({ status: 400, body: { error: 'invalid session id' } })
    expect(await handleObjectiveRequest({ method: 'POST', sessionId: 'ses_plain1' }, options)).toMatchObject({ status: 405 })
    expect(await handleObjectiveRequest({ method: 'DELETE', sessionId: 'ses_plain1' }, options)).toEqual({ status: 200, body: { ok: true } })
    expect(await handleObjectiveRequest({ method: 'DELETE', sessionId: '../x' }, options)).toEqual({ status: 400, body: { error: 'invalid session id' } })
    expect(goalFiles(dataDir)).toEqual([])
  })

  it('logs 5xx failures through the given logger, without the content', async () => {
    const dataDir = tempDataDir()
    fs.writeFileSync(path.join(dataDir, 'goals'), 'blocker')
    const lines = []
    const answer = await handleObjectiveRequest(
      { method: 'PUT', sessionId: 'ses_logged', body: { content: 'secret objective text' } },
      { dataDir, logger: (level, message) => lines.push([level, message]) },
    )
    expect(answer.status).toBe(500)
    expect(lines).toHaveLength(1)
    expect(lines[0][1]).not.toContain('secret objective text')
  })
})

describe('registerSessionGoalRoutes over real HTTP', () => {
  for (const json of [false, true]) {
    it(`serves the objective routes (${json ? 'with' : 'without'} a JSON body parser)`, async () => {
      const dataDir = tempDataDir()
      const server = await startMiniApp({ json })
      cleanups.push(server.close)
      expect(registerSessionGoalRoutes(server.app, { dataDir })).toBe(server.app)
      const url = (id) => `${server.url}/api/goals/objective/${id}`
      const put = (id, body, raw) =>
        fetch(url(id), { method: 'PUT', headers: { 'content-type': 'application/json' }, body: raw ?? JSON.stringify(body) })

      let res = await fetch(url('ses_route1'))
      expect(res.status).toBe(404)
      expect(await res.json()).toEqual({ error: 'objective not found' })

      res = await put('ses_route1', { content: 'Make the importer handle CSV' })
      expect(res.status).toBe(200)
      expect(await res.json()).toEqual({ ok: true })
      res = await fetch(url('ses_route1'))
      expect(await res.json()).toEqual({ content: 'Make the importer handle CSV' })

      // Over 5000 chars is clamped, like the reference (not an error).
      res = await put('ses_route2', { content: 'y'.repeat(7000) })
      expect(res.status).toBe(200)
      expect(fs.readFileSync(objectivePath(dataDir, 'ses_route2'), 'utf8')).toHaveLength(5000)

      // Path traversal through an encoded id: refused, nothing written.
      res = await put('..%2F..%2Fescape', { content: 'pwned' })
      expect(res.status).toBe(400)
      expect(await res.json()).toEqual({ error: 'invalid session id' })
      res = await fetch(url('..%2F..%2Fescape'), { method: 'DELETE' })
      expect(res.status).toBe(400)

      res = await put('ses_route3', undefined, '{not json')
      expect(res.status).toBe(400)
      res = await put('ses_route3', { text: 'wrong field' })
      expect(res.status).toBe(400)

      res = await fetch(url('ses_route1'), { method: 'DELETE' })
      expect(await res.json()).toEqual({ ok: true })
      res = await fetch(url('ses_route1'))
      expect(res.status).toBe(404)
      expect(goalFiles(dataDir)).toEqual(['ses_route2.md'])
      expect(fs.readdirSync(path.dirname(dataDir)).some((name) => name === 'escape' || name === 'escape.md')).toBe(false)
    })
  }

  it('refuses a request body over 1 MB with 413 and writes nothing', async () => {
    const dataDir = tempDataDir()
    const server = await startMiniApp({ json: false })
    cleanups.push(server.close)
    registerSessionGoalRoutes(server.app, { dataDir })
    const res = await fetch(`${server.url}/api/goals/objective/ses_huge01`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ content: 'z'.repeat(1_200_000) }),
    })
    expect(res.status).toBe(413)
    expect(await res.json()).toEqual({ error: 'request body too large' })
    expect(goalFiles(dataDir)).toEqual([])
  })

  it('rejects an app without the route methods', () => {
    expect(() => registerSessionGoalRoutes({ get() {} })).toThrow(pkg.SessionGoalError)
  })
})
