package criconfig

import "strings"

// expand replaces $(VAR) references the way the kubelet does: a defined
// variable is substituted, an undefined one is left as written, and $$
// escapes a dollar sign.
func expand(input string, lookup func(string) (string, bool)) string {
	if !strings.Contains(input, "$") {
		return input
	}
	var b strings.Builder
	for i := 0; i < len(input); i++ {
		if input[i] != '$' || i+1 >= len(input) {
			b.WriteByte(input[i])
			continue
		}
		switch input[i+1] {
		case '$':
			b.WriteByte('$')
			i++
			continue
		case '(':
			end := strings.IndexByte(input[i+2:], ')')
			if end < 0 {
				break
			}
			name := input[i+2 : i+2+end]
			if v, ok := lookup(name); ok {
				b.WriteString(v)
			} else {
				b.WriteString("$(" + name + ")")
			}
			i += 2 + end
			continue
		}
		b.WriteByte('$')
	}
	return b.String()
}
