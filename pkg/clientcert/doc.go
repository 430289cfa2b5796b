// Package clientcert is the kubelet's client TLS bootstrap and client
// certificate rotation (k8s.io/kubernetes pkg/kubelet/certificate and
// pkg/kubelet/certificate/bootstrap): LoadClientCert turns a
// --bootstrap-kubeconfig (a bootstrap token) into a node client
// certificate through a kubernetes.io/kube-apiserver-client-kubelet
// CertificateSigningRequest, stored in --cert-dir as
// kubelet-client-current.pem, and writes --kubeconfig pointing at it.
// Rotating (rotateCertificates) renews that certificate at a jittered
// 70-90% of its life, as client-go's certificate manager, with the
// current credential, and is the agent's API transport: every new
// connection presents the current certificate, and the connections made
// with the previous one are closed once it changes (the kubelet's
// UpdateTransport).
package clientcert
