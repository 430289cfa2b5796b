package agentconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// Load reads a KubeletConfiguration file (YAML or JSON) strictly and
// applies defaults. It does not validate: apply flags first (see Resolve),
// then call Validate. Errors name the file and, where relevant, the field.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config file: %w", err)
	}
	c, err := Decode(data)
	if err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	return c, nil
}

// Decode decodes a config document strictly: apiVersion and kind must be
// kubelet.config.k8s.io/v1beta1 KubeletConfiguration, keys are
// case-sensitive, and unknown or duplicate fields are errors. Defaults are
// applied to the result.
func Decode(data []byte) (*Config, error) {
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, err
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(js, &raw); err != nil {
		return nil, fmt.Errorf("not a configuration object: %w", err)
	}
	if raw == nil {
		return nil, fmt.Errorf("empty configuration: apiVersion %s and kind %s are required", APIVersion, Kind)
	}
	c := &Config{}
	if err := decodeTypeMeta(raw, &c.TypeMeta); err != nil {
		return nil, err
	}
	if err := decodeFields(raw, c); err != nil {
		return nil, err
	}
	c.SetDefaults()
	return c, nil
}

func decodeTypeMeta(raw map[string]json.RawMessage, tm *metav1.TypeMeta) error {
	for key, dst := range map[string]*string{"apiVersion": &tm.APIVersion, "kind": &tm.Kind} {
		if v, ok := raw[key]; ok {
			if err := utiljson.Unmarshal(v, dst); err != nil {
				return fmt.Errorf("field %q: %w", key, err)
			}
		}
	}
	if tm.APIVersion != APIVersion {
		return fmt.Errorf("unsupported apiVersion %q: want %q", tm.APIVersion, APIVersion)
	}
	if tm.Kind != Kind {
		return fmt.Errorf("unsupported kind %q: want %q", tm.Kind, Kind)
	}
	return nil
}

// decodeFields decodes each key into its field so that errors name it.
func decodeFields(raw map[string]json.RawMessage, c *Config) error {
	fields := fieldIndex()
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var unknown []string
	v := reflect.ValueOf(c).Elem()
	for _, key := range keys {
		if key == "apiVersion" || key == "kind" {
			continue
		}
		i, ok := fields[key]
		if !ok {
			unknown = append(unknown, fmt.Sprintf("%q", key))
			continue
		}
		if err := decodeField(raw[key], v.Field(i).Addr().Interface()); err != nil {
			return fmt.Errorf("field %q: %w", key, err)
		}
	}
	if len(unknown) > 0 {
		noun := "field"
		if len(unknown) > 1 {
			noun = "fields"
		}
		return fmt.Errorf("unknown %s %s (unknown to %s or not supported by nodeagent)",
			noun, strings.Join(unknown, ", "), APIVersion)
	}
	return nil
}

// decodeField decodes one top-level value strictly, so that a misspelt
// key inside a nested object (authentication.x509.clientCAfile) is an
// error rather than a silently ignored setting.
func decodeField(data []byte, dst any) error {
	strict, err := sigsjson.UnmarshalStrict(data, dst)
	if err != nil {
		return err
	}
	return errors.Join(strict...)
}

var fieldIndex = sync.OnceValue(func() map[string]int {
	t := reflect.TypeFor[Config]()
	m := map[string]int{}
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			m[name] = i
		}
	}
	return m
})

// Marshal returns c as YAML (keys sorted, unset fields omitted).
func (c *Config) Marshal() ([]byte, error) {
	return yaml.Marshal(c)
}
