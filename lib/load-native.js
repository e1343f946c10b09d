// Loads the native binding (the generated index.js) and turns its failures into one clear
// message: which platform package was looked for, or that the platform has no prebuilt binary.
// The generated loader's own message blames an npm bug, which misleads on an unsupported
// platform, a missing optional dependency or a corrupt binary.
'use strict'

const { readFileSync } = require('fs')
const path = require('path')

const PACKAGE_ROOT = path.join(__dirname, '..')

const ARCHES = { x86_64: 'x64', aarch64: 'arm64', i686: 'ia32', armv7: 'arm' }

/** `x86_64-unknown-linux-gnu` → `linux-x64-gnu` (napi-rs's platform package suffixes). */
function platformOfTarget(triple) {
  const [cpu, ...rest] = String(triple).split('-')
  const arch = ARCHES[cpu] ?? cpu
  const system = rest.join('-')
  if (system.endsWith('linux-gnu')) return `linux-${arch}-gnu`
  if (system.endsWith('linux-musl')) return `linux-${arch}-musl`
  if (system.endsWith('apple-darwin')) return `darwin-${arch}`
  if (system.endsWith('windows-msvc')) return `win32-${arch}-msvc`
  if (system.endsWith('windows-gnu')) return `win32-${arch}-gnu`
  return `${system}-${arch}`
}

function packageManifest() {
  try {
    return JSON.parse(readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8'))
  } catch {
    return {}
  }
}

function hostIsMusl() {
  if (process.platform !== 'linux') return false
  try {
    const report = process.report && typeof process.report.getReport === 'function' ? process.report.getReport() : null
    if (report && report.header && report.header.glibcVersionRuntime) return false
    if (report && Array.isArray(report.sharedObjects)) {
      return report.sharedObjects.some((file) => file.includes('libc.musl-') || file.includes('ld-musl-'))
    }
  } catch {
    // fall through: assume glibc, the common case
  }
  return false
}

/** This host's platform suffix, e.g. `linux-x64-gnu`, `darwin-arm64`, `win32-x64-msvc`. */
function hostPlatform() {
  const { platform, arch } = process
  if (platform === 'linux') return `linux-${arch}-${hostIsMusl() ? 'musl' : 'gnu'}`
  if (platform === 'win32') return `win32-${arch}-msvc`
  return `${platform}-${arch}`
}

// The most telling cause: a binary that exists but does not load (corrupt, wrong libc) says
// more than the "Cannot find module" of the candidates tried before it. The generated loader
// keeps only the messages of its attempts (a chain of `cause`s), not their codes.
function mostTellingCause(error) {
  const attempts = []
  for (let e = error && error.cause, depth = 0; e && depth < 32; e = e.cause, depth++) attempts.push(e)
  if (attempts.length === 0 && error) attempts.push(error)
  const text = (e) => (e && typeof e.message === 'string' ? e.message.split('\n')[0] : String(e))
  const loadFailure = attempts.find((e) => !/^Cannot find (module|native binding)/.test(text(e)))
  return { missing: !loadFailure, message: loadFailure ? text(loadFailure) : text(attempts[0]) }
}

/** The error thrown when no binary loads; `error.code` is `ERR_SESSION_GOAL_NATIVE`. */
function nativeLoadError(cause) {
  const manifest = packageManifest()
  const name = manifest.name ?? 'session-goal-runtime'
  const version = manifest.version ?? ''
  const supported = ((manifest.napi && manifest.napi.targets) || []).map(platformOfTarget)
  const platform = hostPlatform()
  const platformPackage = `${name}-${platform}`
  let message
  if (supported.length > 0 && !supported.includes(platform)) {
    message =
      `${name}: no prebuilt binary for this platform (${platform}); ` +
      `prebuilt platforms: ${supported.join(', ')}. ` +
      'Build from source with a Rust toolchain (`npx napi build --platform --release`).'
  } else {
    const { missing, message: detail } = mostTellingCause(cause)
    message = missing
      ? `${name}: the platform package ${platformPackage}${version ? `@${version}` : ''} is not installed. ` +
        'It is an optional dependency: reinstall without --no-optional / --omit=optional, ' +
        `or add it explicitly (npm install ${platformPackage}${version ? `@${version}` : ''}).`
      : `${name}: the binary of ${platformPackage} failed to load (${detail}). ` +
        `Reinstall ${platformPackage}${version ? `@${version}` : ''}; the file may be corrupt or built for another platform.`
  }
  const error = new Error(message)
  error.code = 'ERR_SESSION_GOAL_NATIVE'
  error.platformPackage = platformPackage
  error.cause = cause
  return error
}

/** The native binding, or one clear `ERR_SESSION_GOAL_NATIVE` error. */
function loadNative() {
  try {
    return require('../index.js')
  } catch (error) {
    throw nativeLoadError(error)
  }
}

module.exports = { loadNative, hostPlatform }
