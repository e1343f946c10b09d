// Setup file of every test file: the directories the file made with helpers.mjs `tempDir` (and
// `tempDataDir`) are removed after its last hook (after hooks run last-registered first, so
// this one runs after the file's own, once its runtimes have stopped).
import { afterAll } from 'vitest'
import { removeTempDirs } from '../helpers.mjs'

afterAll(removeTempDirs)
