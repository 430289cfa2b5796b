// Package tokenstest is test helpers for service account tokens, shared by
// the tests of tokens, of the API server and of its authentication, so
// that none keeps a copy.
package tokenstest
