package nodeapi

import (
	"fmt"
	"net/http"
)

// withAuth authenticates and authorizes every request before h, as the
// kubelet's auth filter: 401 without an identity, 403 when no attribute
// set is allowed, 500 when the authorizer cannot answer.
func (s *Server) withAuth(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, ok, err := s.cfg.Authenticator.AuthenticateRequest(r)
		if err != nil {
			s.log.Info("unable to authenticate the request", "path", r.URL.Path, "err", err)
		}
		if err != nil || !ok {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		attrs := requestAttributes(s.cfg.NodeName, user, r)
		for _, a := range attrs {
			allowed, _, err := s.cfg.Authorizer.Authorize(r.Context(), a)
			if err != nil {
				s.log.Error("authorization error", "user", user.Name, "verb", a.Verb, "subresource", a.Subresource, "err", err)
				http.Error(w, describe("Authorization error", a), http.StatusInternalServerError)
				return
			}
			if allowed {
				s.recovering(user.Name, h).ServeHTTP(w, r)
				return
			}
		}
		// The message names the coarse attributes (nodes/proxy for most
		// paths), the ones older roles grant.
		last := attrs[len(attrs)-1]
		s.log.Debug("forbidden", "user", user.Name, "verb", last.Verb, "subresource", last.Subresource, "path", r.URL.Path)
		http.Error(w, describe("Forbidden", last), http.StatusForbidden)
	})
}

func describe(what string, a Attributes) string {
	return fmt.Sprintf("%s (user=%s, verb=%s, resource=%s, subresource=%s)", what, a.User.Name, a.Verb, a.Resource, a.Subresource)
}
