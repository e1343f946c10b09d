// The table of cause codes in docs/causes.md, written from the one place they are declared:
// the `cause_codes!` lines of crates/goal-core/src/record/cause.rs (each code's doc comment, wire
// name and fix row) and its `fix_actions!` lines (each action's wire name). A new code is one
// line there; this script (or the build, for index.d.ts) carries it to the docs.
//
//   node scripts/cause-table.mjs          exit 1 when docs/causes.md's table is not current
//   node scripts/cause-table.mjs --write  rewrite the table between its markers
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const SOURCE = path.join(ROOT, 'crates', 'goal-core', 'src', 'record', 'cause.rs')
const DOC = path.join(ROOT, 'docs', 'causes.md')
const BEGIN = '<!-- cause-table:begin (written by node scripts/cause-table.mjs --write from crates/goal-core/src/record/cause.rs) -->'
const END = '<!-- cause-table:end -->'

/** The lines of the invocation `<list>! { … }`, without its braces. */
function invocation(source, list) {
  const lines = source.split('\n')
  const start = lines.indexOf(`${list}! {`)
  if (start < 0) throw new Error(`${SOURCE}: no \`${list}! {\` block`)
  const body = []
  for (const line of lines.slice(start + 1)) {
    if (line === '}') return body
    body.push(line)
  }
  throw new Error(`${SOURCE}: \`${list}!\` is not closed`)
}

/** The string literals of a piece of Rust, in order (escapes resolved). */
function literals(text) {
  return [...text.matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((m) => m[1].replace(/\\(.)/g, '$1'))
}

/** Each entry `{variant, wire, doc, row}` of a list: doc comments, then `Variant = "wire"…`. */
function entries(lines) {
  const found = []
  let doc = []
  for (const line of lines) {
    const text = line.trim()
    const entry = text.match(/^([A-Z][A-Za-z0-9]*) = "([A-Za-z]+)"(.*)$/)
    if (text.startsWith('///')) {
      if (found.length && found.at(-1).open) found.at(-1).open = false
      doc.push(text.slice(3).trim())
    } else if (entry) {
      found.push({ variant: entry[1], wire: entry[2], doc: doc.join(' '), row: entry[3], open: true })
      doc = []
    } else if (found.length && found.at(-1).open && !text.startsWith('//')) {
      found.at(-1).row += ` ${text}`
    }
  }
  return found
}

/** The markdown table of every cause code: what it means, its fix, what `doctor --fix` applies. */
export function causeTable(source = fs.readFileSync(SOURCE, 'utf8')) {
  const actions = new Map(entries(invocation(source, 'fix_actions')).map((a) => [a.variant, a.wire]))
  const rows = entries(invocation(source, 'cause_codes')).map(({ wire, doc, row }) => {
    const kind = row.match(/=>\s*([a-z_]+)\(/)?.[1]
    const action =
      kind === 'resume' ? 'resume' : kind === 'resume_with' ? actions.get(row.match(/FixAction::([A-Za-z]+)/)?.[1]) : 'none'
    if (!kind || !action) throw new Error(`${SOURCE}: cannot read the fix row of ${wire}: ${row}`)
    const fix = kind === 'done' ? '—' : literals(row)[0].replaceAll('{id}', 'ses_…').replaceAll('|', '\\|')
    return `| \`${wire}\` | ${doc.replaceAll('|', '\\|')} | ${fix} | \`${action}\` |`
  })
  return ['| Code | What it means | Fix (`{detail}`: the cause\'s detail) | `doctor --fix` applies |', '|---|---|---|---|', ...rows].join('\n')
}

/** docs/causes.md with its table replaced by `table`. */
export function withTable(doc, table) {
  const start = doc.indexOf(BEGIN)
  const stop = doc.indexOf(END)
  if (start < 0 || stop < start) throw new Error(`${DOC}: the table's markers are missing`)
  return `${doc.slice(0, start)}${BEGIN}\n${table}\n${doc.slice(stop)}`
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const doc = fs.readFileSync(DOC, 'utf8')
  const current = withTable(doc, causeTable())
  if (process.argv.includes('--write')) {
    fs.writeFileSync(DOC, current)
    console.log('docs/causes.md: cause table written')
  } else if (current !== doc) {
    console.error('docs/causes.md: the cause table is not current; run node scripts/cause-table.mjs --write')
    process.exit(1)
  } else {
    console.log('docs/causes.md: the cause table is current')
  }
}
