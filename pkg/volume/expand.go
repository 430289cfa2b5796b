package volume

import (
	"sort"
	"strings"
)

// expandVars replaces $(NAME) with mapping(NAME) in the kubelet's syntax:
// "$$" is an escaped "$", and a "$" that starts no complete reference is
// kept as written.
func expandVars(input string, mapping func(string) string) string {
	var b strings.Builder
	for i := 0; i < len(input); i++ {
		if input[i] != '$' || i+1 == len(input) {
			b.WriteByte(input[i])
			continue
		}
		text, isVar, advance := readVarRef(input[i+1:])
		if isVar {
			b.WriteString(mapping(text))
		} else {
			b.WriteString(text)
		}
		i += advance
	}
	return b.String()
}

// readVarRef reads what follows a "$": a reference "(NAME)", an escaped
// "$", or anything else, returned as literal text. advance is how many
// bytes after the "$" were consumed.
func readVarRef(s string) (text string, isVar bool, advance int) {
	switch s[0] {
	case '$':
		return "$", false, 1
	case '(':
		if end := strings.IndexByte(s, ')'); end > 0 {
			return s[1:end], true, end + 1
		}
		return "$(", false, 1 // incomplete reference
	}
	return "$" + s[:1], false, 1
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
