package credentialprovider

import (
	"github.com/google/go-containerregistry/pkg/name"
)

// RepoToPull is the repository an image is pulled from, the name the
// keyring matches: host[:port]/path without tag or digest, Docker Hub's
// short names expanded to docker.io/library/..., as the kubelet's
// ParseImageName expands them.
func RepoToPull(image string) (string, error) {
	ref, err := name.ParseReference(image)
	if err != nil {
		return "", err
	}
	reg := ref.Context().RegistryStr()
	if reg == name.DefaultRegistry {
		reg = "docker.io"
	}
	return reg + "/" + ref.Context().RepositoryStr(), nil
}
