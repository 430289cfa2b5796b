package podworker

import (
	"fmt"
	"path/filepath"

	"github.com/nodeagent/nodeagent/pkg/credentialprovider"
	"github.com/nodeagent/nodeagent/pkg/pullrecords"
)

// The kubelet's ensure-secret-pulled-images check (KEP-2535, default
// policy NeverVerifyPreloadedImages): an image the agent pulled with a
// pod's secret is not another pod's to use without credentials for it.

// openPullRecords opens <rootDir>/image_manager, where the kubelet keeps
// them; none without a root directory (tests of the manager alone).
func openPullRecords(rootDir string) (*pullrecords.Store, error) {
	if rootDir == "" {
		return nil, nil
	}
	return pullrecords.Open(filepath.Join(rootDir, "image_manager"))
}

// presentUsable: the pod may use the present image ref without pulling.
func (p *puller) presentUsable(image, ref string, lookup func() ([]credentialprovider.AuthConfig, error)) (bool, error) {
	if p.records == nil {
		return true, nil
	}
	repo, err := credentialprovider.RepoToPull(image)
	if err != nil {
		return false, err
	}
	must, err := p.records.MustPull(image, repo, ref, func() ([]pullrecords.Secret, error) {
		creds, err := lookup()
		return podSecrets(creds), err
	})
	return !must, err
}

// presentMessage is the kubelet's Pulled event for a present image.
func (p *puller) presentMessage(image string) string {
	if p.records == nil {
		return fmt.Sprintf("Container image %q already present on machine", image)
	}
	return fmt.Sprintf("Container image %q already present on machine and can be accessed by the pod", image)
}

// podSecrets are the pull secrets among creds, as the records name them.
func podSecrets(creds []credentialprovider.AuthConfig) []pullrecords.Secret {
	var out []pullrecords.Secret
	for _, c := range creds {
		if c.Source != nil {
			out = append(out, pullrecords.Secret{UID: c.Source.UID, Namespace: c.Source.Namespace, Name: c.Source.Name, CredentialHash: c.Hash()})
		}
	}
	return out
}

// pullStarted records the pull's intent: until it ends, the image is not
// anyone's.
func (p *puller) pullStarted(image string) error {
	if p.records == nil {
		return nil
	}
	if err := p.records.PullStarted(image); err != nil {
		return &pullError{err.Error(), fmt.Sprintf("Failed to record image pull intent for container image %q: %v", image, err)}
	}
	return nil
}

// pullEnded records what pulled the image: node-accessible when no pull
// secret did.
func (p *puller) pullEnded(image, ref string, used *credentialprovider.AuthConfig, pullErr error) {
	if p.records == nil {
		return
	}
	if pullErr != nil {
		p.records.PullFailed(image)
		return
	}
	repo, err := credentialprovider.RepoToPull(image)
	if err != nil {
		p.records.PullFailed(image)
		return
	}
	creds := pullrecords.Credentials{NodePodsAccessible: used == nil || used.Source == nil}
	if !creds.NodePodsAccessible {
		creds.Secrets = podSecrets([]credentialprovider.AuthConfig{*used})
	}
	// A record that failed to write leaves the intent: the image stays
	// unverified, so the next pod pulls again.
	_ = p.records.Pulled(image, repo, ref, creds)
}
