package encryption

// The EncryptionConfiguration types, as apiserver.config.k8s.io/v1 names
// their fields (the subset of them this package honours or refuses).

// APIVersion and Kind of the configuration file.
const (
	APIVersion = "apiserver.config.k8s.io/v1"
	Kind       = "EncryptionConfiguration"
)

// Configuration is one --encryption-provider-config file.
type Configuration struct {
	APIVersion string                  `json:"apiVersion,omitempty"`
	Kind       string                  `json:"kind,omitempty"`
	Resources  []ResourceConfiguration `json:"resources"`
}

// ResourceConfiguration gives resources the providers that store them.
type ResourceConfiguration struct {
	// Resources are "resource.group" names: "secrets", "*." (the core
	// group), "*.apps", "*.*".
	Resources []string `json:"resources"`
	// Providers in order: the first writes, all are tried on reads.
	Providers []ProviderConfiguration `json:"providers"`
}

// ProviderConfiguration holds exactly one provider.
type ProviderConfiguration struct {
	AESGCM    *KeysConfiguration `json:"aesgcm,omitempty"`
	AESCBC    *KeysConfiguration `json:"aescbc,omitempty"`
	Secretbox *KeysConfiguration `json:"secretbox,omitempty"`
	Identity  *struct{}          `json:"identity,omitempty"`
	// KMS is parsed to be refused: no plugin client is built in.
	KMS *KMSConfiguration `json:"kms,omitempty"`
}

// KeysConfiguration is the key list of aesgcm, aescbc and secretbox.
type KeysConfiguration struct {
	Keys []Key `json:"keys"`
}

// Key is one named key; Secret is its base64 (standard encoding).
type Key struct {
	Name   string `json:"name"`
	Secret string `json:"secret"`
}

// KMSConfiguration is the part of a kms provider this package reports.
type KMSConfiguration struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Name       string `json:"name"`
	Endpoint   string `json:"endpoint,omitempty"`
}
