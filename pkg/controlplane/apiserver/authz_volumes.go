package apiserver

import (
	"context"
	"slices"

	v1 "k8s.io/api/core/v1"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/request"
)

const (
	pvcResource = "/v1/persistentvolumeclaims"
	pvResource  = "/v1/persistentvolumes"
)

// The node authorizer's rule for volumes, on upstream's graph
// node → pod → claim → volume: a node may get one claim that a pod bound
// to it uses, and the volume such a claim is bound to. Lists, watches,
// writes and subresources (claim status) are refused: the agent only
// reads them to mount.

func (s *Server) nodeMayGetClaim(ctx context.Context, node string, ri request.Info) bool {
	if ri.Verb != "get" || ri.Subresource != "" {
		return false
	}
	return slices.Contains(s.nodeClaimNames(ctx, node, ri.Namespace), ri.Name)
}

func (s *Server) nodeMayGetVolume(ctx context.Context, node string, ri request.Info) bool {
	if ri.Verb != "get" || ri.Subresource != "" {
		return false
	}
	list, err := s.store(pvcResource).List(ctx, "", storageListAll(nil))
	if err != nil {
		return false
	}
	claimsByNS := map[string][]string{}
	for _, obj := range list.Items {
		pvc := obj.(*v1.PersistentVolumeClaim)
		if pvc.Spec.VolumeName != ri.Name {
			continue
		}
		names, seen := claimsByNS[pvc.Namespace]
		if !seen {
			names = s.nodeClaimNames(ctx, node, pvc.Namespace)
			claimsByNS[pvc.Namespace] = names
		}
		if slices.Contains(names, pvc.Name) {
			return true
		}
	}
	return false
}

// nodeClaimNames lists the claims the node's pods in ns use.
func (s *Server) nodeClaimNames(ctx context.Context, node, ns string) []string {
	list, err := s.store("/v1/pods").List(ctx, ns, storageListAll(nil))
	if err != nil {
		return nil
	}
	var names []string
	for _, obj := range list.Items {
		if pod := obj.(*v1.Pod); pod.Spec.NodeName == node {
			names = append(names, podClaimNames(pod)...)
		}
	}
	return names
}

// podClaimNames is the claims a pod's volumes use: named ones, and those
// of generic ephemeral volumes (<pod>-<volume>).
func podClaimNames(pod *v1.Pod) []string {
	var names []string
	for _, vol := range pod.Spec.Volumes {
		switch {
		case vol.PersistentVolumeClaim != nil:
			names = append(names, vol.PersistentVolumeClaim.ClaimName)
		case vol.Ephemeral != nil:
			names = append(names, pod.Name+"-"+vol.Name)
		}
	}
	return names
}
