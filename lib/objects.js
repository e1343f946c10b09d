// What the package reads as an options object (or a request, a nested setting): an object that
// is neither null nor an array. One definition for every module of lib/ and the package entry.
'use strict'

/** Whether `value` is an object other than null or an array. */
const isObject = (value) => value !== null && typeof value === 'object' && !Array.isArray(value)

module.exports = { isObject }
