package network

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/containernetworking/cni/libcni"
)

// Validate checks, before anything is written, that every plugin a conflist
// names is in one of binDirs and supports the conflist's CNI version. It
// asks the binaries themselves (CNI VERSION) through libcni. Unlike
// libcni's ValidateNetworkList it also checks the IPAM plugins (a missing
// host-local would otherwise show only at the first pod) and it reports
// each problem on its own.
func Validate(ctx context.Context, conflist []byte, binDirs []string) error {
	if len(binDirs) == 0 {
		return errors.New("validate CNI config: no plugin directories given")
	}
	list, err := libcni.ConfListFromBytes(conflist)
	if err != nil {
		return fmt.Errorf("validate CNI config: %w", err)
	}
	if list.CNIVersion == "" {
		return fmt.Errorf("validate CNI network %q: no cniVersion", list.Name)
	}
	if len(list.Plugins) == 0 {
		return fmt.Errorf("validate CNI network %q: no plugins", list.Name)
	}
	cni := libcni.NewCNIConfig(binDirs, nil)
	var errs []error
	for _, typ := range pluginTypes(list) {
		if err := validatePlugin(ctx, cni, list, typ); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("validate CNI network %q: %w", list.Name, errors.Join(errs...))
	}
	return nil
}

// pluginTypes lists the chained plugins and their IPAM plugins, each once.
func pluginTypes(list *libcni.NetworkConfigList) []string {
	var types []string
	seen := map[string]bool{}
	add := func(t string) {
		if t != "" && !seen[t] {
			seen[t] = true
			types = append(types, t)
		}
	}
	for _, p := range list.Plugins {
		add(p.Network.Type)
		add(p.Network.IPAM.Type)
	}
	return types
}

// validatePlugin hands ValidateNetwork a one-plugin config carrying the
// list's version: a plugin inside a list has no cniVersion of its own, and
// ValidateNetwork would check it against "0.1.0".
func validatePlugin(ctx context.Context, cni *libcni.CNIConfig, list *libcni.NetworkConfigList, typ string) error {
	raw, err := json.Marshal(map[string]string{"cniVersion": list.CNIVersion, "name": list.Name, "type": typ})
	if err != nil {
		return fmt.Errorf("plugin %q: %w", typ, err)
	}
	conf, err := libcni.NetworkPluginConfFromBytes(raw)
	if err != nil {
		return fmt.Errorf("plugin %q: %w", typ, err)
	}
	_, err = cni.ValidateNetwork(ctx, conf)
	// libcni's usual errors (not found, unsupported version) name the
	// plugin already.
	if err != nil && !strings.Contains(err.Error(), typ) {
		return fmt.Errorf("plugin %q: %w", typ, err)
	}
	return err
}
