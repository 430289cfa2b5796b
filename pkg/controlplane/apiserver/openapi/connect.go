package openapi

import (
	"net/http"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nodeagent/nodeagent/pkg/controlplane/registry"
)

// The connect subresources' query parameters, as upstream describes them
// (descriptions abridged where long).
var (
	paramStdin     = queryParam("stdin", "boolean", "Redirect the standard input stream of the pod for this call. Defaults to false.")
	paramStdout    = queryParam("stdout", "boolean", "Redirect the standard output stream of the pod for this call.")
	paramStderr    = queryParam("stderr", "boolean", "Redirect the standard error stream of the pod for this call.")
	paramTTY       = queryParam("tty", "boolean", "TTY if true indicates that a tty will be allocated for the exec call. Defaults to false.")
	connectQueries = map[string][]oaParam{
		"exec": {
			queryParam("command", "string", "Command is the remote command to execute. argv array. Not executed within a shell."),
			queryParam("container", "string", "Container in which to execute the command. Defaults to only container if there is only one container in the pod."),
			paramStderr, paramStdin, paramStdout, paramTTY,
		},
		"attach": {
			queryParam("container", "string", "The container in which to execute the command. Defaults to only container if there is only one container in the pod."),
			paramStderr, paramStdin, paramStdout, paramTTY,
		},
		"portforward": {queryParam("ports", "integer", "List of ports to forward Required when using WebSockets")},
		"proxy":       {queryParam("path", "string", "Path is the URL path to use for the current proxy request.")},
	}
	logParams = []oaParam{
		queryParam("container", "string", "The container for which to stream logs. Defaults to only container if there is one container in the pod."),
		queryParam("follow", "boolean", "Follow the log stream of the pod. Defaults to false."),
		queryParam("insecureSkipTLSVerifyBackend", "boolean", "insecureSkipTLSVerifyBackend indicates that the apiserver should not confirm the validity of the serving certificate of the backend it is connecting to."),
		queryParam("limitBytes", "integer", "If set, the number of bytes to read from the server before terminating the log output."),
		paramPretty,
		queryParam("previous", "boolean", "Return previous terminated container logs. Defaults to false."),
		queryParam("sinceSeconds", "integer", "A relative time in seconds before the current time from which to show logs."),
		queryParam("stream", "string", "Specify which container log stream to return to the client. Acceptable values are \"All\", \"Stdout\" and \"Stderr\". If not specified, \"All\" is used."),
		queryParam("tailLines", "integer", "If set, the number of lines from the end of the logs to show."),
		queryParam("timestamps", "boolean", "If true, add an RFC3339 or RFC3339Nano timestamp at the beginning of every line of log output. Defaults to false."),
	}
	// connectMethods are the methods each connect subresource serves.
	connectMethods = map[string][]string{
		"exec":        {http.MethodGet, http.MethodPost},
		"attach":      {http.MethodGet, http.MethodPost},
		"portforward": {http.MethodGet, http.MethodPost},
		"proxy":       {http.MethodDelete, http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodPatch, http.MethodPost, http.MethodPut},
	}
	// connectKinds are the options kinds upstream names the operations by.
	connectKinds = map[string]string{"exec": "PodExecOptions", "attach": "PodAttachOptions", "portforward": "PodPortForwardOptions"}
)

// connectPaths describes pods/log and the connect subresources (exec,
// attach, portforward, proxy and proxy/{path}) as upstream does: their
// answers are streams, described as strings. collection is the
// resource's collection path.
func connectPaths(res *registry.Resource, sub, collection string) []*oaPath {
	gv := res.GVK.GroupVersion()
	idGV, tag := groupNames(gv)
	ns := ""
	var nsParams []oaParam
	if res.Namespaced {
		ns = "Namespaced"
		nsParams = []oaParam{{Name: "namespace", In: "path", Type: "string", Desc: "object name and auth scope, such as for teams and projects", Required: true, Unique: true}}
	}
	if sub == "log" {
		op := &oaOp{ID: "read" + idGV + ns + res.GVK.Kind + "Log", Desc: "read log of the specified " + res.GVK.Kind, Action: "get",
			GVK: res.GVK, Tag: tag, Produces: []string{"text/plain", "application/json", "application/yaml", "application/vnd.kubernetes.protobuf"}}
		params := append(append([]oaParam{nameParam(res.GVK.Kind)}, nsParams...), logParams...)
		return []*oaPath{{Path: collection + "/{name}/log", GV: gvPath(gv), Params: sortParams(params), Ops: map[string]*oaOp{"get": op}}}
	}
	methods, ok := connectMethods[sub]
	if !ok {
		return nil
	}
	kind := connectKinds[sub]
	if sub == "proxy" {
		kind = res.GVK.Kind + "ProxyOptions"
	}
	base := &oaPath{Path: collection + "/{name}/" + sub, GV: gvPath(gv),
		Params: sortParams(append(append([]oaParam{nameParam(kind)}, nsParams...), connectQueries[sub]...)), Ops: map[string]*oaOp{}}
	out := []*oaPath{base}
	var withPath *oaPath
	if sub == "proxy" {
		pathParam := oaParam{Name: "path", In: "path", Type: "string", Desc: "path to the resource", Required: true, Unique: true}
		withPath = &oaPath{Path: base.Path + "/{path}", GV: base.GV, Params: sortParams(append(append([]oaParam{nameParam(kind)}, nsParams...), pathParam)), Ops: map[string]*oaOp{}}
		out = append(out, withPath)
	}
	for _, m := range methods {
		verb := upperFirst(strings.ToLower(m))
		op := func(suffix string) *oaOp {
			return &oaOp{ID: "connect" + idGV + verb + ns + res.GVK.Kind + upperFirst(sub) + suffix,
				Desc: "connect " + m + " requests to " + sub + " of " + res.GVK.Kind, Action: "connect",
				GVK: schema.GroupVersionKind{Version: gv.Version, Group: gv.Group, Kind: kind}, Tag: tag, Produces: []string{"*/*"}}
		}
		base.Ops[strings.ToLower(m)] = op("")
		if withPath != nil {
			withPath.Ops[strings.ToLower(m)] = op("WithPath")
		}
	}
	return out
}

func nameParam(kind string) oaParam {
	return oaParam{Name: "name", In: "path", Type: "string", Desc: "name of the " + kind, Required: true, Unique: true}
}

// sortParams orders parameters by name, as upstream's documents list them.
func sortParams(p []oaParam) []oaParam {
	sort.SliceStable(p, func(i, j int) bool { return p[i].Name < p[j].Name })
	return p
}
