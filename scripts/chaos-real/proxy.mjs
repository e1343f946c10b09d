// The counting proxy of scripts/chaos-real.mjs: every host reaches OpenCode through it, so posts
// and goal writes are counted at the wire, and it plays a starting OpenCode for the hanging host.
import http from 'node:http'
import { CONTINUATION_PREFIX } from './figures.mjs'

/**
 * A proxy to OpenCode that records every send: {sessionId, route, messageID, continuation,
 * status} (status: the answer's HTTP status, or null when none came), and every write of a
 * goal: {sessionId, goalStatus, leaseUntil, status, at} (a PATCH of the session carrying
 * `metadata.openchamber.goal`). While OpenCode is down it resets the connection, as OpenCode's
 * own port would. It listens on two ports: `url`, and `hangUrl` for the hanging host, where an
 * event-stream request that arrives while `down` is set (OpenCode killed, not yet answering its
 * health check) is accepted and never answered, as a starting OpenCode does; it stays open
 * until its client gives up (counted in `held`). `loseSend(sessionId)` makes the next send to that
 * session vanish on the way: recorded (`lost: true`), never forwarded, never answered, as a post
 * still in flight when its host is killed.
 */
export function startProxy(targetUrl) {
  const sends = []
  const writes = []
  const sockets = new Set()
  const held = { count: 0, open: new Set() }
  const state = { down: false }
  const losing = new Set()
  const handler = (hanging) => (req, res) => {
    if (hanging && state.down && req.method === 'GET' && /^\/global\/event(\?|$)/.test(req.url)) {
      held.count++
      held.open.add(res)
      res.on('close', () => held.open.delete(res))
      return
    }
    const chunks = []
    req.on('data', (c) => chunks.push(c))
    req.on('end', () => {
      const body = Buffer.concat(chunks)
      const send = /^\/session\/([^/?]+)\/(prompt_async|shell)(\?|$)/.exec(req.url)
      const patch = /^\/session\/([^/?]+)(\?|$)/.exec(req.url)
      const parsed = () => {
        try {
          return JSON.parse(body.toString('utf8') || '{}')
        } catch {
          return {}
        }
      }
      let record = null
      if (req.method === 'POST' && send) {
        const sent = parsed()
        const text = (sent.parts ?? []).map((p) => p?.text ?? '').join('\n')
        record = { sessionId: decodeURIComponent(send[1]), route: send[2], messageID: sent.messageID ?? null, continuation: text.startsWith(CONTINUATION_PREFIX), status: null, at: Date.now() }
        sends.push(record)
        if (losing.delete(record.sessionId)) {
          record.lost = true
          held.open.add(res)
          res.on('close', () => held.open.delete(res))
          return
        }
      } else if (req.method === 'PATCH' && patch) {
        const goal = parsed().metadata?.openchamber?.goal
        if (goal && typeof goal === 'object') {
          const leaseUntil = typeof goal.lease?.expiresAt === 'number' ? goal.lease.expiresAt : null
          record = { sessionId: decodeURIComponent(patch[1]), goalStatus: goal.status ?? null, leaseUntil, status: null, at: Date.now() }
          writes.push(record)
        }
      }
      const upstream = http.request(targetUrl + req.url, { method: req.method, headers: req.headers }, (answer) => {
        if (record) record.status = answer.statusCode
        res.writeHead(answer.statusCode, answer.headers)
        answer.pipe(res)
        answer.on('error', () => res.destroy())
      })
      upstream.on('error', () => req.socket.destroy())
      res.on('close', () => upstream.destroy())
      upstream.end(body)
    })
  }
  const listen = (server) => {
    server.on('connection', (s) => {
      sockets.add(s)
      s.on('close', () => sockets.delete(s))
    })
    return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${server.address().port}`)))
  }
  const servers = [http.createServer(handler(false)), http.createServer(handler(true))]
  return Promise.all(servers.map(listen)).then(([url, hangUrl]) => ({
    url,
    hangUrl,
    sends,
    writes,
    held,
    /** The next send (a prompt or a shell run) to `sessionId` is lost on the way. */
    loseSend(sessionId) {
      losing.add(sessionId)
    },
    /** OpenCode is down or starting (true) or answers again (false). */
    setDown(down) {
      state.down = down
    },
    close: () => {
      for (const res of held.open) res.destroy()
      for (const s of sockets) s.destroy()
      return Promise.all(servers.map((server) => new Promise((done) => server.close(() => done()))))
    },
  }))
}
