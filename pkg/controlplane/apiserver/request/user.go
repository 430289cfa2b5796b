package request

import "context"

// User is an authenticated client, as authentication in front of the
// API server found it (x509 CN/O, token), as upstream's user.Info.
type User struct {
	Name   string
	UID    string
	Groups []string
	// Extra is what the authenticator adds (a service account token's
	// credential ID, pod and node).
	Extra map[string][]string
}

type userKey struct{}

// WithUser returns a context carrying the authenticated user.
func WithUser(ctx context.Context, u User) context.Context {
	return context.WithValue(ctx, userKey{}, u)
}

// UserFrom returns the authenticated user, if any.
func UserFrom(ctx context.Context) (User, bool) {
	u, ok := ctx.Value(userKey{}).(User)
	return u, ok
}
