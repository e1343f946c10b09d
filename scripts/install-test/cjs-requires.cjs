// Installed package, CommonJS: every documented export through require, and the types shipped.
'use strict'
const fs = require('node:fs')
const path = require('node:path')
const pkg = require('session-goal-runtime')
const names = Object.keys(pkg).filter((name) => name !== '__napiBindingTarget')
// inputRules is a namespace of functions (the core's input rules); every other export is one.
const notFunctions = names.filter((name) => typeof pkg[name] !== (name === 'inputRules' ? 'object' : 'function'))
if (notFunctions.length) throw new Error(`not functions: ${notFunctions.join(', ')}`)
const { createSessionGoal, buildGoalIntroText } = require('session-goal-runtime')
if (typeof createSessionGoal !== 'function' || typeof buildGoalIntroText !== 'function') throw new Error('destructured require')
const root = path.dirname(require.resolve('session-goal-runtime/package.json'))
const manifest = require('session-goal-runtime/package.json')
for (const file of [manifest.exports['.'].import.types, manifest.exports['.'].require.types, 'index.d.ts']) {
  if (!fs.existsSync(path.join(root, file))) throw new Error(`types missing: ${file}`)
}
const platforms = Object.keys(manifest.optionalDependencies || {})
if (platforms.length < 5 || !platforms.every((name) => manifest.optionalDependencies[name] === manifest.version)) {
  throw new Error(`optionalDependencies: ${JSON.stringify(manifest.optionalDependencies)}`)
}
// The binary that loaded is the one of the platform package under test (install-test.sh names it).
const platform = process.env.INSTALL_TEST_PLATFORM
if (!platform) throw new Error('INSTALL_TEST_PLATFORM is not set (run this through scripts/install-test.sh)')
const expected = fs.realpathSync(require.resolve(`session-goal-runtime-${platform}`))
const loaded = Object.keys(require.cache).filter((file) => file.endsWith('.node')).map((file) => fs.realpathSync(file))
if (loaded.length !== 1 || loaded[0] !== expected) throw new Error(`loaded ${JSON.stringify(loaded)}, expected ${expected}`)
console.log(`cjs: ${names.length} exports require; ${platforms.length} platform packages declared at ${manifest.version}; binary ${path.relative(process.cwd(), expected)}`)
