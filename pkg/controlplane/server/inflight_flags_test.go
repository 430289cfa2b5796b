package server

import (
	"testing"

	"github.com/spf13/pflag"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/inflight"
)

func TestInflightFlags(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		want       inflight.Config
		wantErr    string
		wantValues [2]int
	}{
		{args: nil, want: inflight.Config{MaxRequestsInFlight: 400, MaxMutatingRequestsInFlight: 200}},
		{args: []string{"--max-requests-inflight=3", "--max-mutating-requests-inflight=1"},
			want: inflight.Config{MaxRequestsInFlight: 3, MaxMutatingRequestsInFlight: 1}},
		// Upstream's 0 is no limit, not the default.
		{args: []string{"--max-requests-inflight=0", "--max-mutating-requests-inflight=0"}, want: inflight.Config{}},
		{args: []string{"--max-mutating-requests-inflight=-1"},
			wantErr: `invalid argument "-1" for "--max-mutating-requests-inflight" flag: --max-mutating-requests-inflight can not be negative value`},
	} {
		var c Config
		fs := pflag.NewFlagSet("server", pflag.ContinueOnError)
		c.AddFlags(fs)
		err := fs.Parse(tc.args)
		if tc.wantErr != "" {
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("%v: err %v, want %q", tc.args, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		c.setDefaults()
		if got := c.inflight(); !sameLimits(got, tc.want) {
			t.Errorf("%v: %+v, want %+v", tc.args, got, tc.want)
		}
	}
	// A Config built without flags takes the defaults.
	var c Config
	c.setDefaults()
	if got := c.inflight(); !sameLimits(got, inflight.Config{MaxRequestsInFlight: 400, MaxMutatingRequestsInFlight: 200}) {
		t.Errorf("zero Config: %+v", got)
	}
}

// sameLimits compares the limits (a Config's OnReject is not comparable).
func sameLimits(a, b inflight.Config) bool {
	return a.MaxRequestsInFlight == b.MaxRequestsInFlight && a.MaxMutatingRequestsInFlight == b.MaxMutatingRequestsInFlight
}
