package agentconfig

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Authentication is upstream's KubeletAuthentication: how the node API
// server identifies a caller.
type Authentication struct {
	X509      X509Authentication      `json:"x509"`
	Webhook   WebhookAuthentication   `json:"webhook"`
	Anonymous AnonymousAuthentication `json:"anonymous"`
}

// X509Authentication verifies client certificates.
type X509Authentication struct {
	// ClientCAFile is a PEM bundle of the CAs client certificates must chain
	// to; the user is the certificate's CommonName, its groups the
	// Organizations. Default: "" (joined: the CA of the kubeconfig's API
	// server, which signs the API server's kubelet client certificate).
	ClientCAFile string `json:"clientCAFile,omitempty"`
}

// WebhookAuthentication checks bearer tokens with a TokenReview.
type WebhookAuthentication struct {
	// Enabled sends bearer tokens to the API server's TokenReview API.
	// Default: true (joined only).
	Enabled *bool `json:"enabled,omitempty"`
	// CacheTTL is how long a review's answer is reused. Default: 2m.
	CacheTTL metav1.Duration `json:"cacheTTL,omitempty"`
}

// AnonymousAuthentication admits requests nothing else authenticated.
type AnonymousAuthentication struct {
	// Enabled lets such requests in as system:anonymous (group
	// system:unauthenticated); otherwise they get 401. Default: false.
	Enabled *bool `json:"enabled,omitempty"`
}

// Authorization is upstream's KubeletAuthorization.
type Authorization struct {
	// Mode is AlwaysAllow or Webhook (a SubjectAccessReview per request on
	// nodes/<subresource>). Default: Webhook.
	Mode    AuthorizationMode    `json:"mode,omitempty"`
	Webhook WebhookAuthorization `json:"webhook"`
}

// AuthorizationMode names the node API server's authorizer.
type AuthorizationMode string

// The authorization modes upstream's kubelet has.
const (
	AuthorizationModeAlwaysAllow AuthorizationMode = "AlwaysAllow"
	AuthorizationModeWebhook     AuthorizationMode = "Webhook"
)

// WebhookAuthorization caches SubjectAccessReview answers.
type WebhookAuthorization struct {
	// CacheAuthorizedTTL is how long an allow is reused. Default: 5m.
	CacheAuthorizedTTL metav1.Duration `json:"cacheAuthorizedTTL,omitempty"`
	// CacheUnauthorizedTTL is how long a deny is reused. Default: 30s.
	CacheUnauthorizedTTL metav1.Duration `json:"cacheUnauthorizedTTL,omitempty"`
}
