package server

import (
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/nodeagent/nodeagent/pkg/controlplane/storage/encryption"
)

// EncryptionConfigFile is the generated encryption configuration, relative
// to the data directory (beside pki/, mode 0600 in a 0700 directory).
const EncryptionConfigFile = "encryption/config.yaml"

// encryption loads --encryption-provider-config, or the data directory's
// own file, generating it on first start (as k3s' --secrets-encryption).
func (c *Config) encryption(log *slog.Logger) (*encryption.Overrides, error) {
	path := c.EncryptionProviderConfig
	if path == "" {
		path = filepath.Join(c.DataDir, EncryptionConfigFile)
		if err := encryption.EnsureFile(path); err != nil {
			return nil, fmt.Errorf("encryption provider config: %w", err)
		}
	}
	o, err := encryption.Load(path)
	if err != nil {
		return nil, fmt.Errorf("encryption provider config: %w", err)
	}
	log.Info("encrypting resources at rest", "config", path)
	return o, nil
}
