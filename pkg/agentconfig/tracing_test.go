package agentconfig

import (
	"strings"
	"testing"

	tracingapi "k8s.io/component-base/tracing/api/v1"
)

// Tracing is validated with upstream's messages.
func TestValidateTracing(t *testing.T) {
	for _, tc := range []struct {
		tracing *tracingapi.TracingConfiguration
		want    string // "" valid
	}{
		{nil, ""},
		{&tracingapi.TracingConfiguration{Endpoint: ptr("localhost:4317"), SamplingRatePerMillion: ptr[int32](1000000)}, ""},
		{&tracingapi.TracingConfiguration{Endpoint: ptr("unix:///run/otel.sock")}, ""},
		{&tracingapi.TracingConfiguration{SamplingRatePerMillion: ptr[int32](-1)}, "tracing.samplingRatePerMillion: Invalid value: -1: sampling rate must be positive"},
		{&tracingapi.TracingConfiguration{SamplingRatePerMillion: ptr[int32](1000001)}, "sampling rate per million must be less than or equal to one million"},
		{&tracingapi.TracingConfiguration{Endpoint: ptr("http://collector:4317")}, "tracing.endpoint: Invalid value: \"http://collector:4317\": unsupported scheme: http.  Options are none, dns, unix, or unix-abstract."},
	} {
		c := Default()
		c.Tracing = tc.tracing
		_, err := c.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v", tc.tracing, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: error %v, want %q", tc.tracing, err, tc.want)
		}
	}
}

func TestLoadTracing(t *testing.T) {
	c, _, err := Decode([]byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ntracing:\n  endpoint: localhost:4317\n  samplingRatePerMillion: 100\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Tracing == nil || *c.Tracing.Endpoint != "localhost:4317" || *c.Tracing.SamplingRatePerMillion != 100 {
		t.Errorf("tracing %+v", c.Tracing)
	}
}
