package encryption

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"

	"golang.org/x/crypto/nacl/secretbox"
)

var errShort = errors.New("the stored data was shorter than the required size")

func decodeSecret(s string) ([]byte, error) { return base64.StdEncoding.DecodeString(s) }

// cbc is aescbc: a random IV, then AES-CBC of the PKCS#7-padded value.
// It does not authenticate (upstream's aescbc neither).
type cbc struct{ block cipher.Block }

func newCBC(secret []byte) (Transformer, error) {
	block, err := aes.NewCipher(secret)
	if err != nil {
		return nil, err
	}
	return cbc{block: block}, nil
}

func (t cbc) TransformToStorage(plain, _ []byte) ([]byte, error) {
	bs := aes.BlockSize
	pad := bs - len(plain)%bs
	out := make([]byte, bs+len(plain)+pad)
	if _, err := rand.Read(out[:bs]); err != nil {
		return nil, errors.New("unable to read sufficient random bytes")
	}
	copy(out[bs:], plain)
	copy(out[bs+len(plain):], bytes.Repeat([]byte{byte(pad)}, pad))
	cipher.NewCBCEncrypter(t.block, out[:bs]).CryptBlocks(out[bs:], out[bs:])
	return out, nil
}

func (t cbc) TransformFromStorage(data, _ []byte) ([]byte, bool, error) {
	bs := aes.BlockSize
	if len(data) < bs {
		return nil, false, errShort
	}
	body := data[bs:]
	if len(body)%bs != 0 {
		return nil, false, errors.New("the stored data is not a multiple of the block size")
	}
	plain := make([]byte, len(body))
	cipher.NewCBCDecrypter(t.block, data[:bs]).CryptBlocks(plain, body)
	if len(plain) == 0 {
		return nil, false, errors.New("invalid PKCS7 data (empty or not padded)")
	}
	pad := int(plain[len(plain)-1])
	if pad == 0 || pad > len(plain) {
		return nil, false, errors.New("invalid PKCS7 data (empty or not padded)")
	}
	for _, b := range plain[len(plain)-pad:] {
		if int(b) != pad {
			return nil, false, errors.New("invalid padding on input")
		}
	}
	return plain[:len(plain)-pad], false, nil
}

// gcm is aesgcm: a random 12-byte nonce, then the AES-GCM seal with the
// etcd key as additional data.
type gcm struct{ aead cipher.AEAD }

func newGCM(secret []byte) (Transformer, error) {
	block, err := aes.NewCipher(secret)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	if n := aead.NonceSize(); n != 12 { // every stored value depends on it
		return nil, fmt.Errorf("crypto/cipher.NewGCM returned unexpected nonce size: %d", n)
	}
	return gcm{aead: aead}, nil
}

func (t gcm) TransformToStorage(plain, key []byte) ([]byte, error) {
	n := t.aead.NonceSize()
	nonce := make([]byte, n, n+len(plain)+t.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("failed to write nonce for AES-GCM: %w", err)
	}
	return t.aead.Seal(nonce, nonce, plain, key), nil
}

func (t gcm) TransformFromStorage(data, key []byte) ([]byte, bool, error) {
	n := t.aead.NonceSize()
	if len(data) < n {
		return nil, false, errShort
	}
	plain, err := t.aead.Open(nil, data[:n], data[n:], key)
	return plain, false, err
}

// box is secretbox: a random 24-byte nonce, then XSalsa20-Poly1305.
type box struct{ key [32]byte }

const boxNonceSize = 24

func newSecretbox(secret []byte) (Transformer, error) {
	if len(secret) != 32 {
		return nil, fmt.Errorf("expected key size 32 for secretbox provider, got %v", len(secret))
	}
	var t box
	copy(t.key[:], secret)
	return t, nil
}

func (t box) TransformToStorage(plain, _ []byte) ([]byte, error) {
	var nonce [boxNonceSize]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return nil, errors.New("unable to read sufficient random bytes")
	}
	return secretbox.Seal(nonce[:], plain, &nonce, &t.key), nil
}

func (t box) TransformFromStorage(data, _ []byte) ([]byte, bool, error) {
	if len(data) < boxNonceSize+secretbox.Overhead {
		return nil, false, errShort
	}
	var nonce [boxNonceSize]byte
	copy(nonce[:], data[:boxNonceSize])
	plain, ok := secretbox.Open(nil, data[boxNonceSize:], &nonce, &t.key)
	if !ok {
		return nil, false, errors.New("output array was not large enough for encryption")
	}
	return plain, false, nil
}
