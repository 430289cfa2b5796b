package credentialprovider

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
)

// Config is a .dockercfg document, and the "auths" of a config.json:
// registry location -> credentials.
type Config map[string]Entry

// ConfigJSON is a config.json (.dockerconfigjson) document.
type ConfigJSON struct {
	Auths Config `json:"auths"`
}

// Entry is one registry's credentials.
type Entry struct {
	Username string
	Password string
	Email    string
}

type rawEntry struct {
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
	Email    string `json:"email,omitempty"`
	Auth     string `json:"auth,omitempty"`
}

// UnmarshalJSON reads an entry whose "auth", when set, replaces username
// and password, as the kubelet reads it: a malformed auth fails the whole
// document.
func (e *Entry) UnmarshalJSON(data []byte) error {
	var raw rawEntry
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	e.Username, e.Password, e.Email = raw.Username, raw.Password, raw.Email
	if raw.Auth == "" {
		return nil
	}
	var err error
	e.Username, e.Password, err = decodeAuth(raw.Auth)
	return err
}

// decodeAuth splits base64(user:password), padded or not.
func decodeAuth(field string) (user, password string, err error) {
	enc := base64.RawStdEncoding
	if strings.HasSuffix(strings.TrimSpace(field), "=") {
		enc = base64.StdEncoding
	}
	decoded, err := enc.DecodeString(field)
	if err != nil {
		return "", "", err
	}
	user, password, ok := strings.Cut(string(decoded), ":")
	if !ok {
		return "", "", errors.New("unable to parse auth field, must be formatted as base64(username:password)")
	}
	return user, password, nil
}
