#!/usr/bin/env node
// Keeps the platform packages in step with the root package: one npm/<platform>/package.json
// per napi target (name, version, os, cpu, libc, main, files, engines), all at the root's version.
//   (no flag)   write them; run by `npm version` (the `version` script) and the release workflow.
//   --check     only report drift, exit 1 (run by `npm test`); also that the release workflow's
//               build and test matrices name exactly package.json's targets, and that the
//               platforms built locally (scripts/platforms/common.sh) fill packages of these.
//   --pack      add the root's optionalDependencies on every platform package (same version);
//               run by `prepack`, so every packed or published root package declares them.
//   --unpack    remove them again (`postpack`).
// The repository's package.json carries no optionalDependencies: until the platform packages
// are published, `npm ci` on a fresh clone would fail on them (npm cannot lock a missing package).
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const checkOnly = process.argv.includes('--check')
const pack = process.argv.includes('--pack')
const unpack = process.argv.includes('--unpack')

const ARCHES = { x86_64: 'x64', aarch64: 'arm64', i686: 'ia32', armv7: 'arm' }

/** What napi-rs calls a target's platform: suffix, os, cpu and (linux only) libc. */
export function platformOf(triple) {
  const [cpu, ...rest] = triple.split('-')
  const arch = ARCHES[cpu] ?? cpu
  const system = rest.join('-')
  if (system.endsWith('linux-gnu')) return { suffix: `linux-${arch}-gnu`, os: 'linux', cpu: arch, libc: 'glibc' }
  if (system.endsWith('linux-musl')) return { suffix: `linux-${arch}-musl`, os: 'linux', cpu: arch, libc: 'musl' }
  if (system.endsWith('apple-darwin')) return { suffix: `darwin-${arch}`, os: 'darwin', cpu: arch }
  if (system.endsWith('windows-msvc')) return { suffix: `win32-${arch}-msvc`, os: 'win32', cpu: arch }
  throw new Error(`unknown target ${triple}: add it to scripts/sync-platform-packages.mjs`)
}

const readJson = (file) => JSON.parse(readFileSync(file, 'utf8'))
const text = (value) => JSON.stringify(value, null, 2) + '\n'

const rootFile = path.join(root, 'package.json')
const manifest = readJson(rootFile)
const binaryName = manifest.napi.binaryName
const drift = []

function write(file, value, before) {
  const next = text(value)
  if (before === next) return
  drift.push(path.relative(root, file))
  if (!checkOnly) {
    mkdirSync(path.dirname(file), { recursive: true })
    writeFileSync(file, next)
  }
}

const optionalDependencies = {}
for (const triple of manifest.napi.targets) {
  const platform = platformOf(triple)
  const name = `${manifest.name}-${platform.suffix}`
  const file = path.join(root, 'npm', platform.suffix, 'package.json')
  const before = existsSync(file) ? readFileSync(file, 'utf8') : ''
  const binary = `${binaryName}.${platform.suffix}.node`
  const pkg = {
    name,
    version: manifest.version,
    description: `${manifest.description} — prebuilt binary for ${triple}`,
    license: manifest.license,
    ...(manifest.repository ? { repository: manifest.repository } : {}),
    main: binary,
    files: [binary],
    os: [platform.os],
    cpu: [platform.cpu],
    ...(platform.libc ? { libc: [platform.libc] } : {}),
    engines: manifest.engines,
  }
  write(file, pkg, before)
  const readme = path.join(root, 'npm', platform.suffix, 'README.md')
  const readmeText = `# \`${name}\`\n\nThe **${triple}** binary of \`${manifest.name}\`. Install \`${manifest.name}\`, not this package: it is an optional dependency that npm picks for this platform.\n`
  const readmeBefore = existsSync(readme) ? readFileSync(readme, 'utf8') : ''
  if (readmeBefore !== readmeText) {
    drift.push(path.relative(root, readme))
    if (!checkOnly) writeFileSync(readme, readmeText)
  }
  optionalDependencies[name] = manifest.version
}

const rootBefore = readFileSync(rootFile, 'utf8')
if (pack) {
  writeFileSync(rootFile, text({ ...manifest, optionalDependencies }))
  console.log(`optionalDependencies: ${Object.keys(optionalDependencies).length} platform packages at ${manifest.version}`)
} else if (unpack) {
  const { optionalDependencies: _added, ...rest } = manifest
  if (text(rest) !== rootBefore) writeFileSync(rootFile, text(rest))
}

// The release workflow and the local platform builds agree with package.json on target names
// (and so on file names: session-goal-runtime.<suffix>.node).
if (checkOnly) {
  const workflow = readFileSync(path.join(root, '.github', 'workflows', 'release.yml'), 'utf8')
  const jobText = (job) => workflow.split(/^ {2}(?=[a-z-]+:\s*$)/m).find((part) => part.startsWith(`${job}:`)) ?? ''
  const same = (a, b) => a.length === b.length && [...a].sort().join() === [...b].sort().join()
  for (const job of ['build', 'test']) {
    const targets = [...jobText(job).matchAll(/\btarget: ([A-Za-z0-9_-]+)/g)].map((m) => m[1])
    if (!same(targets, manifest.napi.targets)) {
      drift.push(`.github/workflows/release.yml: the ${job} matrix builds [${targets.join(', ')}], package.json's napi.targets are [${manifest.napi.targets.join(', ')}]`)
    }
  }
  const suffixes = manifest.napi.targets.map((triple) => platformOf(triple).suffix)
  const local = readFileSync(path.join(root, 'scripts', 'platforms', 'common.sh'), 'utf8')
  const packages = [...local.matchAll(/\bpackage=([A-Za-z0-9_-]+) triple=/g)].map((m) => m[1])
  if (packages.length === 0) drift.push('scripts/platforms/common.sh: no platform table found')
  for (const name of packages) {
    if (!suffixes.includes(name)) drift.push(`scripts/platforms/common.sh builds into npm/${name}, which is not a package of package.json's napi.targets`)
  }
}

if (drift.length === 0) {
  if (!pack && !unpack) console.log(`platform packages in step: ${Object.keys(optionalDependencies).length} at ${manifest.version}`)
} else if (checkOnly) {
  console.error(`platform packages out of step (run: node scripts/sync-platform-packages.mjs):\n  ${drift.join('\n  ')}`)
  process.exit(1)
} else {
  console.log(`updated:\n  ${drift.join('\n  ')}`)
}
