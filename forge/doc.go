// Package forge is agentmux's client of GitHub: the handful of REST calls
// (and one GraphQL query) that open a pull request on the user's behalf
// and follow it — its state, reviews, unresolved review threads and
// checks, and the tail of a failing Actions job's log.
//
// It depends on the standard library only: a general client (go-github)
// would bring hundreds of calls we do not make, and we want our own
// conditional-request cache and errors.
//
// Every GET goes through one cache keyed by URL (bounded): a cached ETag
// is sent as If-None-Match, and a 304 answers with the cached body, which
// GitHub does not count against the rate limit. Rate-limit headers are
// read from every answer; when GitHub says the limit is spent, the call
// fails with *RateLimited and is never retried here: the caller waits.
// Lists follow Link rel="next" for at most maxPages pages. Bodies are read
// with a limit. The token is never logged, and never appears in an error.
//
// The package runs no goroutines.
package forge
