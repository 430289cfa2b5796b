// Package tokens is service account tokens without the HTTP: the Signer
// that issues and verifies them (bound tokens, upstream's claims and
// errors), the users and extras they authenticate as, audience checks,
// and the pure parts of TokenRequest (validation, defaults, the claims
// of a new token, binding it to a pod) and of the lookups behind token
// authentication (LiveUID).
//
// The core serves serviceaccounts/token and TokenReview with it
// (Config.TokenSigner, Config.TokenAuthenticator) and reads the objects
// from storage; pkg/controlplane/server authenticates bearer tokens with
// it.
package tokens
