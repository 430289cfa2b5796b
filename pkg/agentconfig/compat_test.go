package agentconfig

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestNotImplementedFields pins the fields the agent ignores with a
// warning: every upstream field is either a Config field or in
// notImplemented, never both, so that a field cannot drop out of the
// warnings unnoticed, and a field the agent comes to implement must leave
// the list.
func TestNotImplementedFields(t *testing.T) {
	implemented := slices.Collect(func(yield func(string) bool) {
		for name := range fieldIndex() {
			if !yield(name) {
				return
			}
		}
	})
	for _, f := range implemented {
		if !slices.Contains(upstreamFields, f) {
			t.Errorf("Config field %q is not an upstream v1beta1 field", f)
		}
		if slices.Contains(notImplemented, f) {
			t.Errorf("field %q is implemented: remove it from notImplemented", f)
		}
	}
	for _, f := range notImplemented {
		if !slices.Contains(upstreamFields, f) {
			t.Errorf("notImplemented field %q is not an upstream v1beta1 field", f)
		}
	}
	for _, f := range upstreamFields {
		if !slices.Contains(implemented, f) && !slices.Contains(notImplemented, f) {
			t.Errorf("upstream field %q is neither implemented nor in notImplemented: it would be an unknown field", f)
		}
	}
	for f := range onlyValues {
		if !slices.Contains(notImplemented, f) {
			t.Errorf("onlyValues field %q is not in notImplemented", f)
		}
	}
	if got := len(notImplemented); got != 58 {
		t.Errorf("%d fields not implemented, want 58: update this count with the list", got)
	}
}

// TestUpstreamFieldsMatchModule checks upstreamFields against upstream's
// type when k8s.io/kubelet v0.37.0 is in the module cache (nodeagent does
// not depend on it).
func TestUpstreamFieldsMatchModule(t *testing.T) {
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Skipf("go env GOMODCACHE: %v", err)
	}
	path := filepath.Join(strings.TrimSpace(string(out)), "k8s.io", "kubelet@v0.37.0", "config", "v1beta1", "types.go")
	if _, err := os.Stat(path); err != nil {
		t.Skipf("k8s.io/kubelet v0.37.0 not in the module cache: %v", err)
	}
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	ast.Inspect(f, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok || ts.Name.Name != "KubeletConfiguration" {
			return true
		}
		for _, fld := range ts.Type.(*ast.StructType).Fields.List {
			if fld.Tag == nil {
				continue
			}
			tag, _ := strconv.Unquote(fld.Tag.Value)
			name, _, _ := strings.Cut(reflect.StructTag(tag).Get("json"), ",")
			if name != "" && name != "-" {
				got = append(got, name)
			}
		}
		return false
	})
	if !slices.Equal(got, upstreamFields) {
		t.Errorf("upstream fields differ from upstreamFields:\n got %q\nwant %q", got, upstreamFields)
	}
}

// TestNotImplementedWarnEach sets every ignored field: each gives one
// warning naming it, and the rest of the file loads.
func TestNotImplementedWarnEach(t *testing.T) {
	var doc strings.Builder
	doc.WriteString(header + "maxPods: 42\n")
	var want []string
	for _, f := range notImplemented {
		if _, only := onlyValues[f]; only {
			continue
		}
		doc.WriteString(f + ": null\n")
		want = append(want, NotImplementedWarning(f))
	}
	c, warnings, err := Decode([]byte(doc.String()))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(warnings, want) {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(warnings, "\n"), strings.Join(want, "\n"))
	}
	if c.MaxPods != 42 {
		t.Errorf("maxPods = %d, want 42", c.MaxPods)
	}
}

// TestOnlyValuesAccepted: the one value the agent honours loads silently.
func TestOnlyValuesAccepted(t *testing.T) {
	doc := header + "imagePullCredentialsVerificationPolicy: NeverVerifyPreloadedImages\npreloadedImagesVerificationAllowlist: []\nenableDebuggingHandlers: true\n"
	c, warnings, err := Decode([]byte(doc))
	if err != nil || len(warnings) != 0 {
		t.Fatalf("Decode = %v, %q; want no error, no warnings", err, warnings)
	}
	if !reflect.DeepEqual(c, Default()) {
		t.Errorf("config = %+v, want defaults", c)
	}
}

// TestLenientDecoding: what upstream's strict decoder refuses falls back
// to lenient decoding with upstream's warning, quoting the strict error.
func TestLenientDecoding(t *testing.T) {
	const lenient = "using lenient decoding as strict decoding failed: strict decoding error: "
	tests := []struct {
		name    string
		data    string
		want    []string
		maxPods int32
	}{
		{"unknown field", header + "maxPods: 10\nfooBar: 1\n",
			[]string{lenient + `unknown field "fooBar"`}, 10},
		{"unknown fields, one warning", header + "maxPods: 10\nfooBar: 1\nbarBaz: 2\n",
			[]string{lenient + `unknown field "barBaz", unknown field "fooBar"`}, 10},
		{"unknown nested field", header + "maxPods: 10\nauthentication:\n  x509:\n    clientCAfile: /ca.crt\n",
			[]string{lenient + `unknown field "authentication.x509.clientCAfile"`}, 10},
		{"field names are case-sensitive", header + "MaxPods: 10\n",
			[]string{lenient + `unknown field "MaxPods"`}, DefaultMaxPods},
		{"duplicate field", header + "maxPods: 10\nmaxPods: 11\n",
			[]string{lenient + `yaml: unmarshal errors:` + "\n" + `  line 4: key "maxPods" already set in map`}, 11},
		{"not implemented and unknown", header + "maxPods: 10\nfeatureGates:\n  Foo: true\nfooBar: 1\n",
			[]string{NotImplementedWarning("featureGates"), lenient + `unknown field "fooBar"`}, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, warnings, err := Decode([]byte(tt.data))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(warnings, tt.want) {
				t.Errorf("warnings %q, want %q", warnings, tt.want)
			}
			if c.MaxPods != tt.maxPods {
				t.Errorf("maxPods = %d, want %d", c.MaxPods, tt.maxPods)
			}
		})
	}
}

func TestLoadWarningsNameTheFile(t *testing.T) {
	path := writeConfig(t, header+"failSwapOn: false\n")
	_, warnings, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	want := "config file " + path + `: field "failSwapOn" of kubelet.config.k8s.io/v1beta1 KubeletConfiguration is not implemented by nodeagent and is ignored`
	if !slices.Equal(warnings, []string{want}) {
		t.Errorf("warnings %q, want %q", warnings, want)
	}
}
