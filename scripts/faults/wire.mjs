// "Never twice", counted at the wire: the POSTs the mock received on its send routes (see
// `mock.sends()`), before OpenCode's de-duplication by messageID could hide a second post.
//
// Per tail (the assistant reply a post answers), once the server has taken one post as a new
// message, every further post is a re-post:
//   - the same messageID, while no earlier post of that id had been answered cleanly (2xx, no
//     fault but a delay, the whole answer delivered): the runtime could not know the first one
//     landed, and posting the same id again is the design (the server keeps one message). Counted
//     as `reposted`. A case may widen this with `allowedBecause` (a second host that derives the
//     same id): then every same-id re-post is counted as `reposted`.
//   - anything else (a re-post after a clean answer, or under another id): `postedTwice`, which
//     fails the case.

/** Whether the client had the whole, successful answer: nothing about the post was unclear. */
export function answeredCleanly(post) {
  const a = post.answered
  return Boolean(a && a.status >= 200 && a.status < 300 && (!post.fault || post.fault.kind === 'delay'))
}

const idOf = (post) => (typeof post.body?.messageID === 'string' ? post.body.messageID : null)

/**
 * Counts the re-posts among `sends` (request log entries, oldest first). `admitted`: the
 * server's records of the posts it took as new messages ({receivedAt, body}); `tailAt(at)`: the
 * tail a post sent at `at` answers. Returns {posts, reposted, postedTwice, unexpected[]}.
 */
export function wireReport({ sends, admitted, tailAt, allowedBecause }) {
  const tookAsNew = (post) => admitted.some((p) => p.receivedAt === post.at && (p.body?.messageID ?? null) === idOf(post))
  const byTail = new Map()
  for (const post of sends) {
    const tail = tailAt(post.at)
    if (!byTail.has(tail)) byTail.set(tail, [])
    byTail.get(tail).push(post)
  }
  let reposted = 0
  let postedTwice = 0
  const unexpected = []
  for (const [tail, posts] of byTail) {
    let taken = null
    for (const post of posts) {
      if (!taken) {
        if (tookAsNew(post)) taken = post
        continue
      }
      const id = idOf(post)
      const sameId = id !== null && id === idOf(taken)
      const cleanBefore = posts.some((p) => p !== post && idOf(p) === id && answeredCleanly(p) && p.answered.at <= post.at)
      if (sameId && (!cleanBefore || allowedBecause)) {
        reposted += 1
        continue
      }
      postedTwice += 1
      unexpected.push(`tail …${String(tail).slice(-6)}: ${sameId ? 'the same id after a clean answer' : 'another id ' + (id ?? '(none)')}`)
    }
  }
  return { posts: sends.length, reposted, postedTwice, unexpected }
}
