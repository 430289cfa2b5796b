package userns

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/types"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// record is the kubelet's userns file: {"uidMappings":[...],"gidMappings":[...]}.
type record struct {
	UIDMappings []idMapping `json:"uidMappings"`
	GIDMappings []idMapping `json:"gidMappings"`
}

type idMapping struct {
	HostID      uint32 `json:"hostId"`
	ContainerID uint32 `json:"containerId"`
	Length      uint32 `json:"length"`
}

// check accepts what the kubelet writes: one mapping, the same for UIDs
// and GIDs, with ID 0 mapped (runtimes assume it is), with its messages.
func (r record) check() error {
	switch {
	case len(r.UIDMappings) != 1:
		return errors.New("invalid user namespace configuration: no more than one mapping allowed.")
	case len(r.UIDMappings) != len(r.GIDMappings):
		return errors.New("invalid user namespace configuration: GID and UID mappings should be identical.")
	case r.UIDMappings[0] != r.GIDMappings[0]:
		return errors.New("invalid user namespace configuration: GID and UID mapping should be identical")
	case r.UIDMappings[0].ContainerID != 0:
		return errors.New("invalid user namespace configuration: UID 0 must be mapped")
	}
	return nil
}

func (r record) cri() *criv1.UserNamespace {
	conv := func(in []idMapping) []*criv1.IDMapping {
		out := make([]*criv1.IDMapping, len(in))
		for i, m := range in {
			out[i] = &criv1.IDMapping{HostId: m.HostID, ContainerId: m.ContainerID, Length: m.Length}
		}
		return out
	}
	return &criv1.UserNamespace{Mode: criv1.NamespaceMode_POD, Uids: conv(r.UIDMappings), Gids: conv(r.GIDMappings)}
}

// write records the mapping atomically (a temporary file renamed over)
// and durably (the directory synced), as the kubelet's file store does:
// an allocation the agent forgets after a crash could be handed out twice.
func (m *Manager) write(uid types.UID, rec record) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	dir := filepath.Join(m.cfg.PodsDir, string(uid))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create user namespace store: %w", err)
	}
	tmp, err := os.CreateTemp(dir, "."+MappingsFile+"-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // gone after the rename
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), m.file(uid)); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		d.Close()
		return err
	}
	return d.Close()
}
