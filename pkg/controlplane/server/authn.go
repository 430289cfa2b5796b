package server

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/request"
	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/tokens"
)

// groupAuthenticated is added to every authenticated user, as upstream does.
const groupAuthenticated = "system:authenticated"

// tokenUsers maps static bearer tokens to users.
type tokenUsers map[string]request.User

// loadTokenFile reads kube-apiserver's static token file format:
// token,user,uid[,"group1,group2"]. A missing file means no tokens.
func loadTokenFile(path string) (tokenUsers, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return tokenUsers{}, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseTokens(f, path)
}

func parseTokens(r io.Reader, name string) (tokenUsers, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	tokens := tokenUsers{}
	for line := 1; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return tokens, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if len(rec) < 3 {
			return nil, fmt.Errorf("%s line %d: want token,user,uid[,groups], got %d fields", name, line, len(rec))
		}
		if rec[0] == "" || rec[1] == "" {
			return nil, fmt.Errorf("%s line %d: empty token or user", name, line)
		}
		u := request.User{Name: rec[1], UID: rec[2]}
		if len(rec) > 3 {
			for g := range strings.SplitSeq(rec[3], ",") {
				if g = strings.TrimSpace(g); g != "" {
					u.Groups = append(u.Groups, g)
				}
			}
		}
		tokens[rec[0]] = u
	}
}

// authenticate puts the request's user into its context for the API
// server, or answers 401. Client certificates come first, then bearer
// tokens (the static token file); anonymous requests are refused.
func authenticate(tokens tokenUsers, next http.Handler) http.Handler {
	return authenticateWith(&tokenAuthenticator{static: tokens}, next)
}

// authenticateWith is authenticate with the whole bearer token chain.
func authenticateWith(chain *tokenAuthenticator, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, ok := certUser(r)
		if ok {
			u.Groups = append(u.Groups, groupAuthenticated)
		} else if token, bearer := bearerToken(r); bearer {
			var res tokens.Result
			if res, ok, _ = chain.authenticateToken(r.Context(), token, nil); ok {
				u = res.User
				u.UID, u.Extra = res.UID, res.Extra
				r = r.Clone(r.Context())
				r.Header.Del("Authorization") // as upstream: not passed on
			}
		}
		if !ok {
			writeUnauthorized(w)
			return
		}
		next.ServeHTTP(w, r.WithContext(request.WithUser(r.Context(), u)))
	})
}

// tokenAuthenticator is the bearer token chain: the static token file,
// then service account tokens, then bootstrap tokens. Its users carry system:authenticated.
type tokenAuthenticator struct {
	static tokenUsers
	sa     *saTokenAuthenticator // nil: no service account tokens
	// bootstrap authenticates bootstrap tokens (nil: none), after
	// service account tokens as in kube-apiserver's chain.
	bootstrap *bootstrapTokenAuthenticator
	// apiAudiences are the audiences the API server accepts; tokens
	// without audiences of their own (the static ones) are valid for them.
	apiAudiences []string
}

// errInvalidBearerToken is upstream's error when no authenticator knew the token.
var errInvalidBearerToken = errors.New("invalid bearer token")

// authenticateToken authenticates a bearer token for audiences (nil: the
// API server's). It is apiserver.Config.TokenAuthenticator too.
func (a *tokenAuthenticator) authenticateToken(ctx context.Context, token string, audiences []string) (tokens.Result, bool, error) {
	if audiences == nil {
		audiences = a.apiAudiences
	}
	var errs []error
	if u, ok := a.static[token]; ok {
		auds := audiences
		if len(a.apiAudiences) > 0 {
			auds = tokens.IntersectAudiences(audiences, a.apiAudiences)
		}
		if len(auds) > 0 || len(a.apiAudiences) == 0 {
			u.Groups = append(append([]string(nil), u.Groups...), groupAuthenticated)
			return tokens.Result{User: u, UID: u.UID, Audiences: auds}, true, nil
		}
	}
	if a.sa != nil {
		res, ok, err := a.sa.authenticate(ctx, token, audiences)
		if ok {
			res.User.Groups = append(res.User.Groups, groupAuthenticated)
			return res, true, nil
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	if a.bootstrap != nil {
		res, ok, err := a.bootstrap.authenticate(ctx, token)
		if ok {
			// Bootstrap tokens carry no audiences: valid for the API server's.
			auds := audiences
			if len(a.apiAudiences) > 0 {
				auds = tokens.IntersectAudiences(audiences, a.apiAudiences)
			}
			if len(auds) > 0 || len(a.apiAudiences) == 0 {
				res.Audiences = auds
				res.User.Groups = append(res.User.Groups, groupAuthenticated)
				return res, true, nil
			}
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		return tokens.Result{}, false, errInvalidBearerToken
	}
	return tokens.Result{}, false, utilerrors.NewAggregate(errs)
}

// certUser maps a client certificate that verified against the CA (with
// the client-auth usage) to CN and O.
func certUser(r *http.Request) (request.User, bool) {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.VerifiedChains[0]) == 0 {
		return request.User{}, false
	}
	subj := r.TLS.VerifiedChains[0][0].Subject
	if subj.CommonName == "" {
		return request.User{}, false
	}
	return request.User{Name: subj.CommonName, Groups: append([]string(nil), subj.Organization...)}, true
}

// bearerToken returns the request's bearer token, if it has one.
func bearerToken(r *http.Request) (string, bool) {
	parts := strings.Fields(r.Header.Get("Authorization"))
	if len(parts) != 2 || !strings.EqualFold(parts[0], "bearer") {
		return "", false
	}
	return parts[1], true
}

// unauthorizedStatus is kube-apiserver's 401 body.
var unauthorizedStatus = metav1.Status{
	TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
	Status:   metav1.StatusFailure,
	Message:  "Unauthorized",
	Reason:   metav1.StatusReasonUnauthorized,
	Code:     http.StatusUnauthorized,
}

func writeUnauthorized(w http.ResponseWriter) {
	body, _ := json.Marshal(unauthorizedStatus)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache, private")
	w.WriteHeader(http.StatusUnauthorized)
	_, _ = w.Write(append(body, '\n'))
}
