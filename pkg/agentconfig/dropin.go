package agentconfig

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
)

// dropinExtension is the suffix of the files --config-dir reads.
const dropinExtension = ".conf"

// mergeDropins merges the drop-ins of dir over base as the kubelet's
// mergeKubeletConfigurations (cmd/kubelet/app/server.go, KEP-3983): the
// files named *.conf, in the lexical order of filepath.WalkDir
// (subdirectories included), each a whole KubeletConfiguration document,
// applied as a JSON merge patch (RFC 7386) over the configuration so far:
// objects (featureGates, kubeReserved, authentication) merge key by key,
// lists and scalars replace, null removes. Each drop-in is decoded as the
// main file (apiVersion and kind checked, values type-checked, the same
// warnings); flags given explicitly still win over the result.
func mergeDropins(base *Config, dir string) (*Config, []string, error) {
	merged, err := json.Marshal(base)
	if err != nil {
		return nil, nil, fmt.Errorf("failed to marshal base config: %w", err)
	}
	var warnings []string
	walk := func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || filepath.Ext(d.Name()) != dropinExtension {
			return nil
		}
		patch, w, err := loadDropin(path)
		if err != nil {
			return fmt.Errorf("failed to load kubelet dropin file, path: %s, error: %w", path, err)
		}
		warnings = append(warnings, w...)
		if merged, err = jsonpatch.MergePatch(merged, patch); err != nil {
			return fmt.Errorf("failed to merge drop-in and current config: %w", err)
		}
		return nil
	}
	if err := filepath.WalkDir(dir, walk); err != nil {
		return nil, nil, fmt.Errorf("failed to walk through kubelet dropin directory %q: %w", dir, err)
	}
	c, err := decodeMerged(merged)
	if err != nil {
		return nil, nil, fmt.Errorf("failed to unmarshal merged JSON into kubelet configuration: %w", err)
	}
	return c, warnings, nil
}

// loadDropin returns the drop-in at path as a merge patch, without the
// fields the agent does not implement.
func loadDropin(path string) ([]byte, []string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	raw, warnings, err := decodeDocument(data)
	if err != nil {
		return nil, nil, err
	}
	if err := decodeFields(raw, &Config{}); err != nil {
		return nil, nil, err
	}
	patch, err := json.Marshal(raw)
	if err != nil {
		return nil, nil, err
	}
	return patch, prefixed("drop-in config file "+path+": ", warnings), nil
}

func decodeMerged(data []byte) (*Config, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, err
	}
	return fromRaw(raw)
}
