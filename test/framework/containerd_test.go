package framework

import "testing"

// TestInstanceFromEnv: the variable chooses the instance; an unknown value
// is an error, never the default instance.
func TestInstanceFromEnv(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  string // instance name, "" for an error
	}{
		{"", "test"},
		{"test", "test"},
		{"containerd2", "containerd2"},
		{"containerd", ""},
		{"cri-o", ""},
	} {
		t.Setenv(RuntimeEnv, tc.value)
		got, err := InstanceFromEnv()
		switch {
		case tc.want == "" && err == nil:
			t.Errorf("%s=%q: instance %s, want an error", RuntimeEnv, tc.value, got.Name)
		case tc.want != "" && (err != nil || got.Name != tc.want):
			t.Errorf("%s=%q: instance %q, %v; want %s", RuntimeEnv, tc.value, got.Name, err, tc.want)
		}
	}
}
