package encryption

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/nodeagent/nodeagent/pkg/atomicfile"
)

// Overrides are the transformers a configuration gives resources.
type Overrides struct {
	byResource map[schema.GroupResource]Transformer
}

// For returns gr's transformer, nil when the configuration leaves gr in
// plaintext. An exact entry wins over "*.<group>", which wins over "*.*".
func (o *Overrides) For(gr schema.GroupResource) Transformer {
	if o == nil {
		return nil
	}
	for _, k := range []schema.GroupResource{gr, {Group: gr.Group, Resource: "*"}, anyGroupResource} {
		if t, ok := o.byResource[k]; ok {
			return t
		}
	}
	return nil
}

// Load reads, validates and builds the configuration file at path, with
// upstream's error messages.
func Load(path string) (*Overrides, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("error while loading file: error reading encryption provider configuration file %q: %w", path, err)
	}
	if len(data) == 0 {
		return nil, fmt.Errorf("error while loading file: encryption provider configuration file %q is empty", path)
	}
	c, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("error decoding encryption provider configuration file %q: %w", path, err)
	}
	if err := Validate(c).ToAggregate(); err != nil {
		return nil, err
	}
	return Build(c)
}

// Parse decodes a configuration and checks its apiVersion and kind.
func Parse(data []byte) (*Configuration, error) {
	var c Configuration
	if err := yaml.Unmarshal(data, &c); err != nil {
		return nil, err
	}
	if c.APIVersion != APIVersion || c.Kind != Kind {
		return nil, fmt.Errorf("no kind %q is registered for version %q", c.Kind, c.APIVersion)
	}
	return &c, nil
}

// Build makes the transformers of a validated configuration. A resource
// named in several entries gets their providers in file order; a name
// after a wildcard that covers it is an error, as upstream's.
func Build(c *Configuration) (*Overrides, error) {
	lists := map[schema.GroupResource][]prefixed{}
	for _, rc := range c.Resources {
		entries, err := providers(rc.Providers)
		if err != nil {
			return nil, err
		}
		for _, res := range rc.Resources {
			gr := schema.ParseGroupResource(res)
			for _, mask := range []schema.GroupResource{{Group: gr.Group, Resource: "*"}, anyGroupResource} {
				if _, masked := lists[mask]; masked {
					return nil, fmt.Errorf("resource %q is masked by earlier rule %q", yamlName(gr), yamlName(mask))
				}
			}
			lists[gr] = append(lists[gr], entries...)
		}
	}
	o := &Overrides{byResource: make(map[schema.GroupResource]Transformer, len(lists))}
	for gr, entries := range lists {
		o.byResource[gr] = &chain{entries: entries, noPrefix: errors.New("no matching prefix found")}
	}
	return o, nil
}

func providers(list []ProviderConfiguration) ([]prefixed, error) {
	out := make([]prefixed, 0, len(list))
	for _, pc := range list {
		var (
			p   prefixed
			err error
		)
		switch {
		case pc.AESGCM != nil:
			p, err = keyed("aesgcm", pc.AESGCM.Keys, newGCM)
		case pc.AESCBC != nil:
			p, err = keyed("aescbc", pc.AESCBC.Keys, newCBC)
		case pc.Secretbox != nil:
			p, err = keyed("secretbox", pc.Secretbox.Keys, newSecretbox)
		case pc.Identity != nil:
			p = prefixed{prefix: []byte{}, t: identity{}}
		case pc.KMS != nil:
			err = fmt.Errorf("kms provider %q is not supported: use aescbc, aesgcm or secretbox", pc.KMS.Name)
		default:
			err = errors.New(noProviderErr)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// yamlName is how the file spells gr ("secrets." is "secrets").
func yamlName(gr schema.GroupResource) string {
	if gr.Group == "" && gr.Resource == "*" {
		return "*."
	}
	return gr.String()
}

// DefaultKeyName names the key Generate writes.
const DefaultKeyName = "aescbckey"

// Generate returns a configuration that encrypts Secrets with a fresh
// 32-byte aescbc key and lists identity last, so Secrets written before
// encryption was turned on stay readable.
func Generate() ([]byte, error) {
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return nil, fmt.Errorf("generate encryption key: %w", err)
	}
	c := Configuration{APIVersion: APIVersion, Kind: Kind, Resources: []ResourceConfiguration{{
		Resources: []string{"secrets"},
		Providers: []ProviderConfiguration{
			{AESCBC: &KeysConfiguration{Keys: []Key{{Name: DefaultKeyName, Secret: base64.StdEncoding.EncodeToString(secret)}}}},
			{Identity: &struct{}{}},
		},
	}}}
	return yaml.Marshal(c)
}

// EnsureFile writes a Generate()d configuration to path (mode 0600, its
// directory 0700) unless a file is there; an existing file is kept, so
// the key survives restarts.
func EnsureFile(path string) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("stat encryption config: %w", err)
	}
	data, err := Generate()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("create encryption config dir: %w", err)
	}
	// Durably: a crash must not leave an empty key file, which would
	// make every encrypted Secret unreadable.
	if err := atomicfile.Write(path, data, 0o600); err != nil {
		return fmt.Errorf("write encryption config: %w", err)
	}
	return nil
}
