package volume

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// DefaultPlugins returns every volume type the agent supports, sharing
// host (its Getter, Mounter and Allocatable). Projected volumes keep their
// service account tokens in a cache the returned plugins own; call this
// once per agent.
func DefaultPlugins(host Host) []Plugin {
	return []Plugin{
		&emptyDirPlugin{host: host},
		&hostPathPlugin{},
		newConfigMapPlugin(host),
		newSecretPlugin(host),
		newDownwardAPIPlugin(host),
		newProjectedPlugin(host, newTokenCache(slog.Default())),
		&pvcPlugin{getter: host.Getter},
	}
}

// FindPlugin returns the one plugin that supports v.
func FindPlugin(plugins []Plugin, v *v1.Volume) (Plugin, error) {
	var match []Plugin
	for _, p := range plugins {
		if p.CanSupport(v) {
			match = append(match, p)
		}
	}
	switch len(match) {
	case 0:
		return nil, errors.New("no volume plugin matched")
	case 1:
		return match[0], nil
	}
	names := make([]string, 0, len(match))
	for _, p := range match {
		names = append(names, p.Name())
	}
	return nil, fmt.Errorf("multiple volume plugins matched: %s", strings.Join(names, ","))
}
