package authz

import (
	"context"
	"slices"

	v1 "k8s.io/api/core/v1"
)

// The node authorizer's rule for volumes, on upstream's graph
// node → pod → claim → volume: a node may get one claim that a pod bound
// to it uses, and the volume such a claim is bound to. Lists, watches,
// writes and subresources (claim status) are refused: the agent only
// reads them to mount.

func (z *NodeAuthorizer) nodeMayGetClaim(ctx context.Context, node string, a Attributes) bool {
	if a.Verb != "get" || a.Subresource != "" {
		return false
	}
	return slices.Contains(z.nodeClaimNames(ctx, node, a.Namespace), a.Name)
}

func (z *NodeAuthorizer) nodeMayGetVolume(ctx context.Context, node string, a Attributes) bool {
	if a.Verb != "get" || a.Subresource != "" {
		return false
	}
	claims, err := z.Claims.ListClaims(ctx)
	if err != nil {
		return false
	}
	claimsByNS := map[string][]string{}
	for _, pvc := range claims {
		if pvc.Spec.VolumeName != a.Name {
			continue
		}
		names, seen := claimsByNS[pvc.Namespace]
		if !seen {
			names = z.nodeClaimNames(ctx, node, pvc.Namespace)
			claimsByNS[pvc.Namespace] = names
		}
		if slices.Contains(names, pvc.Name) {
			return true
		}
	}
	return false
}

// nodeClaimNames lists the claims the node's pods in ns use.
func (z *NodeAuthorizer) nodeClaimNames(ctx context.Context, node, ns string) []string {
	pods, err := z.Pods.ListPods(ctx, ns)
	if err != nil {
		return nil
	}
	var names []string
	for _, pod := range pods {
		if pod.Spec.NodeName == node {
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
