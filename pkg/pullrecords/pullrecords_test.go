package pullrecords

import (
	"errors"
	"testing"
)

var (
	secretA  = Secret{UID: "u1", Namespace: "ns", Name: "a", CredentialHash: "h1"}
	rotatedA = Secret{UID: "u1", Namespace: "ns", Name: "a", CredentialHash: "h2"}
	copyOfA  = Secret{UID: "u9", Namespace: "other", Name: "copy", CredentialHash: "h1"}
	secretB  = Secret{UID: "u2", Namespace: "ns", Name: "b", CredentialHash: "h3"}
)

func secrets(s ...Secret) func() ([]Secret, error) { return func() ([]Secret, error) { return s, nil } }

func must(t *testing.T, s *Store, image, repo, ref string, pod ...Secret) bool {
	t.Helper()
	got, err := s.MustPull(image, repo, ref, secrets(pod...))
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestMustPullAsksForSecretsOnlyWhenNeeded(t *testing.T) {
	bad := func() ([]Secret, error) { return nil, errors.New("malformed") }
	open := &Record{CredentialMapping: map[string]Credentials{"r": {NodePodsAccessible: true}}}
	bySecret := &Record{CredentialMapping: map[string]Credentials{"r": {Secrets: []Secret{secretA}}}}
	if got, err := mustPull(nil, false, "r", bad); got || err != nil {
		t.Errorf("preloaded: %v, %v", got, err)
	}
	if got, err := mustPull(open, true, "r", bad); got || err != nil {
		t.Errorf("node-accessible: %v, %v", got, err)
	}
	if _, err := mustPull(bySecret, true, "r", bad); err == nil {
		t.Error("pulled by a secret: the pod's secrets are read, and their error returned")
	}
}

func TestMustPull(t *testing.T) {
	bySecret := &Record{ImageRef: "sha256:1", CredentialMapping: map[string]Credentials{"r.io/app": {Secrets: []Secret{secretA}}}}
	open := &Record{ImageRef: "sha256:1", CredentialMapping: map[string]Credentials{"r.io/app": {NodePodsAccessible: true}}}
	cases := []struct {
		name    string
		rec     *Record
		byAgent bool
		repo    string
		pod     []Secret
		want    bool
	}{
		{name: "preloaded: anyone's", want: false},
		{name: "interrupted pull, no record", byAgent: true, want: true},
		{name: "pulled anonymously or with the node's", rec: open, byAgent: true, repo: "r.io/app", want: false},
		{name: "same secret", rec: bySecret, byAgent: true, repo: "r.io/app", pod: []Secret{secretB, secretA}, want: false},
		{name: "same secret, rotated credential", rec: bySecret, byAgent: true, repo: "r.io/app", pod: []Secret{rotatedA}, want: false},
		{name: "same credential in another secret", rec: bySecret, byAgent: true, repo: "r.io/app", pod: []Secret{copyOfA}, want: false},
		{name: "other secret", rec: bySecret, byAgent: true, repo: "r.io/app", pod: []Secret{secretB}, want: true},
		{name: "no credentials", rec: bySecret, byAgent: true, repo: "r.io/app", want: true},
		{name: "other repository name for the image", rec: open, byAgent: true, repo: "r.io/alias", want: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got, err := mustPull(tc.rec, tc.byAgent, tc.repo, secrets(tc.pod...)); err != nil || got != tc.want {
				t.Errorf("mustPull = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestStore(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	const image, repo, ref = "r.io/app:1", "r.io/app", "sha256:1"
	if must(t, s, image, repo, ref) {
		t.Error("never pulled by the agent: preloaded, anyone's")
	}
	if err := s.PullStarted(image); err != nil {
		t.Fatal(err)
	}
	if !must(t, s, image, repo, ref) {
		t.Error("pull in flight: the image is not yet anyone's")
	}
	// The agent stops mid-pull: the intent on disk still counts.
	if s, err = Open(dir); err != nil {
		t.Fatal(err)
	}
	if !must(t, s, image, repo, ref) {
		t.Error("interrupted pull after a restart: must pull")
	}
	if err := s.PullStarted(image); err != nil {
		t.Fatal(err)
	}
	if err := s.Pulled(image, repo, ref, Credentials{Secrets: []Secret{secretA}}); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(dir); err != nil {
		t.Fatal(err)
	}
	if must(t, s, image, repo, ref, secretA) || !must(t, s, image, repo, ref, secretB) || !must(t, s, image, repo, ref) {
		t.Error("after a restart: only the pulling secret may use the image")
	}
	// Another pod pulls it with its own secret: both may use it now.
	if err := s.PullStarted(image); err != nil {
		t.Fatal(err)
	}
	if err := s.Pulled(image, repo, ref, Credentials{Secrets: []Secret{secretB}}); err != nil {
		t.Fatal(err)
	}
	if must(t, s, image, repo, ref, secretA) || must(t, s, image, repo, ref, secretB) {
		t.Error("both secrets pulled it")
	}
	// A failed pull ends the intent without a record.
	const other = "r.io/other:1"
	if err := s.PullStarted(other); err != nil {
		t.Fatal(err)
	}
	s.PullFailed(other)
	if must(t, s, other, "r.io/other", "sha256:2") {
		t.Error("failed pull, image present from elsewhere: preloaded")
	}
}

func TestMerge(t *testing.T) {
	rec := &Record{}
	if !merge(rec, "r", Credentials{Secrets: []Secret{secretA}}) || merge(rec, "r", Credentials{Secrets: []Secret{secretA}}) {
		t.Error("first merge changes, the same again does not")
	}
	if !merge(rec, "r", Credentials{Secrets: []Secret{rotatedA}}) || rec.CredentialMapping["r"].Secrets[0].CredentialHash != "h2" || len(rec.CredentialMapping["r"].Secrets) != 1 {
		t.Errorf("rotated secret replaces its hash: %+v", rec)
	}
	if !merge(rec, "r", Credentials{NodePodsAccessible: true}) || !rec.CredentialMapping["r"].NodePodsAccessible {
		t.Errorf("node-accessible pull: %+v", rec)
	}
}
