package probe

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
)

// UserAgent is what probes and hooks send, upstream's "kube-probe/<major>.<minor>".
const UserAgent = "kube-probe/1.37"

// HTTPRequest builds the GET an httpGet probe sends: scheme, host (the pod
// IP unless set), port, path, the probe's headers (Host among them), and
// upstream's default User-Agent and Accept.
func HTTPRequest(ctx context.Context, a *v1.HTTPGetAction, host string, port int) (*http.Request, error) {
	scheme := "http"
	if a.Scheme == v1.URISchemeHTTPS {
		scheme = "https"
	}
	if a.Host != "" {
		host = a.Host
	}
	u, err := url.Parse(a.Path)
	if err != nil {
		return nil, fmt.Errorf("probe path %q: %w", a.Path, err)
	}
	u.Scheme, u.Host = scheme, net.JoinHostPort(host, strconv.Itoa(port))
	if u.Path == "" {
		u.Path = "/"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	for _, h := range a.HTTPHeaders {
		if http.CanonicalHeaderKey(h.Name) == "Host" {
			req.Host = h.Value
			continue
		}
		req.Header.Add(h.Name, h.Value)
	}
	// As upstream's newProbeRequest: the probe's own User-Agent and Accept
	// replace the defaults, and an empty Accept removes the header.
	if _, ok := req.Header["User-Agent"]; !ok {
		req.Header.Set("User-Agent", UserAgent)
	}
	if _, ok := req.Header["Accept"]; !ok {
		req.Header.Set("Accept", "*/*")
	} else if req.Header.Get("Accept") == "" {
		req.Header.Del("Accept")
	}
	return req, nil
}

// NewHTTPClient is upstream's probe client: no keep-alives (each probe is a
// new connection, as the container sees it), no proxy, certificates not
// verified, redirects followed only to the same host and at most 10 times.
func NewHTTPClient(timeout time.Duration) *http.Client {
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // probes do not verify, as upstream
			DisableKeepAlives: true,
			// As upstream: no "Accept-Encoding: gzip" the probe did not ask for.
			DisableCompression: true,
			Proxy:              nil,
		},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if req.URL.Hostname() != via[0].URL.Hostname() {
				return http.ErrUseLastResponse
			}
			if len(via) >= 10 {
				return errors.New("stopped after 10 redirects")
			}
			return nil
		},
	}
}

// HTTP runs the request: 2xx succeeds, 3xx (a redirect not followed)
// succeeds with a warning, anything else fails with upstream's messages.
func HTTP(req *http.Request, timeout time.Duration) (Outcome, string, error) {
	resp, err := NewHTTPClient(timeout).Do(req)
	if err != nil {
		return OutcomeFailure, err.Error(), nil
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxOutput))
	if err != nil {
		return OutcomeFailure, err.Error(), nil
	}
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return OutcomeSuccess, string(body), nil
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return OutcomeWarning, fmt.Sprintf("Probe terminated redirects, Response body: %s", body), nil
	}
	return OutcomeFailure, fmt.Sprintf("HTTP probe failed with statuscode: %d", resp.StatusCode), nil
}
