package registry

import (
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/nodeagent/nodeagent/pkg/podspec"
)

// Small validation helpers shared by the resources.

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// configKey checks a configmap or secret key.
func configKey(k string, p *field.Path) field.ErrorList {
	return podspec.InvalidAll(p, k, validation.IsConfigMapKey(k))
}

func qualifiedName(v string, p *field.Path) field.ErrorList {
	return podspec.InvalidAll(p, v, validation.IsQualifiedName(v))
}

func dnsLabel(v string, p *field.Path) field.ErrorList {
	return podspec.InvalidAll(p, v, validation.IsDNS1123Label(v))
}

func dnsSubdomain(v string, p *field.Path) field.ErrorList {
	return podspec.InvalidAll(p, v, validation.IsDNS1123Subdomain(v))
}

func portNum(port int32, p *field.Path) field.ErrorList {
	return podspec.InvalidAll(p, port, validation.IsValidPortNum(int(port)))
}

// portNumOrName checks a target port: a number in 1-65535 or an IANA name.
func portNumOrName(port intstr.IntOrString, p *field.Path) field.ErrorList {
	if port.Type == intstr.String {
		return podspec.InvalidAll(p, port.StrVal, validation.IsValidPortName(port.StrVal))
	}
	return podspec.InvalidAll(p, port.IntValue(), validation.IsValidPortNum(port.IntValue()))
}

// selectorString prints a label selector, or the conversion error.
func selectorString(s *metav1.LabelSelector) string {
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		return err.Error()
	}
	return sel.String()
}
