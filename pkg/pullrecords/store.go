package pullrecords

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// Store keeps the records on disk. It is safe for concurrent use.
type Store struct {
	pulling, pulled string
	mu              sync.Mutex
	inFlight        map[string]int // image -> pulls running
}

// Open uses (and creates) dir, <root>/image_manager.
func Open(dir string) (*Store, error) {
	s := &Store{pulling: filepath.Join(dir, "pulling"), pulled: filepath.Join(dir, "pulled"), inFlight: map[string]int{}}
	for _, d := range []string{s.pulling, s.pulled} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("image pull records: %w", err)
		}
	}
	return s, nil
}

func fileName(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// PullStarted writes the image's pull intent before a pull.
func (s *Store) PullStarted(image string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := writeJSON(filepath.Join(s.pulling, fileName(image)), map[string]string{"image": image}); err != nil {
		return fmt.Errorf("record image pull intent: %w", err)
	}
	s.inFlight[image]++
	return nil
}

// PullFailed ends a pull that failed.
func (s *Store) PullFailed(image string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.endPullLocked(image)
}

// Pulled records that image (repository repo) was pulled as imageRef with
// creds, and ends its pull.
func (s *Store) Pulled(image, repo, imageRef string, creds Credentials) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, found, err := s.recordLocked(imageRef)
	if err != nil {
		return err
	}
	if !found {
		rec = &Record{ImageRef: imageRef}
	}
	if merge(rec, repo, creds) {
		if err := writeJSON(filepath.Join(s.pulled, fileName(imageRef)), rec); err != nil {
			// The intent stays: the image remains the agent's, unverified.
			return fmt.Errorf("record pulled image: %w", err)
		}
	}
	s.endPullLocked(image)
	return nil
}

func (s *Store) endPullLocked(image string) {
	if s.inFlight[image] > 1 {
		s.inFlight[image]--
		return
	}
	delete(s.inFlight, image)
	_ = os.Remove(filepath.Join(s.pulling, fileName(image)))
}

// MustPull says whether a pod whose credentials for repo come from the
// secrets pod returns must pull the present image (imageRef) again. A
// record that cannot be read means it must.
func (s *Store) MustPull(image, repo, imageRef string, pod func() ([]Secret, error)) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, found, err := s.recordLocked(imageRef)
	if err != nil {
		return true, nil
	}
	if !found {
		rec = nil
	}
	byAgent := found || s.inFlight[image] > 0
	if !byAgent {
		_, err := os.Stat(filepath.Join(s.pulling, fileName(image)))
		byAgent = err == nil
	}
	return mustPull(rec, byAgent, repo, pod)
}

func (s *Store) recordLocked(imageRef string) (*Record, bool, error) {
	b, err := os.ReadFile(filepath.Join(s.pulled, fileName(imageRef)))
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	rec := &Record{}
	if err := json.Unmarshal(b, rec); err != nil {
		return nil, false, fmt.Errorf("image pull record for %s: %w", imageRef, err)
	}
	return rec, true, nil
}

// writeJSON replaces path atomically.
func writeJSON(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
