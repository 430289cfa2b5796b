// Package responsewriters writes the API server's answers: JSON bodies and
// errors as upstream's metav1.Status.
package responsewriters
