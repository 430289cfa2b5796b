package criconfig

import (
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// apiServerService is the default namespace's service whose variables
// every container gets, whatever enableServiceLinks says (the kubelet's
// masterServices): rest.InClusterConfig reads KUBERNETES_SERVICE_HOST and
// KUBERNETES_SERVICE_PORT.
const apiServerService = "kubernetes"

// ServiceEnv is the service environment a container of a pod in ns is
// started with, from every service the agent knows (the kubelet's
// getServiceEnvVarMap and envvars.FromServices): the default namespace's
// kubernetes service always, and with enableServiceLinks every service of
// ns; a service of ns wins over default's of the same name. Services
// without a cluster IP (headless, ExternalName) give none.
func ServiceEnv(ns string, enableServiceLinks bool, services []*v1.Service) map[string]string {
	chosen := map[string]*v1.Service{}
	for _, s := range services {
		if !hasClusterIP(s) {
			continue
		}
		switch {
		case s.Namespace == metav1.NamespaceDefault && s.Name == apiServerService:
			if _, ok := chosen[s.Name]; !ok {
				chosen[s.Name] = s
			}
		case s.Namespace == ns && enableServiceLinks:
			chosen[s.Name] = s
		}
	}
	env := map[string]string{}
	for _, s := range chosen {
		addServiceVars(env, s)
	}
	return env
}

func hasClusterIP(s *v1.Service) bool {
	return s.Spec.ClusterIP != "" && s.Spec.ClusterIP != v1.ClusterIPNone
}

// addServiceVars sets one service's variables: <SVC>_SERVICE_HOST,
// <SVC>_SERVICE_PORT (the first port), <SVC>_SERVICE_PORT_<NAME> for each
// named port, and the docker-link ones.
func addServiceVars(env map[string]string, s *v1.Service) {
	if len(s.Spec.Ports) == 0 {
		return // validation requires a port for a service with a cluster IP
	}
	prefix := envVarName(s.Name)
	ip := s.Spec.ClusterIP
	env[prefix+"_SERVICE_HOST"] = ip
	env[prefix+"_SERVICE_PORT"] = strconv.Itoa(int(s.Spec.Ports[0].Port))
	for i, p := range s.Spec.Ports {
		port := strconv.Itoa(int(p.Port))
		if p.Name != "" {
			env[prefix+"_SERVICE_PORT_"+envVarName(p.Name)] = port
		}
		proto := string(p.Protocol)
		if proto == "" {
			proto = string(v1.ProtocolTCP)
		}
		url := strings.ToLower(proto) + "://" + net.JoinHostPort(ip, port)
		if i == 0 {
			env[prefix+"_PORT"] = url
		}
		link := prefix + "_PORT_" + port + "_" + strings.ToUpper(proto)
		env[link] = url
		env[link+"_PROTO"] = strings.ToLower(proto)
		env[link+"_PORT"] = port
		env[link+"_ADDR"] = ip
	}
}

// envVarName is a service or port name as a variable name: upper case,
// '-' as '_'.
func envVarName(s string) string {
	return strings.ToUpper(strings.ReplaceAll(s, "-", "_"))
}

// serviceLinks is the pod's enableServiceLinks; unset (a pod not
// defaulted by the API server) is the API's default, true.
func serviceLinks(pod *v1.Pod) bool {
	if pod.Spec.EnableServiceLinks == nil {
		return v1.DefaultEnableServiceLinks
	}
	return *pod.Spec.EnableServiceLinks
}

// lookupEnv is $(VAR) expansion's source in env values: the variables
// defined so far, then the service variables.
func lookupEnv(defined, services map[string]string, k string) (string, bool) {
	if v, ok := defined[k]; ok {
		return v, true
	}
	v, ok := services[k]
	return v, ok
}

// appendServiceEnv adds the service variables the container's env and
// envFrom did not define (theirs win), in name order.
func appendServiceEnv(out []*criv1.KeyValue, services, defined map[string]string) []*criv1.KeyValue {
	for _, k := range slices.Sorted(maps.Keys(services)) { // the same order on every start
		if _, ok := defined[k]; !ok {
			out = append(out, &criv1.KeyValue{Key: k, Value: []byte(services[k])})
		}
	}
	return out
}
