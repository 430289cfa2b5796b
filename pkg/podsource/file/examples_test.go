package file

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"k8s.io/apimachinery/pkg/labels"
)

// The deployments `make run`'s banner (hack/run.sh) and the README tell
// users to create must not select the example static pods that `make run`
// installs (examples/manifests): `kubectl create deployment NAME` labels
// its pods app=NAME and selects them by it, and so does the service
// `kubectl expose deployment NAME` makes, so a static pod labelled
// app=NAME would answer `kubectl logs deploy/NAME` and join the service's
// endpoints.
func TestExampleManifestsOutsideSuggestedDeployments(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	files, err := filepath.Glob(filepath.Join(root, "examples", "manifests", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no example manifests (%v)", err)
	}
	createDeployment := regexp.MustCompile(`kubectl create deployment ([a-z0-9.-]+)`)
	var suggested []string
	for _, doc := range []string{filepath.Join("hack", "run.sh"), "README.md"} {
		b, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		found := createDeployment.FindAllSubmatch(b, -1)
		if len(found) == 0 {
			t.Errorf("%s suggests no `kubectl create deployment`: the test looks for the wrong text", doc)
		}
		for _, m := range found {
			suggested = append(suggested, string(m[1]))
		}
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		pods, err := parseManifest(f, node, data)
		if err != nil {
			t.Fatal(err)
		}
		for _, pod := range pods {
			for _, name := range suggested {
				if labels.SelectorFromSet(labels.Set{"app": name}).Matches(labels.Set(pod.Labels)) {
					t.Errorf("%s: static pod %s (labels %v) is selected by the suggested deployment %q (app=%s)",
						filepath.Base(f), pod.Name, pod.Labels, name, name)
				}
			}
		}
	}
}
