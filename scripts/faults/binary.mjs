// Which native binary this process loaded, and whether it is a debug or a release build: the
// label RELIABILITY.md's stamp carries comes from here, not from what the suite assumes it ran.
import fs from 'node:fs'
import path from 'node:path'

/** The path of the loaded `session-goal-runtime*.node`, read from the process's own mappings. */
function loadedPath() {
  let maps = ''
  try {
    maps = fs.readFileSync('/proc/self/maps', 'utf8')
  } catch {
    return null
  }
  const line = maps.split('\n').find((l) => /session-goal-runtime[^/]*\.node$/.test(l.trim()))
  return line ? line.trim().split(/\s+/).slice(5).join(' ') : null
}

/** Section names of a 64-bit little-endian ELF file (empty when it is not one). */
export function elfSections(buffer) {
  if (buffer.length < 64 || buffer.readUInt32BE(0) !== 0x7f454c46 || buffer[4] !== 2 || buffer[5] !== 1) return []
  const shoff = Number(buffer.readBigUInt64LE(0x28))
  const shentsize = buffer.readUInt16LE(0x3a)
  const shnum = buffer.readUInt16LE(0x3c)
  const shstrndx = buffer.readUInt16LE(0x3e)
  const header = (i) => shoff + i * shentsize
  if (shstrndx >= shnum || header(shnum) > buffer.length) return []
  const strOffset = Number(buffer.readBigUInt64LE(header(shstrndx) + 0x18))
  const names = []
  for (let i = 0; i < shnum; i++) {
    const start = strOffset + buffer.readUInt32LE(header(i))
    const end = buffer.indexOf(0, start)
    names.push(buffer.toString('latin1', start, end < 0 ? start : end))
  }
  return names
}

/**
 * "debug build (<file>)" when the loaded binary carries DWARF debug info (what `napi build`
 * without --release produces), "release build (<file>)" when it does not (the release profile
 * strips it); null when no binary is loaded or it cannot be read.
 */
export function loadedBinary() {
  const file = loadedPath()
  if (!file) return null
  let sections
  try {
    sections = elfSections(fs.readFileSync(file))
  } catch {
    return null
  }
  if (!sections.length) return `unknown build (${path.basename(file)})`
  return `${sections.includes('.debug_info') ? 'debug' : 'release'} build (${path.basename(file)})`
}
