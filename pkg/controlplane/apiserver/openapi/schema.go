package openapi

import (
	"encoding/json"
	"reflect"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// oaSchema is one OpenAPI schema, rendered as v2 (swagger) or v3 JSON by
// render. Ref names a definition (model name, e.g. io.k8s.api.core.v1.Pod).
type oaSchema struct {
	Description          string
	Type                 string
	Format               string
	Ref                  string
	Items                *oaSchema
	AdditionalProperties *oaSchema
	Properties           map[string]*oaSchema
	Required             []string
	OneOf                []string // v3 only: the alternative types (Quantity, IntOrString)
	DefaultObject        bool     // v3 only: "default": {} (non-pointer struct fields)
	Ext                  map[string]interface{}
}

// render turns s into the JSON tree of an OpenAPI v3 (or swagger 2.0) schema.
func (s *oaSchema) render(v3 bool) map[string]interface{} {
	m := map[string]interface{}{}
	if s.Description != "" {
		m["description"] = s.Description
	}
	for k, v := range s.Ext {
		m[k] = v
	}
	if s.Ref != "" {
		switch {
		case !v3:
			m["$ref"] = "#/definitions/" + s.Ref
		case s.Description == "" && !s.DefaultObject:
			m["$ref"] = "#/components/schemas/" + s.Ref
		default:
			// Siblings of $ref are ignored in OpenAPI 3.0; upstream wraps it.
			m["allOf"] = []interface{}{map[string]interface{}{"$ref": "#/components/schemas/" + s.Ref}}
			if s.DefaultObject {
				m["default"] = map[string]interface{}{}
			}
		}
		return m
	}
	if v3 && len(s.OneOf) > 0 {
		var alts []interface{}
		for _, t := range s.OneOf {
			alts = append(alts, map[string]interface{}{"type": t})
		}
		m["oneOf"] = alts
	} else if s.Type != "" {
		m["type"] = s.Type
	}
	if s.Format != "" {
		m["format"] = s.Format
	}
	if s.Items != nil {
		m["items"] = s.Items.render(v3)
	}
	if s.AdditionalProperties != nil {
		m["additionalProperties"] = s.AdditionalProperties.render(v3)
	}
	if len(s.Properties) > 0 {
		props := map[string]interface{}{}
		for k, p := range s.Properties {
			props[k] = p.render(v3)
		}
		m["properties"] = props
	}
	if len(s.Required) > 0 {
		m["required"] = s.Required
	}
	return m
}

// refs calls f with the name of every definition s refers to.
func (s *oaSchema) refs(f func(string)) {
	if s == nil {
		return
	}
	if s.Ref != "" {
		f(s.Ref)
	}
	s.Items.refs(f)
	s.AdditionalProperties.refs(f)
	for _, p := range s.Properties {
		p.refs(f)
	}
}

// Descriptions of the apimachinery types that have no SwaggerDoc, as
// upstream's openapi-gen words them.
var specialDescriptions = map[string]string{
	"io.k8s.apimachinery.pkg.apis.meta.v1.Time":       "Time is a wrapper around time.Time which supports correct marshaling to YAML and JSON.  Wrappers are provided for many of the factory methods that the time package offers.",
	"io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime":  "MicroTime is version of Time with microsecond level precision.",
	"io.k8s.apimachinery.pkg.apis.meta.v1.Duration":   "Duration is a wrapper around time.Duration which supports correct marshaling to YAML and JSON. In particular, it marshals into strings, which can be used as map keys in json.",
	"io.k8s.apimachinery.pkg.util.intstr.IntOrString": "IntOrString is a type that can hold an int32 or a string.  When used in JSON or YAML marshalling and unmarshalling, it produces or consumes the inner type.  This allows you to have, for example, a JSON field that can accept a name or number.",
	"io.k8s.apimachinery.pkg.runtime.RawExtension":    "RawExtension is used to hold extensions in external versions.\n\nTo use this, make a field which has RawExtension as its type in your external, versioned struct, and Object in your internal struct. You also need to register your various plugin types.\n\nSo what happens? Decode first uses json or yaml to unmarshal the serialized data into your external MyAPIObject. That causes the raw JSON to be stored, but not unpacked. The next step is to copy (using pkg/conversion) into the internal struct. The runtime package's DefaultScheme has conversion functions installed which will unpack the JSON stored in RawExtension, turning it into the correct object type, and storing it in the Object. (TODO: In the case where the object is of an unknown type, a runtime.Unknown object will be created and stored.)",
	"io.k8s.apimachinery.pkg.api.resource.Quantity":   "Quantity is a fixed-point representation of a number. It provides convenient marshaling/unmarshaling in JSON and YAML, in addition to String() and AsInt64() accessors.\n\nThe serialization format is:\n\n``` <quantity>        ::= <signedNumber><suffix>\n\n\t(Note that <suffix> may be empty, from the \"\" case in <decimalSI>.)\n\n<digit>           ::= 0 | 1 | ... | 9 <digits>          ::= <digit> | <digit><digits> <number>          ::= <digits> | <digits>.<digits> | <digits>. | .<digits> <sign>            ::= \"+\" | \"-\" <signedNumber>    ::= <number> | <sign><number> <suffix>          ::= <binarySI> | <decimalExponent> | <decimalSI> <binarySI>        ::= Ki | Mi | Gi | Ti | Pi | Ei\n\n\t(International System of units; See: http://physics.nist.gov/cuu/Units/binary.html)\n\n<decimalSI>       ::= m | \"\" | k | M | G | T | P | E\n\n\t(Note that 1024 = 1Ki but 1000 = 1k; I didn't choose the capitalization.)\n\n<decimalExponent> ::= \"e\" <signedNumber> | \"E\" <signedNumber> ```\n\nNo matter which of the three exponent forms is used, no quantity may represent a number greater than 2^63-1 in magnitude, nor may it have more than 3 decimal places. Numbers larger or more precise will be capped or rounded up. (E.g.: 0.1m will rounded up to 1m.) This may be extended in the future if we require larger or smaller quantities.\n\nWhen a Quantity is parsed from a string, it will remember the type of suffix it had, and will use the same type again when it is serialized.\n\nBefore serializing, Quantity will be put in \"canonical form\". This means that Exponent/suffix will be adjusted up or down (with a corresponding increase or decrease in Mantissa) such that:\n\n- No precision is lost - No fractional digits will be emitted - The exponent (or suffix) is as large as possible.\n\nThe sign will be omitted unless the number is negative.\n\nExamples:\n\n- 1.5 will be serialized as \"1500m\" - 1.5Gi will be serialized as \"1536Mi\"\n\nNote that the quantity will NEVER be internally represented by a floating point number. That is the whole point of this exercise.\n\nNon-canonical values will still parse as long as they are well formed, but will be re-emitted in their canonical form. (So always use canonical form, or don't use kubectl.)\n\nThis format is intended to make it difficult to use these numbers without writing some sort of special handling code in the hopes that will cause implementors to also use a fixed point implementation.",
}

// optionalFields are fields without omitempty that upstream marks
// +optional (so not required); reflection cannot see the comment.
var optionalFields = map[string]bool{
	"io.k8s.api.core.v1.TypedLocalObjectReference.apiGroup":              true,
	"io.k8s.api.core.v1.TypedObjectReference.apiGroup":                   true,
	"io.k8s.api.core.v1.AzureFilePersistentVolumeSource.secretNamespace": true,
	"io.k8s.api.core.v1.Event.reportingComponent":                        true,
	"io.k8s.api.core.v1.Event.reportingInstance":                         true,
	"io.k8s.api.events.v1.Event.metadata":                                true,
	"io.k8s.api.authentication.v1.TokenRequestSpec.expirationSeconds":    true,
	"io.k8s.api.authentication.v1.TokenRequestSpec.boundObjectRef":       true,
}

type (
	modelNamer   interface{ OpenAPIModelName() string }
	swaggerDocer interface{ SwaggerDoc() map[string]string }
	schemaTyper  interface{ OpenAPISchemaType() []string }
	schemaFormer interface{ OpenAPISchemaFormat() string }
	v3OneOfTyper interface{ OpenAPIV3OneOfTypes() []string }
)

var (
	marshalerType = reflect.TypeOf((*json.Marshaler)(nil)).Elem()
	bytesType     = reflect.TypeOf([]byte(nil))
)

// schemaBuilder derives definitions from Go types by reflection, the way
// upstream's openapi-gen does from the same types' source.
type schemaBuilder struct {
	defs  map[string]*oaSchema
	names map[reflect.Type]string
}

func newSchemaBuilder() *schemaBuilder {
	return &schemaBuilder{defs: map[string]*oaSchema{}, names: map[reflect.Type]string{}}
}

// modelName is upstream's definition name for a named Go type: its
// OpenAPIModelName, or the package path with the domain reversed
// (k8s.io/api/core/v1.Pod → io.k8s.api.core.v1.Pod).
func modelName(t reflect.Type) string {
	if n, ok := reflect.Zero(t).Interface().(modelNamer); ok {
		return n.OpenAPIModelName()
	}
	parts := strings.Split(t.PkgPath(), "/")
	domain := strings.Split(parts[0], ".")
	for i, j := 0, len(domain)-1; i < j; i, j = i+1, j-1 {
		domain[i], domain[j] = domain[j], domain[i]
	}
	parts[0] = strings.Join(domain, ".")
	return strings.ReplaceAll(strings.Join(parts, "."), "-", "_") + "." + t.Name()
}

// define makes sure the struct (or special) type t has a definition and
// returns its name.
func (b *schemaBuilder) define(t reflect.Type) string {
	if n, ok := b.names[t]; ok {
		return n
	}
	name := modelName(t)
	b.names[t] = name
	def := &oaSchema{Description: specialDescriptions[name]}
	b.defs[name] = def
	zero := reflect.Zero(t).Interface()
	if d, ok := zero.(swaggerDocer); ok && d.SwaggerDoc()[""] != "" {
		def.Description = d.SwaggerDoc()[""]
	}
	if st, ok := zero.(schemaTyper); ok {
		def.Type = st.OpenAPISchemaType()[0]
		if f, ok := zero.(schemaFormer); ok {
			def.Format = f.OpenAPISchemaFormat()
		}
		if o, ok := zero.(v3OneOfTyper); ok {
			def.OneOf = o.OpenAPIV3OneOfTypes()
		}
		if def.Format == "int-or-string" {
			def.Ext = map[string]interface{}{"x-kubernetes-int-or-string": true}
		}
		return name
	}
	if t.Implements(marshalerType) || reflect.PointerTo(t).Implements(marshalerType) {
		// Custom JSON (RawExtension, FieldsV1): an opaque object.
		def.Type = "object"
		return name
	}
	def.Type = "object"
	def.Properties = map[string]*oaSchema{}
	b.addFields(def, t)
	return name
}

// addFields adds t's JSON fields (and those of inlined embedded structs)
// to def.
func (b *schemaBuilder) addFields(def *oaSchema, t reflect.Type) {
	var docs map[string]string
	if d, ok := reflect.Zero(t).Interface().(swaggerDocer); ok {
		docs = d.SwaggerDoc()
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		opts := strings.Split(tag, ",")
		name := opts[0]
		if f.Anonymous && (name == "" || hasOpt(opts, "inline")) {
			et := f.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				b.addFields(def, et)
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		ps := b.fieldSchema(f.Type)
		ps.Description = docs[name]
		if ps.Ref != "" && f.Type.Kind() == reflect.Struct && b.defs[ps.Ref].Type == "object" {
			ps.DefaultObject = true
		}
		if v := f.Tag.Get("patchStrategy"); v != "" {
			setExt(ps, "x-kubernetes-patch-strategy", v)
		}
		if v := f.Tag.Get("patchMergeKey"); v != "" {
			setExt(ps, "x-kubernetes-patch-merge-key", v)
		}
		def.Properties[name] = ps
		// openapi-gen: required unless omitempty or marked +optional.
		if !hasOpt(opts, "omitempty") && !hasOpt(opts, "omitzero") && !optionalFields[modelName(t)+"."+name] {
			def.Required = append(def.Required, name)
		}
	}
	sort.Strings(def.Required)
}

func setExt(s *oaSchema, k string, v interface{}) {
	if s.Ext == nil {
		s.Ext = map[string]interface{}{}
	}
	s.Ext[k] = v
}

func hasOpt(opts []string, o string) bool {
	for _, x := range opts[1:] {
		if x == o {
			return true
		}
	}
	return false
}

// fieldSchema is the schema of a value of type t; structs become refs.
func (b *schemaBuilder) fieldSchema(t reflect.Type) *oaSchema {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == bytesType || (t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8) {
		return &oaSchema{Type: "string", Format: "byte"}
	}
	switch t.Kind() {
	case reflect.Struct:
		name := b.define(t)
		return &oaSchema{Ref: name}
	case reflect.String:
		return &oaSchema{Type: "string"}
	case reflect.Bool:
		return &oaSchema{Type: "boolean"}
	case reflect.Int32, reflect.Int, reflect.Int16, reflect.Int8, reflect.Uint16, reflect.Uint8:
		return &oaSchema{Type: "integer", Format: "int32"}
	case reflect.Int64, reflect.Uint32, reflect.Uint64, reflect.Uint:
		return &oaSchema{Type: "integer", Format: "int64"}
	case reflect.Float32:
		return &oaSchema{Type: "number", Format: "float"}
	case reflect.Float64:
		return &oaSchema{Type: "number", Format: "double"}
	case reflect.Slice, reflect.Array:
		items := b.fieldSchema(t.Elem())
		if items.Ref != "" && t.Elem().Kind() == reflect.Struct && b.defs[items.Ref].Type == "object" {
			items.DefaultObject = true
		}
		return &oaSchema{Type: "array", Items: items}
	case reflect.Map:
		return &oaSchema{Type: "object", AdditionalProperties: b.fieldSchema(t.Elem())}
	}
	// Interfaces and anything else: free-form object.
	return &oaSchema{Type: "object"}
}

// setGVK records the kinds a definition is the body of.
func (b *schemaBuilder) setGVK(name string, gvks ...schema.GroupVersionKind) {
	def := b.defs[name]
	if def == nil {
		return
	}
	var list []interface{}
	if old, ok := def.Ext["x-kubernetes-group-version-kind"].([]interface{}); ok {
		list = old
	}
next:
	for _, gvk := range gvks {
		for _, x := range list {
			if m := x.(map[string]interface{}); m["group"] == gvk.Group && m["version"] == gvk.Version && m["kind"] == gvk.Kind {
				continue next
			}
		}
		list = append(list, map[string]interface{}{"group": gvk.Group, "version": gvk.Version, "kind": gvk.Kind})
	}
	setExt(def, "x-kubernetes-group-version-kind", list)
}

// closure returns the names of roots and every definition they reach.
func (b *schemaBuilder) closure(roots []string) map[string]*oaSchema {
	out := map[string]*oaSchema{}
	var visit func(string)
	visit = func(n string) {
		if _, ok := out[n]; ok || b.defs[n] == nil {
			return
		}
		out[n] = b.defs[n]
		b.defs[n].refs(visit)
	}
	for _, r := range roots {
		visit(r)
	}
	return out
}
