// Package admission holds the API server's built-in admission plugins,
// each under its upstream name, and the Chain that runs them in
// upstream's order (kube-apiserver's AllOrderedPlugins): on a write, the
// mutating plugins (Admit) in that order before defaulting and
// validation, then the validating ones (Validate) on the final object.
// New builds the one ordered list; the plugins read objects through the
// small interfaces declared in plugins.go, which the core's storage
// adapters satisfy.
//
// The core builds the Attributes of each write and calls Chain.Admit and
// Chain.Validate where upstream's handlers run admission. Admission
// webhooks and policies (MutatingAdmissionPolicy, MutatingAdmissionWebhook,
// ValidatingAdmissionPolicy, ValidatingAdmissionWebhook) are more plugins,
// at the end of the list in New, as upstream orders them.
package admission
