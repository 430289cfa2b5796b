package file

import (
	"bytes"
	"crypto/md5" //nolint:gosec // md5 names pods (as the kubelet does); it is not used for security.
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/nodeagent/nodeagent/pkg/podsource"
	"github.com/nodeagent/nodeagent/pkg/podspec"
	"github.com/nodeagent/nodeagent/pkg/podutil"
)

// maxManifestSize mirrors the kubelet's maxConfigLength (10 MiB).
const maxManifestSize = 10 << 20

// document is one YAML document of a manifest file.
type document struct {
	index int    // 1-based position among the file's non-blank documents
	line  int    // 1-based line in the file where the document starts
	data  []byte // raw document text
}

// splitDocuments splits data on lines consisting of "---" (plus optional
// trailing whitespace), like the apimachinery YAMLReader, remembering where
// each document starts. Whitespace-only documents are dropped.
func splitDocuments(data []byte) []document {
	var docs []document
	var cur bytes.Buffer
	start, lineNo := 1, 0
	flush := func(next int) {
		if len(bytes.TrimSpace(cur.Bytes())) > 0 {
			docs = append(docs, document{index: len(docs) + 1, line: start, data: bytes.Clone(cur.Bytes())})
		}
		cur.Reset()
		start = next
	}
	for len(data) > 0 {
		lineNo++
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i+1], data[i+1:]
		} else {
			data = nil
		}
		if bytes.HasPrefix(line, []byte("---")) && len(bytes.TrimSpace(line[3:])) == 0 {
			flush(lineNo + 1)
			continue
		}
		cur.Write(line)
	}
	flush(lineNo + 1)
	return docs
}

var yamlLineRE = regexp.MustCompile(`line (\d+)`)

// toJSON converts one document to JSON. Syntax errors carry the line number
// within the whole file.
func (d document) toJSON() ([]byte, error) {
	trimmed := bytes.TrimSpace(d.data)
	if bytes.HasPrefix(trimmed, []byte("{")) {
		var probe any
		if err := json.Unmarshal(d.data, &probe); err != nil {
			if se, ok := err.(*json.SyntaxError); ok {
				return nil, fmt.Errorf("invalid JSON at line %d: %v", d.line+bytes.Count(d.data[:se.Offset], []byte("\n")), err)
			}
			return nil, fmt.Errorf("invalid JSON: %v", err)
		}
		return trimmed, nil
	}
	out, err := yaml.YAMLToJSON(d.data)
	if err != nil {
		msg := yamlLineRE.ReplaceAllStringFunc(err.Error(), func(m string) string {
			n, _ := strconv.Atoi(m[len("line "):])
			return "line " + strconv.Itoa(d.line+n-1)
		})
		return nil, fmt.Errorf("invalid YAML: %s", msg)
	}
	return out, nil
}

// decodePod decodes one document. It returns (nil, nil) for an empty
// document (comments only or null). Decoding is lenient about unknown
// fields, like the kubelet, but field names are case-sensitive.
func (d document) decodePod() (*v1.Pod, error) {
	js, err := d.toJSON()
	if err != nil {
		return nil, err
	}
	if t := bytes.TrimSpace(js); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return nil, nil
	}
	var tm metav1.TypeMeta
	if err := utiljson.Unmarshal(js, &tm); err != nil {
		return nil, fmt.Errorf("not a Kubernetes object: %v", err)
	}
	if tm.APIVersion != "v1" || tm.Kind != "Pod" {
		return nil, fmt.Errorf("unsupported object apiVersion=%q kind=%q: only apiVersion v1, kind Pod is allowed", tm.APIVersion, tm.Kind)
	}
	pod := &v1.Pod{}
	if err := utiljson.Unmarshal(js, pod); err != nil {
		return nil, fmt.Errorf("cannot decode Pod: %v", err)
	}
	return pod, nil
}

// podUID returns the stable UID of a static pod: it depends on the node, the
// manifest's path and the pod's namespace/name, never on the content.
func podUID(nodeName, path, namespace, name string) types.UID {
	sum := md5.Sum([]byte("host:" + nodeName + "file:" + path + "pod:" + namespace + "/" + name)) //nolint:gosec
	return types.UID(hex.EncodeToString(sum[:]))
}

// contentHash hashes the pod's JSON encoding.
func contentHash(pod *v1.Pod) string {
	data, err := json.Marshal(pod)
	if err != nil { // cannot happen for a v1.Pod
		panic(fmt.Sprintf("staticpod: marshal pod: %v", err))
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// generatePodName is the kubelet's static pod naming: <name>-<lowercased node>.
func generatePodName(name, nodeName string) string {
	return name + "-" + strings.ToLower(nodeName)
}

// applyDefaults mirrors the kubelet's applyDefaults for file sources (with a
// content-independent UID), then applies podspec defaults and validation.
func applyDefaults(pod *v1.Pod, path, nodeName string) field.ErrorList {
	var errs field.ErrorList
	if pod.Name == "" {
		errs = append(errs, field.Required(field.NewPath("metadata", "name"), "static pods need a name"))
	}
	if pod.Namespace == "" {
		pod.Namespace = metav1.NamespaceDefault
	}
	pod.UID = podUID(nodeName, path, pod.Namespace, pod.Name)
	pod.Name = generatePodName(pod.Name, nodeName)
	pod.Spec.NodeName = nodeName
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	delete(pod.Annotations, podsource.ContentHashAnnotation)
	delete(pod.Annotations, podutil.ConfigSeenAnnotation)
	pod.Annotations[podutil.ConfigSourceAnnotation] = podutil.SourceFile
	pod.Annotations[podutil.ConfigHashAnnotation] = string(pod.UID)
	addNoExecuteToleration(pod)
	pod.Status = v1.PodStatus{Phase: v1.PodPending}
	podspec.SetDefaults(pod)
	errs = append(errs, podspec.Validate(pod)...)
	pod.Annotations[podsource.ContentHashAnnotation] = contentHash(pod)
	return errs
}

// addNoExecuteToleration adds (or replaces a matching one with) the
// toleration the kubelet gives every static pod so that NoExecute taints do
// not evict it.
func addNoExecuteToleration(pod *v1.Pod) {
	tol := v1.Toleration{Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}
	for i := range pod.Spec.Tolerations {
		if pod.Spec.Tolerations[i].MatchToleration(&tol) {
			pod.Spec.Tolerations[i] = tol
			return
		}
	}
	pod.Spec.Tolerations = append(pod.Spec.Tolerations, tol)
}

// parseManifest decodes, defaults and validates every pod of one file. Any
// error rejects the whole file; the message names the document and line.
func parseManifest(path, nodeName string, data []byte) ([]*v1.Pod, error) {
	if len(data) > maxManifestSize {
		return nil, fmt.Errorf("%s: file is larger than %d bytes", path, maxManifestSize)
	}
	var pods []*v1.Pod
	for _, doc := range splitDocuments(data) {
		pod, err := doc.decodePod()
		if err != nil {
			return nil, fmt.Errorf("%s: document %d (line %d): %v", path, doc.index, doc.line, err)
		}
		if pod == nil {
			continue
		}
		origName := pod.Name
		if errs := applyDefaults(pod, path, nodeName); len(errs) > 0 {
			return nil, fmt.Errorf("%s: document %d (line %d): pod %q is invalid: %s",
				path, doc.index, doc.line, origName, podspec.FormatErrors(errs))
		}
		pods = append(pods, pod)
	}
	return pods, nil
}
