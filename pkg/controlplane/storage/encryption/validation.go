package encryption

import (
	"encoding/base64"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Upstream's validation messages (apiserver's validation_encryption.go).
const (
	moreThanOneElementErr    = "more than one provider specified in a single element, should split into different list elements"
	noProviderErr            = "provider does not contain any of the expected providers: KMS, AESGCM, AESCBC, Secretbox, Identity"
	keyLenErrFmt             = "secret is not of the expected length, got %d, expected one of %v"
	atLeastOneRequiredErrFmt = "at least one %s is required"
	mandatoryFieldErrFmt     = "%s is a mandatory field for a %s"
	base64EncodingErr        = "secrets must be base64 encoded"
	eventsGroupErr           = "'*.events.k8s.io' objects are stored using the 'events' API group in etcd. Use 'events' instead in the config file"
	extensionsGroupErr       = "'extensions' group has been removed and cannot be used for encryption"
	starResourceErr          = "use '*.' to encrypt all the resources from core API group or *.* to encrypt all resources"
	overlapErr               = "using overlapping resources such as 'secrets' and '*.' in the same resource list is not allowed as they will be masked"
	nonRESTAPIResourceErr    = "resources which do not have REST API/s cannot be encrypted"
	resourceNameErr          = "resource name should not contain capital letters"
	resourceAcrossGroupErr   = "encrypting the same resource across groups is not supported"
	duplicateResourceErr     = "the same resource cannot be specified multiple times"
)

var (
	aesKeySizes       = []int{16, 24, 32}
	secretboxKeySizes = []int{32}
	anyGroupResource  = schema.GroupResource{Group: "*", Resource: "*"}
)

// Validate checks c as upstream's ValidateEncryptionConfiguration does.
func Validate(c *Configuration) field.ErrorList {
	root := field.NewPath("resources")
	if len(c.Resources) == 0 {
		return field.ErrorList{field.Required(root, fmt.Sprintf(atLeastOneRequiredErrFmt, root))}
	}
	var errs field.ErrorList
	for i, rc := range c.Resources {
		r, p := root.Index(i).Child("resources"), root.Index(i).Child("providers")
		if len(rc.Resources) == 0 {
			errs = append(errs, field.Required(r, fmt.Sprintf(atLeastOneRequiredErrFmt, r)))
		}
		errs = append(errs, validateOverlap(rc.Resources, r)...)
		errs = append(errs, validateResourceNames(rc.Resources, r)...)
		if len(rc.Providers) == 0 {
			errs = append(errs, field.Required(p, fmt.Sprintf(atLeastOneRequiredErrFmt, p)))
		}
		for j, pc := range rc.Providers {
			errs = append(errs, validateProvider(pc, p.Index(j))...)
		}
	}
	return errs
}

func validateProvider(pc ProviderConfiguration, path *field.Path) field.ErrorList {
	found := 0
	for _, set := range []bool{pc.KMS != nil, pc.AESGCM != nil, pc.AESCBC != nil, pc.Secretbox != nil, pc.Identity != nil} {
		if set {
			found++
		}
	}
	switch {
	case found == 0:
		return field.ErrorList{field.Invalid(path, pc, noProviderErr)}
	case found > 1:
		return field.ErrorList{field.Invalid(path, pc, moreThanOneElementErr)}
	case pc.KMS != nil:
		return field.ErrorList{field.NotSupported(path.Child("kms"), pc.KMS.Name, []string{"aescbc", "aesgcm", "secretbox", "identity"})}
	case pc.AESGCM != nil:
		return validateKeys(pc.AESGCM.Keys, path.Child("aesgcm", "keys"), aesKeySizes)
	case pc.AESCBC != nil:
		return validateKeys(pc.AESCBC.Keys, path.Child("aescbc", "keys"), aesKeySizes)
	case pc.Secretbox != nil:
		return validateKeys(pc.Secretbox.Keys, path.Child("secretbox", "keys"), secretboxKeySizes)
	}
	return nil
}

func validateKeys(keys []Key, path *field.Path, sizes []int) field.ErrorList {
	if len(keys) == 0 {
		return field.ErrorList{field.Required(path, fmt.Sprintf(atLeastOneRequiredErrFmt, "keys"))}
	}
	var errs field.ErrorList
	for i, k := range keys {
		errs = append(errs, validateKey(k, path.Index(i), sizes)...)
	}
	return errs
}

func validateKey(k Key, path *field.Path, sizes []int) field.ErrorList {
	var errs field.ErrorList
	if k.Name == "" {
		errs = append(errs, field.Required(path.Child("name"), fmt.Sprintf(mandatoryFieldErrFmt, "name", "key")))
	}
	if k.Secret == "" {
		return append(errs, field.Required(path.Child("secret"), fmt.Sprintf(mandatoryFieldErrFmt, "secret", "key")))
	}
	secret, err := base64.StdEncoding.DecodeString(k.Secret)
	if err != nil {
		return append(errs, field.Invalid(path.Child("secret"), "REDACTED", base64EncodingErr))
	}
	for _, n := range sizes {
		if len(secret) == n {
			return errs
		}
	}
	return append(errs, field.Invalid(path.Child("secret"), "REDACTED", fmt.Sprintf(keyLenErrFmt, len(secret), sizes)))
}

// validateOverlap refuses duplicates and wildcards that mask a sibling.
func validateOverlap(resources []string, path *field.Path) field.ErrorList {
	var duplicate, overlap bool
	for i, a := range resources {
		ga := schema.ParseGroupResource(a)
		for j, b := range resources {
			gb := schema.ParseGroupResource(b)
			switch {
			case i == j:
			case ga == gb && !duplicate: // a second duplicate pair counts as overlap, as upstream
				duplicate = true
			case ga == anyGroupResource:
				overlap = true
			case ga.Group == gb.Group && (ga.Resource == "*" || gb.Resource == "*"):
				overlap = true
			}
		}
	}
	var errs field.ErrorList
	if duplicate {
		errs = append(errs, field.Invalid(path, resources, duplicateResourceErr))
	}
	if overlap {
		errs = append(errs, field.Invalid(path, resources, overlapErr))
	}
	return errs
}

func validateResourceNames(resources []string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, res := range resources {
		if msg := resourceNameProblem(res); msg != "" {
			errs = append(errs, field.Invalid(path.Index(i), res, msg))
		}
	}
	return errs
}

func resourceNameProblem(res string) string {
	gr := schema.ParseGroupResource(res)
	switch {
	case strings.ToLower(res) != res:
		return resourceNameErr
	case res == "*":
		return starResourceErr
	case res == "apiserveripinfo" || res == "serviceipallocations" || res == "servicenodeportallocations":
		return nonRESTAPIResourceErr
	case gr.Group == "events.k8s.io":
		return eventsGroupErr
	case gr.Group == "extensions":
		return extensionsGroupErr
	case gr.Group == "*" && gr.Resource != "*":
		return resourceAcrossGroupErr
	}
	return ""
}
