package encryption

import (
	"bytes"
	"errors"
	"fmt"
)

// encryptedPrefix starts every encrypted value; identity refuses to read
// such values (upstream reserves the prefix for data encrypted on disk).
const encryptedPrefix = "k8s:enc:"

// The providers' value prefixes, as upstream's.
const (
	aesCBCPrefix    = "k8s:enc:aescbc:v1:"
	aesGCMPrefix    = "k8s:enc:aesgcm:v1:"
	secretboxPrefix = "k8s:enc:secretbox:v1:"
)

// Transformer turns a stored value into plaintext and back. key is the
// value's etcd key: aesgcm authenticates it, so a value copied to another
// key does not decrypt. stale reports that the value was not written by
// the first provider (or key) and is due for a rewrite.
type Transformer interface {
	TransformFromStorage(data, key []byte) (plain []byte, stale bool, err error)
	TransformToStorage(plain, key []byte) ([]byte, error)
}

// prefixed is a Transformer for the values that start with prefix.
type prefixed struct {
	prefix []byte
	t      Transformer
}

// chain is upstream's prefix transformer list: the first entry writes
// (prepending its prefix); a read goes to the first entry whose prefix
// matches, except that an empty-prefix (identity) entry that fails lets
// the later entries try.
type chain struct {
	entries  []prefixed
	noPrefix error // when no entry matches
}

func (c *chain) TransformToStorage(plain, key []byte) ([]byte, error) {
	first := c.entries[0]
	out, err := first.t.TransformToStorage(plain, key)
	if err != nil {
		return nil, err
	}
	return append(append(make([]byte, 0, len(first.prefix)+len(out)), first.prefix...), out...), nil
}

func (c *chain) TransformFromStorage(data, key []byte) ([]byte, bool, error) {
	var errs []error
	for i, e := range c.entries {
		if !bytes.HasPrefix(data, e.prefix) {
			continue
		}
		plain, stale, err := e.t.TransformFromStorage(data[len(e.prefix):], key)
		if len(e.prefix) == 0 && err != nil {
			errs = append(errs, err) // encrypted data: a later provider may read it
			continue
		}
		return plain, stale || i != 0, err
	}
	if len(errs) > 0 {
		return nil, false, errors.Join(errs...)
	}
	return nil, false, c.noPrefix
}

// identity stores plaintext and refuses to read encrypted values.
type identity struct{}

func (identity) TransformFromStorage(data, _ []byte) ([]byte, bool, error) {
	if bytes.HasPrefix(data, []byte(encryptedPrefix)) {
		return nil, false, errors.New("identity transformer tried to read encrypted data")
	}
	return data, false, nil
}

func (identity) TransformToStorage(plain, _ []byte) ([]byte, error) { return plain, nil }

// keyed builds a provider's chain of named keys under its prefix.
func keyed(provider string, keys []Key, newKey func(secret []byte) (Transformer, error)) (prefixed, error) {
	entries := make([]prefixed, 0, len(keys))
	for _, k := range keys {
		secret, err := decodeSecret(k.Secret)
		if err != nil {
			return prefixed{}, fmt.Errorf("could not obtain secret for named key %s: %w", k.Name, err)
		}
		t, err := newKey(secret)
		if err != nil {
			return prefixed{}, fmt.Errorf("error while creating transformer for named key %s: %w", k.Name, err)
		}
		entries = append(entries, prefixed{prefix: []byte(k.Name + ":"), t: t})
	}
	var noKey error
	var prefix string
	switch provider {
	case "aescbc":
		prefix, noKey = aesCBCPrefix, errors.New("no matching key was found for the provided AES transformer")
	case "aesgcm":
		prefix, noKey = aesGCMPrefix, errors.New("no matching key was found for the provided AES transformer")
	default:
		prefix, noKey = secretboxPrefix, errors.New("no matching key was found for the provided Secretbox transformer")
	}
	return prefixed{prefix: []byte(prefix), t: &chain{entries: entries, noPrefix: noKey}}, nil
}
