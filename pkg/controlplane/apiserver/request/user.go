package request

import "context"

// User is an authenticated client, as authentication in front of the
// API server found it (x509 CN/O, token).
type User struct {
	Name   string
	Groups []string
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
