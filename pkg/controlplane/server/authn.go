package server

import (
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

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver"
)

// groupAuthenticated is added to every authenticated user, as upstream does.
const groupAuthenticated = "system:authenticated"

// tokenUsers maps static bearer tokens to users.
type tokenUsers map[string]apiserver.User

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
		u := apiserver.User{Name: rec[1]}
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
// tokens; anonymous requests are refused.
func authenticate(tokens tokenUsers, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, ok := certUser(r)
		if !ok {
			if u, ok = tokenUser(r, tokens); ok {
				r = r.Clone(r.Context())
				r.Header.Del("Authorization") // as upstream: not passed on
			}
		}
		if !ok {
			writeUnauthorized(w)
			return
		}
		u.Groups = append(u.Groups, groupAuthenticated)
		next.ServeHTTP(w, r.WithContext(apiserver.WithUser(r.Context(), u)))
	})
}

// certUser maps a client certificate that verified against the CA (with
// the client-auth usage) to CN and O.
func certUser(r *http.Request) (apiserver.User, bool) {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.VerifiedChains[0]) == 0 {
		return apiserver.User{}, false
	}
	subj := r.TLS.VerifiedChains[0][0].Subject
	if subj.CommonName == "" {
		return apiserver.User{}, false
	}
	return apiserver.User{Name: subj.CommonName, Groups: append([]string(nil), subj.Organization...)}, true
}

func tokenUser(r *http.Request, tokens tokenUsers) (apiserver.User, bool) {
	parts := strings.Fields(r.Header.Get("Authorization"))
	if len(parts) != 2 || !strings.EqualFold(parts[0], "bearer") {
		return apiserver.User{}, false
	}
	u, ok := tokens[parts[1]]
	if !ok {
		return apiserver.User{}, false
	}
	u.Groups = append([]string(nil), u.Groups...)
	return u, true
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
