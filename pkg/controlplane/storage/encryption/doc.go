// Package encryption encrypts API objects at rest, as kube-apiserver's
// --encryption-provider-config does: it reads an EncryptionConfiguration
// (apiserver.config.k8s.io/v1), validates it with upstream's messages and
// builds, per resource, the ordered provider chain upstream builds.
//
// The wire format is upstream's, so an etcd written by either server is
// readable by the other with the same file: a value is
// "k8s:enc:<provider>:v1:<keyName>:" followed by the ciphertext (aescbc:
// IV + AES-CBC with PKCS#7 padding; aesgcm: nonce + AES-GCM seal with the
// etcd key as additional data; secretbox: nonce + NaCl secretbox). identity
// stores plaintext.
//
// The first provider encrypts writes; reads try every provider whose
// prefix matches, and an identity provider reads anything that is not
// "k8s:enc:"-prefixed. A value read by any provider but the first is
// stale, so the storage layer rewrites it on the next update: rotating a
// key is putting the new key first and rewriting the objects.
//
// Only the providers with local keys are implemented; kms providers are
// refused when the file is loaded.
package encryption
