package apiserver

import (
	"context"

	v1 "k8s.io/api/core/v1"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/tokens"
)

// LookupServiceAccount returns the UID of a service account, for the
// authentication of its tokens; an error when it does not exist (or has
// been deleting for a while).
func (s *Server) LookupServiceAccount(ctx context.Context, ns, name string) (string, error) {
	obj, err := s.store(saResource).Get(ctx, ns, name)
	if err != nil {
		return "", err
	}
	return tokens.LiveUID("service account", obj.(*v1.ServiceAccount))
}

// LookupPod returns the UID of a pod a token is bound to; an error when it
// does not exist (or has been deleting for a while).
func (s *Server) LookupPod(ctx context.Context, ns, name string) (string, error) {
	obj, err := s.store("/v1/pods").Get(ctx, ns, name)
	if err != nil {
		return "", err
	}
	return tokens.LiveUID("pod", obj.(*v1.Pod))
}

// LookupSecret returns a secret, for bootstrap token authentication (as
// upstream's authenticator reads kube-system's secrets through a lister).
func (s *Server) LookupSecret(ctx context.Context, ns, name string) (*v1.Secret, error) {
	obj, err := s.store("/v1/secrets").Get(ctx, ns, name)
	if err != nil {
		return nil, err
	}
	return obj.(*v1.Secret), nil
}
