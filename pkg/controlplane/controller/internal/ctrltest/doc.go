// Package ctrltest helps scenario tests run the real controllers against
// client-go's fake clientset.
package ctrltest
