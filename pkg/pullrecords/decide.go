package pullrecords

import "slices"

// Credentials are what pulled an image under one repository name.
type Credentials struct {
	// NodePodsAccessible: pulled anonymously or with the node's own
	// credentials, so every pod on the node may use it.
	NodePodsAccessible bool     `json:"nodePodsAccessible,omitempty"`
	Secrets            []Secret `json:"kubernetesSecrets,omitempty"`
}

// Secret is a pull secret that pulled the image, and its credential's hash.
type Secret struct {
	UID            string `json:"uid"`
	Namespace      string `json:"namespace"`
	Name           string `json:"name"`
	CredentialHash string `json:"credentialHash"`
}

// Record is what the agent knows of one image ID it pulled: the
// credentials by repository name (without tag or digest).
type Record struct {
	ImageRef          string                 `json:"imageRef"`
	CredentialMapping map[string]Credentials `json:"credentialMapping"`
}

// mustPull is the kubelet's decision for a present image (upstream's
// MustAttemptImagePull under NeverVerifyPreloadedImages): rec is the
// image ID's record (nil: none), pulledByAgent whether the agent pulled or
// was pulling the image, repo the container's repository and pod the
// secrets the pod's credentials for repo come from, asked only when the
// decision needs them (a pull secret that does not parse is an error
// only then, as upstream).
func mustPull(rec *Record, pulledByAgent bool, repo string, pod func() ([]Secret, error)) (bool, error) {
	if !pulledByAgent {
		return false, nil // preloaded
	}
	if rec == nil {
		return true, nil
	}
	creds, ok := rec.CredentialMapping[repo]
	switch {
	case !ok, len(creds.Secrets) == 0 && !creds.NodePodsAccessible:
		return true, nil
	case creds.NodePodsAccessible:
		return false, nil
	}
	secrets, err := pod()
	if err != nil {
		return true, err
	}
	for _, p := range secrets {
		if slices.ContainsFunc(creds.Secrets, func(c Secret) bool { return sameSecret(c, p) }) {
			return false, nil
		}
	}
	return true, nil
}

// sameSecret: the same credential, or the same secret (it may have been
// rotated since).
func sameSecret(a, b Secret) bool {
	if a.CredentialHash != "" && a.CredentialHash == b.CredentialHash {
		return true
	}
	return a.UID == b.UID && a.Namespace == b.Namespace && a.Name == b.Name
}

// merge adds creds for repo to rec, reporting whether it changed.
func merge(rec *Record, repo string, creds Credentials) bool {
	if rec.CredentialMapping == nil {
		rec.CredentialMapping = map[string]Credentials{}
	}
	cur, ok := rec.CredentialMapping[repo]
	changed := !ok
	if creds.NodePodsAccessible && !cur.NodePodsAccessible {
		cur.NodePodsAccessible, changed = true, true
	}
	for _, s := range creds.Secrets {
		i := slices.IndexFunc(cur.Secrets, func(c Secret) bool {
			return c.UID == s.UID && c.Namespace == s.Namespace && c.Name == s.Name
		})
		switch {
		case i < 0:
			cur.Secrets, changed = append(cur.Secrets, s), true
		case cur.Secrets[i].CredentialHash != s.CredentialHash:
			cur.Secrets[i].CredentialHash, changed = s.CredentialHash, true
		}
	}
	rec.CredentialMapping[repo] = cur
	return changed
}
