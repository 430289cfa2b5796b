package rootcacert

import (
	"context"
	"fmt"
	"maps"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nodeagent/nodeagent/pkg/controlplane/controller/internal/ctrltest"
)

const caPEM = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"

func namespace(name string, phase v1.NamespacePhase) *v1.Namespace {
	return &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: v1.NamespaceStatus{Phase: phase}}
}

func start(t *testing.T, client kubernetes.Interface) *Publisher {
	t.Helper()
	f := informers.NewSharedInformerFactory(client, 0)
	p := New(client, f, []byte(caPEM), ctrltest.Logger(t))
	ctrltest.Start(t, f, func(ctx context.Context) error { return p.Run(ctx, 1) })
	return p
}

// published reports whether ns holds the map as upstream publishes it.
func published(ctx context.Context, c kubernetes.Interface, ns string) (bool, string) {
	cm, err := c.CoreV1().ConfigMaps(ns).Get(ctx, ConfigMapName, metav1.GetOptions{})
	if err != nil {
		return false, err.Error()
	}
	ok := maps.Equal(cm.Data, map[string]string{"ca.crt": caPEM}) && cm.Annotations[DescriptionAnnotation] == Description
	return ok, fmt.Sprintf("data %q annotations %q", cm.Data, cm.Annotations)
}

func waitPublished(t *testing.T, c kubernetes.Interface, ns, what string) {
	t.Helper()
	ctrltest.Eventually(t, what, func(ctx context.Context) (bool, string) { return published(ctx, c, ns) })
}

// TestPublisherScenario: maps appear in existing and new namespaces and
// come back after being deleted or edited; other annotations stay.
func TestPublisherScenario(t *testing.T) {
	client := ctrltest.NewClientset(namespace("default", v1.NamespaceActive), namespace("kube-system", v1.NamespaceActive))
	start(t, client)
	waitPublished(t, client, "default", "map in an existing namespace")
	waitPublished(t, client, "kube-system", "map in another existing namespace")

	if _, err := client.CoreV1().Namespaces().Create(t.Context(), namespace("team", v1.NamespaceActive), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPublished(t, client, "team", "map in a new namespace")

	if err := client.CoreV1().ConfigMaps("team").Delete(t.Context(), ConfigMapName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPublished(t, client, "team", "deleted map recreated")

	cm, err := client.CoreV1().ConfigMaps("team").Get(t.Context(), ConfigMapName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data = map[string]string{"ca.crt": "forged", "extra": "x"}
	cm.Annotations = map[string]string{"owner": "me"}
	if _, err := client.CoreV1().ConfigMaps("team").Update(t.Context(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPublished(t, client, "team", "edited map restored")
	cm, err = client.CoreV1().ConfigMaps("team").Get(t.Context(), ConfigMapName, metav1.GetOptions{})
	if err != nil || cm.Annotations["owner"] != "me" {
		t.Errorf("the user's annotation went: %v %v", err, cm)
	}
}

// TestPublisherSkipsTerminatingNamespaces: no map is created in a
// namespace being deleted, and a create refused for that reason is not
// retried.
func TestPublisherSkipsTerminatingNamespaces(t *testing.T) {
	client := ctrltest.NewClientset(namespace("going", v1.NamespaceTerminating), namespace("live", v1.NamespaceActive))
	start(t, client)
	waitPublished(t, client, "live", "map in the active namespace")
	if _, err := client.CoreV1().ConfigMaps("going").Get(t.Context(), ConfigMapName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("map in a terminating namespace: %v", err)
	}

	refusing := ctrltest.NewClientset()
	refusing.PrependReactor("create", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		err := apierrors.NewForbidden(v1.Resource("configmaps"), ConfigMapName, fmt.Errorf("namespace going is being terminated"))
		err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: v1.NamespaceTerminatingCause}}
		return true, nil, err
	})
	p := start(t, refusing)
	if err := p.sync(t.Context(), "going"); err != nil {
		t.Errorf("sync of a terminating namespace: %v, want nil (no retry)", err)
	}
}
