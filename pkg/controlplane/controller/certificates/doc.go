// Package certificates approves and signs CertificateSigningRequests, as
// kube-controller-manager's csrapproving and csrsigning controllers
// (pkg/controller/certificates).
//
// The approver approves a node's requests for itself: client certificates
// (kubernetes.io/kube-apiserver-client-kubelet, as upstream) and — unlike
// upstream, which leaves them to an administrator or a third-party
// approver — serving certificates (kubernetes.io/kubelet-serving) whose
// names and addresses are the requesting node's own, as its Node object
// reports them. As the node writes that status itself, a serving request
// also waits for an administrator when it names anything reserved: a
// loopback, unspecified, link-local or multicast address, one in the
// service CIDR, an address or name another Node reports, a wildcard, or
// one of the API server's names (kubernetes, kubernetes.default,
// kubernetes.default.svc[.<domain>], localhost). Anything else waits for
// `kubectl certificate approve`; the reason is logged.
//
// The signer issues approved requests for kubernetes.io/kubelet-serving
// with the kubelet-serving CA (Config.ServingSigner), which only the API
// server trusts, to verify kubelets — so a serving certificate never
// passes for the API server — and those for
// kubernetes.io/kube-apiserver-client-kubelet and
// kubernetes.io/kube-apiserver-client with the cluster CA
// (Config.ClientSigner), after checking each signer's rules; a request
// that breaks them gets a Failed condition (SignerValidationFailure), as
// upstream.
//
// The cleaner (upstream's csrcleaner) deletes, every hour, requests issued
// or denied/failed more than an hour ago, pending for more than a day, or
// whose certificate expired.
package certificates
