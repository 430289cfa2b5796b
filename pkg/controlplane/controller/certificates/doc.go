// Package certificates approves and signs CertificateSigningRequests with
// the cluster CA, as kube-controller-manager's csrapproving and csrsigning
// controllers (pkg/controller/certificates).
//
// The approver approves a node's requests for itself: client certificates
// (kubernetes.io/kube-apiserver-client-kubelet, as upstream) and — unlike
// upstream, which leaves them to an administrator or a third-party
// approver — serving certificates (kubernetes.io/kubelet-serving) whose
// names and addresses are the requesting node's own, as its Node object
// reports them. Anything else waits for `kubectl certificate approve`.
//
// The signer issues approved requests for kubernetes.io/kubelet-serving,
// kubernetes.io/kube-apiserver-client-kubelet and
// kubernetes.io/kube-apiserver-client after checking each signer's rules;
// a request that breaks them gets a Failed condition
// (SignerValidationFailure), as upstream.
package certificates
