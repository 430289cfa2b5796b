// Package nodeapi is the agent's authenticated HTTPS API, the kubelet's
// port 10250: /pods, /runningpods/, /healthz, /configz,
// /containerLogs/{namespace}/{pod}/{container} (read from the CRI log
// files, with follow, previous, tailLines, sinceSeconds, sinceTime,
// timestamps and limitBytes), and /exec, /attach and /portForward, which
// ask the CRI for a streaming URL and proxy the client's upgraded (SPDY or
// WebSocket) connection to the runtime's streaming server, headers and
// subprotocol intact. When given their handlers (Config.Monitoring), it
// also serves /metrics, /metrics/probes, /metrics/resource and
// /stats/summary.
//
// Every request is authenticated (client certificate against a CA, bearer
// token through a TokenReview, or anonymous when enabled; otherwise 401)
// and authorized as a verb on nodes/<subresource> of this node
// (AlwaysAllow, or a SubjectAccessReview: 403 when denied), with
// upstream's cache lifetimes.
//
// Use:
//
//	cert, _ := nodeapi.ServingCertificate(nodeapi.CertConfig{Dir: rootDir + "/pki", Host: nodeName})
//	cas, _ := nodeapi.ClientCAPool(clientCAFile, kubeconfigCA)
//	srv, _ := nodeapi.New(nodeapi.Config{
//		NodeName: nodeName, Pods: podManager, Runtime: criClient,
//		Authenticator: nodeapi.NewAuthenticator(nodeapi.AuthnConfig{
//			ClientCAs: cas, TokenReviews: cs.AuthenticationV1().TokenReviews()}),
//		Authorizer: nodeapi.NewWebhookAuthorizer(nodeapi.AuthzConfig{
//			Reviews: cs.AuthorizationV1().SubjectAccessReviews()}),
//	})
//	addr, done, err := nodeapi.Serve(ctx, ":10250", srv.Handler(), nodeapi.TLSConfig(cert, cas), log)
package nodeapi
