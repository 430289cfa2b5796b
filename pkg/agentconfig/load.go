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
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// Load reads a KubeletConfiguration file (YAML or JSON) and applies
// defaults; see Decode for what is a warning and what an error. It does
// not validate: apply flags first (see Resolve), then call Validate.
// Errors and warnings name the file and, where relevant, the field.
func Load(path string) (*Config, []string, error) {
	return LoadFiles(path, "")
}

// LoadFiles is Load of file ("" for the defaults) with the drop-ins of
// dropinDir ("" for none) merged over it, as the kubelet's --config and
// --config-dir (see mergeDropins).
func LoadFiles(file, dropinDir string) (*Config, []string, error) {
	c, warnings := Default(), []string(nil)
	if file != "" {
		var err error
		if c, warnings, err = loadFile(file); err != nil {
			return nil, nil, err
		}
	}
	if dropinDir == "" {
		return c, warnings, nil
	}
	merged, more, err := mergeDropins(c, dropinDir)
	if err != nil {
		return nil, nil, fmt.Errorf("failed to merge kubelet configs: %w", err)
	}
	return merged, append(warnings, more...), nil
}

func loadFile(path string) (*Config, []string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("read config file: %w", err)
	}
	c, warnings, err := Decode(data)
	if err != nil {
		return nil, nil, fmt.Errorf("config file %s: %w", path, err)
	}
	return c, prefixed("config file "+path+": ", warnings), nil
}

// Decode decodes a config document as the kubelet does: apiVersion and
// kind must be kubelet.config.k8s.io/v1beta1 KubeletConfiguration, and
// malformed YAML or a value of the wrong type is an error. The upstream
// fields the agent does not implement are ignored with one warning each
// (see notImplemented). Other strict-decoding failures (unknown fields,
// keys in the wrong case, duplicate keys) make it fall back, as upstream,
// to lenient decoding with one warning quoting the strict error. Defaults
// are applied to the result.
func Decode(data []byte) (*Config, []string, error) {
	raw, warnings, err := decodeDocument(data)
	if err != nil {
		return nil, nil, err
	}
	c, err := fromRaw(raw)
	if err != nil {
		return nil, nil, err
	}
	return c, warnings, nil
}

// fromRaw is the defaulted Config of a document's fields.
func fromRaw(raw map[string]json.RawMessage) (*Config, error) {
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

// decodeDocument parses data, checks its apiVersion and kind, and drops
// the fields decodeFields must not see: the upstream fields the agent
// does not implement. The warnings say what was dropped and what strict
// decoding refused.
func decodeDocument(data []byte) (map[string]json.RawMessage, []string, error) {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, nil, err
	}
	var strictErrs []error
	// As upstream's serializer: duplicate keys are a strict error, caught
	// by converting the original document strictly a second time.
	if _, err := yaml.YAMLToJSONStrict(data); err != nil {
		strictErrs = append(strictErrs, err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(js, &raw); err != nil {
		return nil, nil, fmt.Errorf("not a configuration object: %w", err)
	}
	if raw == nil {
		return nil, nil, fmt.Errorf("empty configuration: apiVersion %s and kind %s are required", APIVersion, Kind)
	}
	var tm metav1.TypeMeta
	if err := decodeTypeMeta(raw, &tm); err != nil {
		return nil, nil, err
	}
	warnings, err := dropNotImplemented(raw)
	if err != nil {
		return nil, nil, err
	}
	strictErrs = append(strictErrs, strictErrors(raw)...)
	if len(strictErrs) > 0 {
		// Upstream's wording (pkg/kubelet/kubeletconfig/util/codec).
		warnings = append(warnings, "using lenient decoding as strict decoding failed: "+
			runtime.NewStrictDecodingError(strictErrs).Error())
	}
	return raw, warnings, nil
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

// strictErrors are the unknown-field errors of the whole document, with
// the field's full path ("authentication.x509.clientCAfile"), as the
// strict decoder reports them.
func strictErrors(raw map[string]json.RawMessage) []error {
	js, err := json.Marshal(raw)
	if err != nil {
		return []error{err}
	}
	// Type errors are decodeFields' to report, with the field's name.
	strict, _ := sigsjson.UnmarshalStrict(js, &Config{})
	return strict
}

// decodeFields decodes each key the agent knows into its field, leniently
// (case-sensitive; unknown keys inside are dropped), so that a type error
// names the field. Keys it does not know are skipped: strictErrors
// reports them.
func decodeFields(raw map[string]json.RawMessage, c *Config) error {
	fields := fieldIndex()
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	v := reflect.ValueOf(c).Elem()
	var errs []error
	for _, key := range keys {
		i, ok := fields[key]
		if !ok {
			continue
		}
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw[key], v.FieldByIndex(i).Addr().Interface()); err != nil {
			errs = append(errs, fmt.Errorf("field %q: %w", key, err))
		}
	}
	return errors.Join(errs...)
}

// fieldIndex maps each JSON key of Config to its field's index path. An
// embedded struct without a json tag (eviction.Config) is inline, as
// encoding/json treats it; TypeMeta (tagged ",inline") is decoded apart,
// by decodeTypeMeta.
var fieldIndex = sync.OnceValue(func() map[string][]int {
	m := map[string][]int{}
	indexFields(reflect.TypeFor[Config](), nil, m)
	return m
})

func indexFields(t reflect.Type, prefix []int, m map[string][]int) {
	for i := range t.NumField() {
		f := t.Field(i)
		path := append(slices.Clone(prefix), i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		switch {
		case tag == "" && f.Anonymous && f.Type.Kind() == reflect.Struct:
			indexFields(f.Type, path, m)
		case name != "" && name != "-":
			m[name] = path
		}
	}
}

func prefixed(prefix string, warnings []string) []string {
	out := make([]string, len(warnings))
	for i, w := range warnings {
		out[i] = prefix + w
	}
	return out
}

// Marshal returns c as YAML (keys sorted, unset fields omitted).
func (c *Config) Marshal() ([]byte, error) {
	return yaml.Marshal(c)
}
