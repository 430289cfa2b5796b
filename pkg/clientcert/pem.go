package clientcert

import (
	"crypto/x509"
	"encoding/pem"

	certutil "k8s.io/client-go/util/cert"
)

func pemEncode(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func certutilParse(data []byte) ([]*x509.Certificate, error) { return certutil.ParseCertsPEM(data) }
