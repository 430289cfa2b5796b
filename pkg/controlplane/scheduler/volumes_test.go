package scheduler

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	storagehelpers "k8s.io/component-helpers/storage/volume"
)

// lookupOf serves objs from listers, as the informers would.
func lookupOf(t *testing.T, objs ...runtime.Object) *volumeLookup {
	t.Helper()
	idx := func() cache.Indexer {
		return cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	}
	claims, volumes, classes := idx(), idx(), idx()
	for _, o := range objs {
		var err error
		switch o.(type) {
		case *v1.PersistentVolumeClaim:
			err = claims.Add(o)
		case *v1.PersistentVolume:
			err = volumes.Add(o)
		case *storagev1.StorageClass:
			err = classes.Add(o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return &volumeLookup{
		claims:  corelisters.NewPersistentVolumeClaimLister(claims),
		volumes: corelisters.NewPersistentVolumeLister(volumes),
		classes: storagelisters.NewStorageClassLister(classes),
	}
}

func volClaim(name string, mutate ...func(*v1.PersistentVolumeClaim)) *v1.PersistentVolumeClaim {
	c := &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: v1.PersistentVolumeClaimSpec{
			AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Resources:   v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}},
		},
		Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimPending},
	}
	for _, m := range mutate {
		m(c)
	}
	return c
}

func boundTo(volume string) func(*v1.PersistentVolumeClaim) {
	return func(c *v1.PersistentVolumeClaim) {
		c.Spec.VolumeName = volume
		c.Annotations = map[string]string{storagehelpers.AnnBindCompleted: "yes"}
		c.Status.Phase = v1.ClaimBound
	}
}

func inClass(class string) func(*v1.PersistentVolumeClaim) {
	return func(c *v1.PersistentVolumeClaim) { c.Spec.StorageClassName = &class }
}

// localVolume is an Available local volume on node (any node if "").
func localVolume(name, node, class string) *v1.PersistentVolume {
	pv := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PersistentVolumeSpec{
			Capacity:               v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:            []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			StorageClassName:       class,
			PersistentVolumeSource: v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: "/mnt/" + name}},
		},
		Status: v1.PersistentVolumeStatus{Phase: v1.VolumeAvailable},
	}
	if node != "" {
		pv.Spec.NodeAffinity = &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
			MatchExpressions: []v1.NodeSelectorRequirement{{Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: []string{node}}},
		}}}}
	}
	return pv
}

func waitClass(name string) *storagev1.StorageClass {
	mode := storagev1.VolumeBindingWaitForFirstConsumer
	return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: "kubernetes.io/no-provisioner", VolumeBindingMode: &mode}
}

func withClaims(names ...string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		for _, n := range names {
			p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: "v-" + n,
				VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: n}}})
		}
	}
}

func TestVolumeFilters(t *testing.T) {
	ab := []*v1.Node{node("a", "4", "8Gi"), node("b", "4", "8Gi")}
	deleting := metav1.Now()
	tests := []struct {
		name   string
		objs   []runtime.Object
		pod    *v1.Pod
		placed []*v1.Pod
		want   string // chosen node, or "" when unschedulable
		msg    string
	}{
		{"no claims", nil, pod("p", "", ""), nil, "a", ""},
		{"missing claim", nil, pod("p", "", "", withClaims("data")), nil, "",
			`0/2 nodes are available: persistentvolumeclaim "data" not found.`},
		{"unbound immediate claim", []runtime.Object{volClaim("data")}, pod("p", "", "", withClaims("data")), nil, "",
			"0/2 nodes are available: pod has unbound immediate PersistentVolumeClaims."},
		{"claim naming a volume, not yet bound", []runtime.Object{volClaim("data", func(c *v1.PersistentVolumeClaim) { c.Spec.VolumeName = "pv" })},
			pod("p", "", "", withClaims("data")), nil, "", "0/2 nodes are available: pod has unbound immediate PersistentVolumeClaims."},
		{"lost claim", []runtime.Object{volClaim("data", boundTo("pv"), func(c *v1.PersistentVolumeClaim) { c.Status.Phase = v1.ClaimLost })},
			pod("p", "", "", withClaims("data")), nil, "",
			`0/2 nodes are available: persistentvolumeclaim "data" bound to non-existent persistentvolume "pv".`},
		{"claim being deleted", []runtime.Object{volClaim("data", boundTo("pv"), func(c *v1.PersistentVolumeClaim) { c.DeletionTimestamp = &deleting })},
			pod("p", "", "", withClaims("data")), nil, "", `0/2 nodes are available: persistentvolumeclaim "data" is being deleted.`},
		{"ephemeral claim not created yet", nil, pod("p", "", "", func(p *v1.Pod) {
			p.Spec.Volumes = []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{}}}}
		}), nil, "", `0/2 nodes are available: waiting for ephemeral volume controller to create the persistentvolumeclaim "p-scratch".`},
		{"bound local volume pins the node", []runtime.Object{volClaim("data", boundTo("pv")), localVolume("pv", "b", "")},
			pod("p", "", "", withClaims("data")), nil, "b", ""},
		{"bound volume without affinity", []runtime.Object{volClaim("data", boundTo("pv")), localVolume("pv", "", "")},
			pod("p", "", "", withClaims("data")), nil, "a", ""},
		{"bound local volume on no node", []runtime.Object{volClaim("data", boundTo("pv")), localVolume("pv", "c", "")},
			pod("p", "", "", withClaims("data")), nil, "", "0/2 nodes are available: 2 node(s) had volume node affinity conflict."},
		{"bound volume gone", []runtime.Object{volClaim("data", boundTo("pv"))}, pod("p", "", "", withClaims("data")), nil, "",
			"0/2 nodes are available: 2 node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)."},
		{"WaitForFirstConsumer finds the node with a free volume",
			[]runtime.Object{waitClass("local"), volClaim("data", inClass("local")), localVolume("pv", "b", "local"), localVolume("other", "a", "other")},
			pod("p", "", "", withClaims("data")), nil, "b", ""},
		{"WaitForFirstConsumer without a volume", []runtime.Object{waitClass("local"), volClaim("data", inClass("local"))},
			pod("p", "", "", withClaims("data")), nil, "", "0/2 nodes are available: 2 node(s) didn't find available persistent volumes to bind."},
		{"ReadWriteOncePod claim in use", []runtime.Object{volClaim("data", boundTo("pv"), func(c *v1.PersistentVolumeClaim) {
			c.Spec.AccessModes = []v1.PersistentVolumeAccessMode{v1.ReadWriteOncePod}
		}), localVolume("pv", "", "")},
			pod("p", "", "", withClaims("data")), []*v1.Pod{pod("user", "", "", withClaims("data"), onNode("a"))}, "",
			"0/2 nodes are available: 2 node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode."},
	}
	for _, tc := range tests {
		l := lookupOf(t, tc.objs...)
		nodes := buildSnapshot(ab, tc.placed)
		pv, msg, err := l.preFilterVolumes(tc.pod, nodes)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		cs := &cycleState{preFilterMsg: msg}
		if pv != nil {
			cs.filters = map[string]filterFunc{"VolumeRestrictions": pv.volumeRestrictions, "VolumeBinding": pv.volumeBinding}
		}
		got, fitErr := selectHost(tc.pod, nodes, cs, func(int) int { return 0 })
		if got != tc.want || fitErr != tc.msg {
			t.Errorf("%s: got node %q message %q, want %q %q", tc.name, got, fitErr, tc.want, tc.msg)
		}
	}
}
