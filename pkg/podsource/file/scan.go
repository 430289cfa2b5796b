package file

import (
	"cmp"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodeagent/nodeagent/pkg/podsource"
	"github.com/nodeagent/nodeagent/pkg/podutil"
)

// rescan re-reads the directory and returns the current snapshot and whether
// it differs from the previous one.
func (s *Source) rescan() ([]*v1.Pod, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	paths, err := s.listManifests()
	if err != nil {
		// Keep everything: a transient directory error must not drop pods.
		if msg := err.Error(); msg != s.dirErr {
			s.log.Error("cannot read manifest directory; keeping current pods", "err", err)
			s.dirErr = msg
		}
	} else {
		s.dirErr = ""
		s.updateFiles(paths)
	}
	pods := s.buildLocked()
	sig := signature(pods)
	changed := sig != s.lastSig
	s.lastSig = sig
	return pods, changed
}

// listManifests returns the sorted paths of the directory's regular,
// non-hidden files (symlinks are followed). A missing directory has none.
func (s *Source) listManifests() ([]string, error) {
	entries, err := os.ReadDir(s.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		path := filepath.Join(s.dir, e.Name())
		info, err := os.Stat(path)
		switch {
		case err != nil:
			if !errors.Is(err, fs.ErrNotExist) {
				s.log.Warn("cannot stat manifest", "path", path, "err", err)
			}
		case info.IsDir():
			s.log.Debug("not recursing into manifest subdirectory", "path", path)
		case info.Mode().IsRegular():
			paths = append(paths, path)
		default:
			s.log.Debug("ignoring manifest path that is not a regular file", "path", path, "mode", info.Mode())
		}
	}
	return paths, nil // os.ReadDir sorts by name
}

// updateFiles reads the listed files and forgets files no longer listed.
func (s *Source) updateFiles(paths []string) {
	for _, path := range paths {
		s.updateFile(path)
	}
	for path := range s.files {
		if !slices.Contains(paths, path) {
			s.forget(path)
		}
	}
}

func (s *Source) forget(path string) {
	if st, ok := s.files[path]; ok {
		s.log.Info("manifest removed", "path", path, "pods", len(st.pods))
		delete(s.files, path)
	}
}

// updateFile reads and, if its content changed, parses one file.
func (s *Source) updateFile(path string) {
	data, err := readManifest(path)
	if errors.Is(err, fs.ErrNotExist) {
		s.forget(path)
		return
	}
	st := s.files[path]
	if st == nil {
		st = &fileState{seq: s.nextSeq}
		s.nextSeq++
		s.files[path] = st
	}
	if err != nil {
		s.fail(path, st, fmt.Errorf("%s: %w", path, err))
		return
	}
	digest := sha256.Sum256(data)
	if st.parsed && digest == st.digest {
		return
	}
	st.digest, st.parsed = digest, true
	pods, err := parseManifest(path, s.nodeName, data)
	if err != nil {
		s.fail(path, st, err)
		return
	}
	if st.err != "" {
		s.log.Info("manifest is valid again", "path", path)
	}
	s.log.Debug("manifest read", "path", path, "pods", len(pods))
	st.pods, st.err = pods, ""
}

// fail records a file's error, logging it when it is new. The file's pods
// from its last successful read are kept.
func (s *Source) fail(path string, st *fileState, err error) {
	msg := err.Error()
	if msg == st.err {
		return
	}
	st.err = msg
	s.log.Error("invalid static pod manifest; keeping the pods of its last successful read",
		"path", path, "keptPods", len(st.pods), "err", msg)
}

func readManifest(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxManifestSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxManifestSize {
		return nil, fmt.Errorf("file is larger than %d bytes", maxManifestSize)
	}
	return data, nil
}

// buildLocked merges the files' pods in first-seen order, drops duplicate
// names, stamps first-seen times and returns sorted copies.
func (s *Source) buildLocked() []*v1.Pod {
	paths := make([]string, 0, len(s.files))
	for p := range s.files {
		paths = append(paths, p)
	}
	slices.SortFunc(paths, func(a, b string) int { return s.files[a].seq - s.files[b].seq })

	owner := map[string]string{} // namespace/name -> path
	dups := map[string]string{}
	var pods []*v1.Pod
	for _, path := range paths {
		for _, pod := range s.files[path].pods {
			key := pod.Namespace + "/" + pod.Name
			if first, ok := owner[key]; ok {
				msg := fmt.Sprintf("%s: duplicate pod %s: already defined by %s; ignoring it", path, key, first)
				dups[path] = joinMsg(dups[path], msg)
				continue
			}
			owner[key] = path
			pods = append(pods, pod)
		}
	}
	for path, msg := range dups {
		if s.dupErrs[path] != msg {
			s.log.Error("duplicate static pod name", "path", path, "err", msg)
		}
	}
	s.dupErrs = dups
	return s.stamp(pods)
}

// stamp returns sorted deep copies with the config.seen annotation set.
func (s *Source) stamp(pods []*v1.Pod) []*v1.Pod {
	now := time.Now()
	live := map[types.UID]bool{}
	out := make([]*v1.Pod, 0, len(pods))
	for _, pod := range pods {
		seen, ok := s.seen[pod.UID]
		if !ok {
			seen = now
			s.seen[pod.UID] = now
		}
		live[pod.UID] = true
		cp := pod.DeepCopy()
		cp.Annotations[podutil.ConfigSeenAnnotation] = seen.UTC().Format(time.RFC3339Nano)
		out = append(out, cp)
	}
	for uid := range s.seen {
		if !live[uid] {
			delete(s.seen, uid)
		}
	}
	slices.SortFunc(out, func(a, b *v1.Pod) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	return out
}

// signature identifies a snapshot: UIDs and content hashes in order.
func signature(pods []*v1.Pod) string {
	var b strings.Builder
	for _, p := range pods {
		b.WriteString(string(p.UID))
		b.WriteByte('=')
		b.WriteString(p.Annotations[podsource.ContentHashAnnotation])
		b.WriteByte(';')
	}
	return b.String()
}

func joinMsg(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
