package volume

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const configMapPluginName = "kubernetes.io/configmap"

// configMapPlugin projects a config map's keys as files, on disk.
type configMapPlugin struct {
	getter Getter
	data   dataVolume
}

func newConfigMapPlugin(host Host) *configMapPlugin {
	return &configMapPlugin{getter: host.Getter, data: dataVolume{mounter: host.Mounter}}
}

func (p *configMapPlugin) Name() string { return configMapPluginName }

func (p *configMapPlugin) CanSupport(v *v1.Volume) bool { return v.ConfigMap != nil }

// SetUp fetches the config map and (re)writes the volume; called on every
// sync, it propagates updates.
func (p *configMapPlugin) SetUp(ctx context.Context, c SetUpContext) (string, error) {
	if p.getter == nil {
		return "", noClientError("configmap", c.Volume.Name)
	}
	src := c.Volume.ConfigMap
	optional := isOptional(src.Optional)
	cm, err := fetchConfigMap(ctx, p.getter, c.Pod.Namespace, src.Name, optional)
	if err != nil {
		return "", err
	}
	payload, err := configMapPayload(src.Items, cm, fileMode(src.DefaultMode), optional)
	if err != nil {
		return "", err
	}
	if err := p.data.write(c, payload); err != nil {
		return "", err
	}
	return c.Dir, nil
}

func (p *configMapPlugin) TearDown(dir string) error { return p.data.tearDown(dir) }

// fetchConfigMap reads the config map; an optional one that does not exist
// is empty.
func fetchConfigMap(ctx context.Context, g Getter, ns, name string, optional bool) (*v1.ConfigMap, error) {
	cm, err := g.GetConfigMap(ctx, ns, name)
	if err == nil {
		return cm, nil
	}
	if optional && apierrors.IsNotFound(err) {
		return &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, nil
	}
	return nil, objectError(err, "configmap", name)
}

// configMapPayload maps the config map (data and binaryData) to files:
// every key under its own name, or only the listed items at their paths.
// A listed key that is missing fails unless the source is optional.
func configMapPayload(items []v1.KeyToPath, cm *v1.ConfigMap, defaultMode int32, optional bool) (map[string]FileProjection, error) {
	payload := make(map[string]FileProjection, len(cm.Data)+len(cm.BinaryData))
	if len(items) == 0 {
		for k, v := range cm.Data {
			payload[k] = FileProjection{Data: []byte(v), Mode: defaultMode}
		}
		for k, v := range cm.BinaryData {
			payload[k] = FileProjection{Data: v, Mode: defaultMode}
		}
		return payload, nil
	}
	for _, it := range items {
		data, ok := configMapValue(cm, it.Key)
		if !ok {
			if optional {
				continue
			}
			return nil, fmt.Errorf("configmap references non-existent config key: %s", it.Key)
		}
		payload[it.Path] = FileProjection{Data: data, Mode: itemMode(it.Mode, defaultMode)}
	}
	return payload, nil
}

func configMapValue(cm *v1.ConfigMap, key string) ([]byte, bool) {
	if s, ok := cm.Data[key]; ok {
		return []byte(s), true
	}
	b, ok := cm.BinaryData[key]
	return b, ok
}

// itemMode is the item's own mode, else the volume's default.
func itemMode(mode *int32, defaultMode int32) int32 {
	if mode != nil {
		return *mode
	}
	return defaultMode
}
