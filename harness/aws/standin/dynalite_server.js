// Serve dynalite (DynamoDB on LevelDB) on a free loopback port for one harness run.
// Prints "READY http://HOST:PORT dynalite/VERSION" once listening; exits when stdin
// closes (the harness that started it is gone) or on SIGTERM.
// Usage: node dynalite_server.js [--host H] [--port 0] [--path DIR]
'use strict'
const path = require('path')
const args = require('util').parseArgs({
  options: {
    host: { type: 'string', default: '127.0.0.1' },
    port: { type: 'string', default: '0' },
    path: { type: 'string' },
    modules: { type: 'string' },
    memlog: { type: 'string' },
  },
}).values
const req = (name) => require(args.modules ? path.join(args.modules, name) : name)
// dynalite 4.0.0's read streams end an iterator with `iterator.return()`, which abstract-level 3
// iterators do not have (they have `close()`), so every Query/Scan left its iterator open and attached
// to the database: ~1 KB of heap and buffers per Query in memory, and on disk LevelDB iterators that
// pin old versions (memory and disk then grow with the request count, not the data). Closing them
// makes memory follow the data.
const level = req('abstract-level')
if (!process.env.HARNESS_DYNALITE_NO_ITERATOR_FIX) { // (the variable exists to show the leak, see the tests)
  for (const C of [level.AbstractIterator, level.AbstractKeyIterator, level.AbstractValueIterator]) {
    if (C && typeof C.prototype.return !== 'function') {
      C.prototype.return = function () { return this.close() }
    }
  }
}
// Iterators still open, for --memlog: created by the store's reads minus closed.
let openIterators = 0
for (const method of ['iterator', 'keys', 'values']) {
  const orig = level.AbstractLevel.prototype[method]
  level.AbstractLevel.prototype[method] = function (...a) {
    const it = orig.apply(this, a)
    openIterators++
    const close = it.close.bind(it)
    let closed = false
    it.close = function (...b) {
      if (!closed) { closed = true; openIterators-- }
      return close(...b)
    }
    return it
  }
}
// dynalite throws a request's 'error' (its index.js: `req.on('error', function (err) { throw err })`), so one client
// that goes away mid-request (a killed Locust worker: ECONNRESET "aborted") ended the server for every other
// client. That error is the client's, not the store's: it is logged and the server goes on; any other uncaught
// error still ends the process as Node would (its stack on stderr, status 1), and the harness stops the run.
process.on('uncaughtException', (err) => {
  if (err && err.code === 'ECONNRESET') {
    process.stderr.write(`a client went away mid-request (${err.message}); serving on\n`)
    return
  }
  process.stderr.write(`${(err && err.stack) || err}\n`)
  process.exit(1)
})
const dynalite = req('dynalite')
const version = req('dynalite/package.json').version
const server = dynalite({ path: args.path, createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 })
server.listen(Number(args.port), args.host, () => {
  const a = server.address()
  process.stdout.write(`READY http://${args.host}:${a.port} dynalite/${version}\n`)
})
if (args.memlog) { // diagnostics: the process's memory every N seconds, to stderr (dynalite.log)
  setInterval(() => {
    const m = process.memoryUsage()
    const mb = (v) => (v / 1048576).toFixed(1)
    process.stderr.write(`memory rss=${mb(m.rss)} heapUsed=${mb(m.heapUsed)} heapTotal=${mb(m.heapTotal)} ` +
      `external=${mb(m.external)} arrayBuffers=${mb(m.arrayBuffers)} MB openIterators=${openIterators}\n`)
  }, Number(args.memlog) * 1000).unref()
}
const stop = () => {
  setTimeout(() => process.exit(0), 3000).unref() // keep-alive clients must not hold us
  server.close(() => process.exit(0))
}
process.on('SIGTERM', stop)
process.on('SIGINT', stop)
process.stdin.on('end', stop)
process.stdin.on('error', stop)
process.stdin.resume()
